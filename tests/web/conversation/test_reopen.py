"""``POST /api/cases/{id}/reopen`` (issue 16): a closed case opens again, held by whoever reopened it."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from mailnode.mail.cases import reopen_refusal
from mailnode.schema.mail_messages import cases
from tests.conftest import bearer
from tests.outbound.db.conftest import deliver, inbound


@pytest.mark.parametrize(("state", "may_work", "newer", "code"), [
    ("closed", True, None, None),
    ("closed", False, None, "E_MAY_NOT_WORK_CASE"),
    ("open", True, None, "E_CASE_OPEN"),
    ("open", False, None, "E_MAY_NOT_WORK_CASE"),
    ("closed", True, "cas_2", "E_CASE_SUPERSEDED"),
    ("limbo", True, None, "E_CASE_OPEN"),
])
def test_reopen_refusals(state: str, may_work: bool, newer: str | None, code: str | None) -> None:
    assert reopen_refusal(state=state, may_work=may_work, newer_open_case_id=newer) == code


def _closed_case(api: Any, node: Any, installed: Any, listener: Any) -> str:
    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    with node.read() as conn:
        case_id = str(conn.execute(select(cases.c.id)).scalar_one())
    h = bearer(installed.token)
    assert api.post(f"/api/cases/{case_id}/claim", headers=h).status_code == 200
    assert api.post(f"/api/cases/{case_id}/close", headers=h).status_code == 200
    return case_id


def test_a_closed_case_reopens_held_by_the_reopener_and_audited(api: Any, node: Any, installed: Any,
                                                                 listener: Any) -> None:
    case_id = _closed_case(api, node, installed, listener)
    r = api.post(f"/api/cases/{case_id}/reopen", headers=bearer(installed.token))
    assert r.status_code == 200, r.text
    case = r.json()["case"]
    assert (case["state"], case["assignee_id"], case["closed_at"]) == ("open", installed.user_id, None)
    audit = api.get("/api/audit?action=case.reopened", headers=bearer(installed.token))
    assert [e["subject"] for e in audit.json()["entries"] if e["action"] == "case.reopened"] == [case_id]
    again = api.post(f"/api/cases/{case_id}/reopen", headers=bearer(installed.token))
    assert again.status_code == 409 and again.json()["error"] == "E_CASE_OPEN"


def test_a_case_superseded_by_a_newer_open_one_is_not_reopened(api: Any, node: Any, installed: Any,
                                                               listener: Any) -> None:
    case_id = _closed_case(api, node, installed, listener)
    # A follow-up in the same conversation opens a new case.
    deliver(listener, inbound(message_id="<q2@remote.test>", In_Reply_To="<q1@remote.test>"),
            "customer@remote.test", ["support@example.test"])
    with node.read() as conn:
        newer = str(conn.execute(select(cases.c.id).where(cases.c.state == "open")).scalar_one())
    r = api.post(f"/api/cases/{case_id}/reopen", headers=bearer(installed.token))
    assert r.status_code == 409, r.text
    assert (r.json()["error"], r.json()["detail"]["open_case_id"]) == ("E_CASE_SUPERSEDED", newer)
    assert f"/api/cases/{newer}/claim" in r.json()["fix"]
