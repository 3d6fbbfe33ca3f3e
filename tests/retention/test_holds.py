"""Legal holds through the API: placed by one administrator, lifted only after two other deciders agree,
and a held draft refused ``E_LEGAL_HOLD`` with ``hold.blocked`` audited."""

from __future__ import annotations

from typing import Any

from tests.retention.conftest import Retained


def _place(org: Retained, api: Any, **extra: Any) -> dict[str, Any]:
    r = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "matter_id": "M-7", **extra},
                 headers=org.admin.headers)
    assert r.status_code == 201, r.text
    return dict(r.json()["hold"])


def test_a_hold_is_placed_by_one_administrator_and_listed_only_to_administrators(org: Retained, api: Any) -> None:
    hold = _place(org, api)
    assert hold["in_force"] is True and hold["placed_by"] == org.i.user_id
    listed = api.get("/api/holds", headers=org.admin.headers)
    assert [h["id"] for h in listed.json()["holds"]] == [hold["id"]]
    bob = org.person("bob@example.test", ("send.propose", org.i.mailbox_id))
    assert api.get("/api/holds", headers=bob.headers).json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    refused = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id}, headers=bob.headers)
    assert refused.status_code == 403 and refused.json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    inverted = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "from_date": "2026-02-01",
                                            "to_date": "2026-01-01"}, headers=org.admin.headers)
    assert inverted.status_code == 422 and inverted.json()["error"] == "E_HOLD_WINDOW_INVERTED"
    assert [e["subject"] for e in org.entries("hold.placed")] == [hold["id"]]


def test_a_hold_is_lifted_only_after_two_other_deciders_approve(org: Retained, api: Any) -> None:
    hold = _place(org, api)
    d1 = org.person("d1@example.test", ("approval.decide", org.i.mailbox_id))
    no_reason = api.post(f"/api/holds/{hold['id']}/lift", json={"reason": " "}, headers=org.admin.headers)
    assert no_reason.status_code == 422 and no_reason.json()["error"] == "E_HOLD_LIFT_REASON_REQUIRED"
    short = api.post(f"/api/holds/{hold['id']}/lift", json={"reason": "matter closed"}, headers=org.admin.headers)
    assert short.status_code == 409 and short.json()["error"] == "E_HOLD_LIFT_UNSATISFIABLE"
    d2 = org.person("d2@example.test", ("approval.decide", org.i.mailbox_id))
    asked = api.post(f"/api/holds/{hold['id']}/lift", json={"reason": "matter closed"}, headers=org.admin.headers)
    assert asked.status_code == 202, asked.text
    approval_id = asked.json()["lift"]["approval_id"]
    again = api.post(f"/api/holds/{hold['id']}/lift", json={"reason": "again"}, headers=org.admin.headers)
    assert again.json()["error"] == "E_HOLD_LIFT_PENDING"

    def in_force() -> bool:
        return bool(api.get("/api/holds", headers=org.admin.headers).json()["holds"][0]["in_force"])

    first = api.post(f"/api/approvals/{approval_id}/decide", json={"decision": "approve"}, headers=d1.headers)
    assert first.status_code == 200 and first.json()["decided"]["completed"] is False
    assert in_force()
    second = api.post(f"/api/approvals/{approval_id}/decide", json={"decision": "approve"}, headers=d2.headers)
    assert second.status_code == 200, second.text
    assert second.json()["decided"]["hold_lifted"] is True
    assert not in_force()
    lifted = org.entries("hold.lifted")
    assert [e["subject"] for e in lifted] == [hold["id"]] and lifted[0]["detail"]["reason"] == "matter closed"


def test_the_requester_cannot_decide_their_own_lift(org: Retained, api: Any) -> None:
    hold = _place(org, api)
    org.person("d1@example.test", ("approval.decide", org.i.mailbox_id))
    org.person("d2@example.test", ("approval.decide", org.i.mailbox_id))
    # ``mailnode init`` gave the administrator approval.decide on the mailbox: eligible, but not for their own ask.
    asked = api.post(f"/api/holds/{hold['id']}/lift", json={"reason": "done"}, headers=org.admin.headers)
    approval_id = asked.json()["lift"]["approval_id"]
    own = api.post(f"/api/approvals/{approval_id}/decide", json={"decision": "approve"}, headers=org.admin.headers)
    assert own.status_code == 409 and own.json()["error"] == "E_APPROVER_IS_ACTOR"


