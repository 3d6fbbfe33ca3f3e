"""The case decisions the live effects and the dry run share (issue 17 item 6), as tables: one function
decides, so the dry run cannot answer differently from the claim and the close."""

from __future__ import annotations

import pytest

from mailnode.butler.effects import assign_reason, close_reason
from mailnode.mail.cases import claim_refusal, close_refusal

B = "btl_B"
P = "usr_P"


@pytest.mark.parametrize(("state", "holder", "assignee", "b_may", "a_may", "take", "code", "reason"), [
    ("open", None, B, True, True, False, None, None),
    ("open", None, P, True, True, False, None, None),
    ("open", None, B, False, True, False, "E_MAY_NOT_WORK_CASE", "E_MAY_NOT_WORK_CASE"),
    ("open", None, P, True, False, False, "E_ASSIGNEE_MAY_NOT_WORK_IT", "assignee_may_not_work_it"),
    ("open", None, B, True, False, False, None, None),  # assigning oneself needs only one's own grant
    ("closed", None, B, True, True, False, "E_CASE_CLOSED", "case_closed"),
    ("closed", P, B, False, False, False, "E_MAY_NOT_WORK_CASE", "E_MAY_NOT_WORK_CASE"),  # authority first
    ("open", P, B, True, True, False, "E_CASE_HELD", "case_held"),
    ("open", B, B, True, True, False, "E_CASE_HELD", "case_held"),
    ("open", P, B, True, True, True, None, None),
    ("closed", P, B, True, True, True, "E_CASE_CLOSED", "case_closed"),
])
def test_the_claim_decision(state: str, holder: str | None, assignee: str, b_may: bool, a_may: bool, take: bool,
                            code: str | None, reason: str | None) -> None:
    got = claim_refusal(state=state, holder_id=holder, principal_id=B, assignee_id=assignee,
                        principal_may_work=b_may, assignee_may_work=a_may, take=take)
    assert got == code
    assert assign_reason(got) == reason


@pytest.mark.parametrize(("state", "holder", "code", "reason"), [
    ("open", B, None, None),
    ("open", None, "E_NOT_YOUR_CASE", "case_not_held_by_butler"),
    ("open", P, "E_NOT_YOUR_CASE", "case_not_held_by_butler"),
    ("closed", B, "E_CASE_CLOSED", "case_closed"),
    ("closed", P, "E_CASE_CLOSED", "case_closed"),
])
def test_the_close_decision(state: str, holder: str | None, code: str | None, reason: str | None) -> None:
    assert close_refusal(state=state, holder_id=holder, principal_id=B) == code
    assert close_reason(state=state, holder_id=holder, butler_id=B) == reason
