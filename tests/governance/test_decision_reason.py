"""A decision's reason (``approvals.check_reason``) as a table: what is kept, and what is refused and why."""

from __future__ import annotations

import pytest

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.governance.approvals import check_reason

LIMIT = budgets.APPROVAL_DECISION_REASON_MAX_CHARS


@pytest.mark.parametrize(("given", "kept"), [
    (None, None),
    ("", None),
    ("   ", None),
    (" Invoice checked. ", "Invoice checked."),
    ("Two lines\nand a\ttab", "Two lines\nand a\ttab"),
    ("x" * LIMIT, "x" * LIMIT),
    ("  " + "x" * LIMIT + "  ", "x" * LIMIT),  # the limit counts what is kept
])
def test_a_reason_is_kept_stripped(given: object, kept: str | None) -> None:
    assert check_reason(given) == kept


@pytest.mark.parametrize(("given", "why"), [
    (5, "must be text"),
    (["a"], "must be text"),
    ("x" * (LIMIT + 1), f"{LIMIT + 1} characters long"),
    ("bell\x07", "control characters"),
    ("del\x7f", "control characters"),
])
def test_a_bad_reason_is_refused(given: object, why: str) -> None:
    with pytest.raises(MailnodeError) as err:
        check_reason(given)
    assert (err.value.code, err.value.status) == ("E_APPROVAL_REASON_INVALID", 422) and why in err.value.what
