"""A reply is written by whoever holds the case (issue 16, the composer's lock in the service): through the
API (and so the composer page, which calls the same ``outbound.submit.submit``), a reply into a conversation
whose open case a colleague holds is refused with ``E_REPLY_CASE_HELD`` naming them, and seals nothing; once
the sender takes the case over it is sealed; the holder, an unheld case and a forward are not refused."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from mailnode.schema.directory import users
from mailnode.schema.outbound import send_manifests
from tests.outbound.db.conftest import deliver, inbound
from tests.outbound.db.test_conversation_answers import H, _user


def _parent(api: Any, installed: Any, listener: Any) -> dict[str, Any]:
    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    r = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages", headers=H(installed.token))
    return dict(r.json()["messages"][0])


def _sends(node: Any) -> int:
    with node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(send_manifests)).scalar_one())


def _reply(api: Any, installed: Any, token: str, parent: dict[str, Any], **extra: Any) -> Any:
    return api.post("/api/sends", json={"mailbox_id": installed.mailbox_id, "in_reply_to_message_id": parent["id"],
                                        "body": "Answered.", **extra}, headers=H(token))


def test_a_reply_into_a_case_a_colleague_holds_is_refused_naming_them_until_taken_over(
        api: Any, node: Any, installed: Any, listener: Any) -> None:
    parent = _parent(api, installed, listener)
    olga = _user(api, node, installed, "olga@example.test", "send.propose", "mailbox.content.read")
    claimed = api.post(f"/api/cases/{parent['case_id']}/claim", json={}, headers=H(installed.token))
    assert claimed.status_code == 200, claimed.text
    with node.read() as conn:
        holder = conn.execute(select(users.c.name, users.c.email).where(users.c.id == installed.user_id)).one()
    name = holder.name or holder.email

    refused = _reply(api, installed, olga, parent)
    assert refused.status_code == 409, refused.text
    error = refused.json()
    assert error["error"] == "E_REPLY_CASE_HELD"
    assert error["message"] == f"{name} holds this conversation's case; your reply was not sent."
    assert f"POST /api/cases/{parent['case_id']}/claim" in error["fix"]
    assert error["detail"]["holder_id"] == installed.user_id
    assert _sends(node) == 0

    # A forward is not an answer to the correspondent: not refused.
    forwarded = api.post("/api/sends", json={"mailbox_id": installed.mailbox_id, "forward_message_id": parent["id"],
                                             "to": ["expert@remote.test"], "body": "FYI"}, headers=H(olga))
    assert forwarded.status_code == 201, forwarded.text

    taken = api.post(f"/api/cases/{parent['case_id']}/claim", json={"take": True}, headers=H(olga))
    assert taken.status_code == 200, taken.text
    sent = _reply(api, installed, olga, parent)
    assert sent.status_code == 201, sent.text
    # Now the first holder is the one refused, and a draft-based reply is refused the same way.
    draft = api.post("/api/drafts", json={"mailbox_id": installed.mailbox_id, "in_reply_to_message_id": parent["id"],
                                          "to": ["customer@remote.test"], "subject": "Re: x", "body": "Me too."},
                     headers=H(installed.token))
    assert draft.status_code == 201, draft.text
    again = api.post("/api/sends", json={"draft_id": draft.json()["draft"]["id"]}, headers=H(installed.token))
    assert again.status_code == 409 and again.json()["error"] == "E_REPLY_CASE_HELD", again.text
    assert again.json()["detail"]["holder_id"] != installed.user_id


def test_a_reply_into_an_unheld_case_or_by_its_holder_is_sealed(
        api: Any, node: Any, installed: Any, listener: Any) -> None:
    parent = _parent(api, installed, listener)
    olga = _user(api, node, installed, "olga@example.test", "send.propose", "mailbox.content.read")
    assert _reply(api, installed, olga, parent).status_code == 201
    api.post(f"/api/cases/{parent['case_id']}/claim", json={}, headers=H(olga))
    assert _reply(api, installed, olga, parent).status_code == 201