def test_deleting_a_held_draft_is_refused_and_audited(org: Retained, api: Any) -> None:
    made = api.post("/api/drafts", json={"mailbox_id": org.i.mailbox_id, "to": ["ann@remote.test"],
                                         "subject": "Evidence", "body": "keep me"}, headers=org.admin.headers)
    assert made.status_code == 201, made.text
    draft_id = made.json()["draft"]["id"]
    hold = _place(org, api)
    refused = api.delete(f"/api/drafts/{draft_id}", headers=org.admin.headers)
    assert refused.status_code == 409 and refused.json()["error"] == "E_LEGAL_HOLD"
    assert api.get(f"/api/drafts/{draft_id}", headers=org.admin.headers).status_code == 200
    blocked = org.entries("hold.blocked")
    assert [(e["subject"], e["outcome"], e["detail"]["hold_ids"]) for e in blocked] == [
        (draft_id, "refused", [hold["id"]])]
    assert org.entries("draft.deleted") == []


def test_a_draft_outside_the_holds_window_is_deleted(org: Retained, api: Any) -> None:
    made = api.post("/api/drafts", json={"mailbox_id": org.i.mailbox_id, "subject": "s", "body": "b"},
                    headers=org.admin.headers)
    draft_id = made.json()["draft"]["id"]
    _place(org, api, to_date="2000-01-01")
    assert api.delete(f"/api/drafts/{draft_id}", headers=org.admin.headers).status_code == 200
    assert org.entries("hold.blocked") == []


def test_deleting_a_held_closed_case_is_refused(org: Retained, api: Any) -> None:
    from mailnode.errors import MailnodeError
    from mailnode.mail import cases
    from mailnode.mail.threading import start_conversation
    from mailnode.retention import holds

    now = org.node.clock.now()
    with org.node.begin() as conn:
        cnv = start_conversation(conn, org.org_id, "s", now)
        cid = cases.open_case(conn, org_id=org.org_id, conversation_id=cnv, mailbox_id=org.i.mailbox_id, at=now)
        cases.claim(conn, org_id=org.org_id, principal_id=org.i.user_id, at=now, case_id=cid)
        cases.close(conn, org_id=org.org_id, principal_id=org.i.user_id, at=now, case_id=cid)
    _place(org, api)
    try:
        with holds.deleting(org.node) as conn:
            cases.remove(conn, org_id=org.org_id, principal_id=org.i.user_id, at=now, case_id=cid)
        raise AssertionError("a held case was deleted")
    except MailnodeError as exc:
        assert exc.code == "E_LEGAL_HOLD"
    assert [e["subject"] for e in org.entries("hold.blocked")] == [cid]


def test_the_approvals_queue_shows_why_a_lift_is_asked_and_which_hold(org: Retained, api: Any) -> None:
    hold = _place(org, api, from_date="2026-01-01", to_date="2026-06-30")
    d1 = org.person("d1@example.test", ("approval.decide", org.i.mailbox_id))
    org.person("d2@example.test", ("approval.decide", org.i.mailbox_id))
    asked = api.post(f"/api/holds/{hold['id']}/lift", json={"reason": "Matter M-7 settled on 3 March"},
                     headers=org.admin.headers)
    assert asked.status_code == 202, asked.text
    lift = asked.json()["lift"]
    queue = api.get("/api/approvals", headers=d1.headers)
    assert queue.status_code == 200, queue.text
    [item] = queue.json()["approvals"]
    assert (item["id"], item["subject_kind"], item["subject_id"]) == (lift["approval_id"], "hold_lift", lift["lift_id"])
    assert item["domain_pause"] is None
    assert item["hold_lift"] == {
        "lift_id": lift["lift_id"], "reason": "Matter M-7 settled on 3 March", "requested_by": org.i.user_id,
        "requested_at": org.node.clock.now().isoformat(),
        "hold": {"id": hold["id"], "mailbox_id": org.i.mailbox_id, "matter_id": "M-7",
                 "from_date": hold["from_date"], "to_date": hold["to_date"], "placed_by": org.i.user_id,
                 "placed_at": hold["placed_at"], "in_force": True}}
    assert hold["from_date"].startswith("2026-01-01") and hold["to_date"].startswith("2026-06-30")
    # The one who asked does not decide, so it is not in their queue.
    assert api.get("/api/approvals", headers=org.admin.headers).json()["approvals"] == []
