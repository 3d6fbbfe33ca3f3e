"""``DELETE /api/cases/{id}``: a closed case is deleted (its messages stay), an open one is refused
``E_CASE_OPEN``, and one a legal hold covers is refused ``E_LEGAL_HOLD`` with ``hold.blocked`` audited
(issue 9: "a person deleting a draft or a case under hold: E_LEGAL_HOLD")."""

from __future__ import annotations

from typing import Any

from mailnode.ingress import receipts, routing
from mailnode.ingress.materialise import Materialised, materialise_receipt
from tests.retention.conftest import Retained


def _delivered(org: Retained, n: int) -> Materialised:
    """A real delivery to the mailbox: a message in a conversation with an open case."""
    raw = (f"From: ann@remote.test\r\nTo: {org.i.mailbox_address}\r\nSubject: Case {n}\r\n"
           f"Message-ID: <case{n}@remote.test>\r\n\r\nHello.\r\n").encode()
    with org.node.read() as conn:
        route = routing.resolve(conn, org.i.mailbox_address)
    assert route is not None
    rid = receipts.accept(org.node, raw, receipts.Envelope(mail_from="ann@remote.test", routes=(route,)))[0]
    return materialise_receipt(org.node, rid)


def _closed(org: Retained, api: Any, n: int) -> Materialised:
    got = _delivered(org, n)
    for step in ("claim", "close"):
        r = api.post(f"/api/cases/{got.case_id}/{step}", headers=org.admin.headers)
        assert r.status_code == 200, r.text
    return got


def _case_ids(org: Retained, api: Any) -> list[str]:
    return [c["id"] for c in api.get("/api/cases", headers=org.admin.headers).json()["cases"]]


def test_a_closed_case_is_deleted_and_its_message_stays(org: Retained, api: Any) -> None:
    got = _closed(org, api, 1)
    r = api.delete(f"/api/cases/{got.case_id}", headers=org.admin.headers)
    assert r.status_code == 200, r.text
    assert r.json() == {"deleted": got.case_id}
    assert got.case_id not in _case_ids(org, api)
    message = api.get(f"/api/messages/{got.message_id}", headers=org.admin.headers)
    assert message.status_code == 200 and message.json()["message"]["case_id"] is None
    assert [(e["subject"], e["actor_id"]) for e in org.entries("case.deleted")] == [(got.case_id, org.i.user_id)]
    again = api.delete(f"/api/cases/{got.case_id}", headers=org.admin.headers)
    assert again.status_code == 404 and again.json()["error"] == "E_NO_SUCH_CASE"


def test_an_open_case_is_refused(org: Retained, api: Any) -> None:
    got = _delivered(org, 2)
    r = api.delete(f"/api/cases/{got.case_id}", headers=org.admin.headers)
    assert r.status_code == 409 and r.json()["error"] == "E_CASE_OPEN"
    assert f"POST /api/cases/{got.case_id}/close" in r.json()["fix"]
    assert got.case_id in _case_ids(org, api)
    assert org.entries("case.deleted") == [] and org.entries("hold.blocked") == []


def test_a_held_case_is_refused_audited_and_still_there(org: Retained, api: Any) -> None:
    got = _closed(org, api, 3)
    placed = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "matter_id": "M-9"},
                      headers=org.admin.headers)
    assert placed.status_code == 201, placed.text
    hold_id = placed.json()["hold"]["id"]
    r = api.delete(f"/api/cases/{got.case_id}", headers=org.admin.headers)
    assert r.status_code == 409, r.text
    body = r.json()
    assert body["error"] == "E_LEGAL_HOLD"
    assert body["detail"] == {"subject": got.case_id, "hold_ids": [hold_id], "act": "case.delete"}
    assert got.case_id in _case_ids(org, api)
    message = api.get(f"/api/messages/{got.message_id}", headers=org.admin.headers)
    assert message.json()["message"]["case_id"] == got.case_id
    assert [(e["subject"], e["actor_id"], e["outcome"], e["detail"]) for e in org.entries("hold.blocked")] == [
        (got.case_id, org.i.user_id, "refused", {"hold_ids": [hold_id], "act": "case.delete"})]
    assert org.entries("case.deleted") == []


def test_a_person_who_may_not_work_the_mailbox_may_not_delete_its_case(org: Retained, api: Any) -> None:
    got = _closed(org, api, 4)
    reader = org.person("reader@example.test", ("mailbox.content.read", org.i.mailbox_id))
    r = api.delete(f"/api/cases/{got.case_id}", headers=reader.headers)
    assert r.status_code == 403 and r.json()["error"] == "E_MAY_NOT_WORK_CASE"
    stranger = org.person("stranger@example.test")
    assert api.delete(f"/api/cases/{got.case_id}", headers=stranger.headers).status_code == 404
    assert got.case_id in _case_ids(org, api)
