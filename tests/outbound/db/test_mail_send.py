"""``POST /api/mail`` with everything an application sends (issue 20, "The send"), against the in-process
app on a real database and a real aiosmtpd smarthost: realtime and deferrable mail with a From display name,
HTML, an attachment, Reply-To, allowed headers, tags and metadata arrives intact; each refusal answers its
code and seals nothing; the idempotency key covers the new fields."""

from __future__ import annotations

import base64
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from itertools import count
from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode import budgets
from mailnode.config import Settings
from mailnode.outbound import dispatch
from mailnode.schema.outbound import send_manifests, send_metadata, send_tags
from tests.outbound.db.conftest import Sink

H = lambda token: {"Authorization": f"Bearer {token}"}

#: Bytes no text encoding survives: a NUL, high bytes, CR LF inside.
PDF = b"%PDF-1.4\n\x00\xff\xfe binary \r\n payload \x80\x81" * 50
_KEYS = count()


@pytest.fixture
def settings(settings: Settings, sink: Sink) -> Settings:
    """The node hands over through the sink: realtime mail inside its request, deferrable at the sweep."""
    return settings.model_copy(update={"transport": "smtp", "smtp_relay": f"127.0.0.1:{sink.port}",
                                       "smtp_tls": "none"})


@pytest.fixture
def app(api: Any, installed: Any) -> dict[str, str]:
    """The application ``billing`` with ``send.propose`` on the installed mailbox (support@example.test)."""
    r = api.post("/api/apps", json={"name": "billing"}, headers=H(installed.token))
    assert r.status_code == 201, r.text
    grant = api.post("/api/access", json={"subject_id": r.json()["application"]["id"], "relation": "send.propose",
                                          "object_id": installed.mailbox_id}, headers=H(installed.token))
    assert grant.status_code == 201, grant.text
    return H(r.json()["token"])


def full_mail(mail_class: str = "deferrable", **overrides: Any) -> dict[str, Any]:
    """A mail using every field, under a fresh key."""
    body = {"from": "Support Desk <support@example.test>", "class": mail_class,
            "to": ["Ann Reader <ann@remote.test>"], "cc": ["cc@remote.test"], "reply_to": ["Help <help@example.test>"],
            "subject": "Your invoice", "text": "Your invoice is attached.", "html": "<p>Your <b>invoice</b>.</p>",
            "attachments": [{"filename": "invoice.pdf", "content_type": "application/pdf",
                             "content": base64.b64encode(PDF).decode("ascii")}],
            "headers": {"X-Order-Id": "42", "List-Unsubscribe": "<mailto:unsubscribe@example.test>"},
            "tags": ["invoice", "campaign:2026-12"], "metadata": {"order_id": "42", "customer": "ann"},
            "idempotency_key": f"k-{next(_KEYS)}"}
    body.update(overrides)
    return body


def _parse(content: bytes) -> EmailMessage:
    msg = message_from_bytes(content, policy=default_policy)
    assert isinstance(msg, EmailMessage)
    return msg


def _sealed(node: Any) -> int:
    with node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(send_manifests)).scalar_one())


@pytest.mark.parametrize("mail_class", ["realtime", "deferrable"])
def test_a_mail_with_every_field_arrives_at_the_smarthost_intact(
        api: Any, node: Any, installed: Any, app: dict[str, str], sink: Sink, mail_class: str) -> None:
    r = api.post("/api/mail", json=full_mail(mail_class), headers=app)
    assert r.status_code == (200 if mail_class == "realtime" else 202), r.text
    send_id = r.json()["mail"]["id"]
    if mail_class == "deferrable":
        assert sink.handler.received == []
        dispatch.sweep(node, transport=sink.transport())
    assert sorted(rcpt for got in sink.handler.received for rcpt in got.rcpt_tos) == ["ann@remote.test",
                                                                                     "cc@remote.test"]
    msg = _parse(sink.handler.received[0].content)
    assert msg["From"].addresses[0].display_name == "Support Desk"
    assert msg["From"].addresses[0].addr_spec == "support@example.test"
    assert str(msg["To"]) == "Ann Reader <ann@remote.test>"
    assert str(msg["Reply-To"]) == "Help <help@example.test>"
    assert msg["X-Order-Id"] == "42"
    assert msg["List-Unsubscribe"] == "<mailto:unsubscribe@example.test>"
    assert msg.get_content_type() == "multipart/mixed"
    body, attachment = list(msg.iter_parts())
    assert body.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in body.iter_parts()] == ["text/plain", "text/html"]
    text, html = list(body.iter_parts())
    assert text.get_content().strip() == "Your invoice is attached."
    assert html.get_content().strip() == "<p>Your <b>invoice</b>.</p>"
    assert attachment.get_content_type() == "application/pdf"
    assert attachment.get_filename() == "invoice.pdf"
    assert attachment.get_content() == PDF
    # Tags and metadata are the application's own labels: they never reach the receiver.
    raw = sink.handler.received[0].content
    assert b"campaign:2026-12" not in raw and b"customer" not in raw

    mail = api.get(f"/api/mail/{send_id}", headers=app).json()["mail"]
    assert mail["state"] == "handed_over"
    assert mail["from"] == {"email": "support@example.test", "name": "Support Desk"}
    assert mail["reply_to"] == ["Help <help@example.test>"]
    assert mail["tags"] == ["invoice", "campaign:2026-12"]
    assert mail["metadata"] == {"customer": "ann", "order_id": "42"}
    assert mail["headers"] == {"X-Order-Id": "42", "List-Unsubscribe": "<mailto:unsubscribe@example.test>"}
    assert mail["content"] == {"text": True, "html": True, "attachments": [
        {"filename": "invoice.pdf", "content_type": "application/pdf", "size_bytes": len(PDF)}]}
    assert [[e["event"] for e in rec["events"]] for rec in mail["recipients"]] == [["handed_over"], ["handed_over"]]


def test_html_alone_is_one_text_html_part_and_nothing_is_derived(
        api: Any, node: Any, app: dict[str, str], sink: Sink) -> None:
    r = api.post("/api/mail", json=full_mail("realtime", text=None, attachments=[]), headers=app)
    assert r.status_code == 200, r.text
    msg = _parse(sink.handler.received[0].content)
    assert msg.get_content_type() == "text/html"
    assert msg.get_content().strip() == "<p>Your <b>invoice</b>.</p>"
    assert r.json()["mail"]["content"] == {"text": False, "html": True, "attachments": []}


def test_the_mailbox_id_alone_still_sends_and_from_may_repeat_it(
        api: Any, installed: Any, app: dict[str, str], sink: Sink) -> None:
    plain = {"mailbox_id": installed.mailbox_id, "class": "realtime", "to": ["ann@remote.test"], "subject": "Hi",
             "text": "Hello.", "idempotency_key": "plain-1"}
    assert api.post("/api/mail", json=plain, headers=app).status_code == 200
    both = full_mail("realtime", mailbox_id=installed.mailbox_id)
    assert api.post("/api/mail", json=both, headers=app).status_code == 200
    assert _parse(sink.handler.received[0].content)["From"] == "support@example.test"


@pytest.fixture
def other_mailbox(api: Any, installed: Any) -> str:
    """A mailbox ``sales@example.test`` the application holds no grant on."""
    r = api.post("/api/mailboxes", json={"name": "Sales", "addresses": ["sales@example.test"]},
                 headers=H(installed.token))
    assert r.status_code == 201, r.text
    return str(r.json()["mailbox"]["id"])


@pytest.mark.parametrize(("overrides", "status", "code"), [
    ({"text": None, "html": None}, 422, "E_MAIL_BODY_MISSING"),
    ({"text": "", "html": None}, 422, "E_MAIL_BODY_MISSING"),
    ({"attachments": [{"filename": "a.pdf", "content_type": "application/pdf", "content": "not base64!"}]},
     422, "E_ATTACHMENT_MALFORMED"),
    ({"attachments": [{"filename": "../etc/passwd", "content_type": "text/plain", "content": "aGk="}]},
     422, "E_ATTACHMENT_MALFORMED"),
    ({"attachments": [{"filename": "a\r\nb.txt", "content_type": "text/plain", "content": "aGk="}]},
     422, "E_ATTACHMENT_MALFORMED"),
    ({"attachments": [{"filename": f"{i}.txt", "content_type": "text/plain", "content": "aGk="} for i in range(21)]},
     422, "E_TOO_MANY_ATTACHMENTS"),
    ({"headers": {"Bcc": "spy@remote.test"}}, 422, "E_MAIL_HEADER_NOT_ALLOWED"),
    ({"headers": {"Sender": "ceo@example.test"}}, 422, "E_MAIL_HEADER_NOT_ALLOWED"),
    ({"headers": {"X-Spam-Status": "No"}}, 422, "E_MAIL_HEADER_NOT_ALLOWED"),
    ({"headers": {"X-Order-Id": "42\r\nBcc: spy@remote.test"}}, 422, "E_HEADER_INJECTION"),
    ({"headers": {"X-Order-Id": "42\nBcc: spy@remote.test"}}, 422, "E_HEADER_INJECTION"),
    ({"tags": [f"t{i}" for i in range(11)]}, 422, "E_MAIL_TOO_MANY_TAGS"),
    ({"tags": ["two words"]}, 422, "E_MAIL_TAG_INVALID"),
    ({"metadata": {f"k{i}": "v" for i in range(11)}}, 422, "E_MAIL_METADATA_TOO_LARGE"),
    ({"metadata": {"order_id": "x" * 81}}, 422, "E_MAIL_METADATA_TOO_LARGE"),
    ({"metadata": {"order:id": "42"}}, 422, "E_MAIL_METADATA_INVALID"),
    ({"reply_to": ["not an address"]}, 422, "E_ADDRESS_MALFORMED"),
    ({"from": "Boss <sales@example.test>"}, 404, "E_MAY_NOT_SEND_FROM_ADDRESS"),
    ({"from": "nobody@example.test"}, 404, "E_MAY_NOT_SEND_FROM_ADDRESS"),
    ({"from": "Desk <support@example.test>\r\nBcc: x@y.test"}, 422, "E_HEADER_INJECTION"),
    ({"from": None}, 422, "E_MAIL_FROM_MISSING"),
])
def test_each_refusal_answers_its_code_and_seals_nothing(
        api: Any, node: Any, app: dict[str, str], sink: Sink, other_mailbox: str, overrides: dict[str, Any],
        status: int, code: str) -> None:
    r = api.post("/api/mail", json=full_mail("realtime", **overrides), headers=app)
    assert (r.status_code, r.json()["error"]) == (status, code), r.text
    assert _sealed(node) == 0 and sink.handler.received == []
    with node.read() as conn:
        assert conn.execute(select(func.count()).select_from(send_tags)).scalar_one() == 0
        assert conn.execute(select(func.count()).select_from(send_metadata)).scalar_one() == 0


def test_from_and_a_mailbox_id_naming_another_mailbox_is_refused(
        api: Any, node: Any, installed: Any, app: dict[str, str], other_mailbox: str) -> None:
    # The administrator may send from both mailboxes: the mismatch, not the authority, is what is refused.
    r = api.post("/api/mail", json=full_mail(mailbox_id=other_mailbox), headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (422, "E_MAIL_FROM_MISMATCH"), r.text
    assert _sealed(node) == 0


@pytest.mark.parametrize(("change", "differs"), [
    ({"html": "<p>Another invoice.</p>"}, ["html"]),
    ({"attachments": [{"filename": "invoice.pdf", "content_type": "application/pdf",
                       "content": base64.b64encode(PDF + b"!").decode("ascii")}]}, ["attachments"]),
    ({"from": "Billing <support@example.test>"}, ["from_name"]),
    ({"reply_to": ["other@example.test"]}, ["reply_to"]),
    ({"headers": {"X-Order-Id": "43"}}, ["headers"]),
    ({"tags": ["invoice"]}, ["tags"]),
    ({"metadata": {"order_id": "43", "customer": "ann"}}, ["metadata"]),
])
def test_the_idempotency_key_covers_the_new_fields(
        api: Any, node: Any, app: dict[str, str], change: dict[str, Any], differs: list[str]) -> None:
    first = full_mail(idempotency_key="same-key")
    r = api.post("/api/mail", json=first, headers=app)
    assert r.status_code == 202, r.text
    send_id = r.json()["mail"]["id"]
    again = api.post("/api/mail", json=first, headers=app)
    assert (again.status_code, again.json()["mail"]["id"]) == (202, send_id)
    other = api.post("/api/mail", json={**first, **change}, headers=app)
    assert (other.status_code, other.json()["error"]) == (409, "E_IDEMPOTENCY_KEY_REUSED"), other.text
    assert other.json()["detail"]["differs"] == differs
    assert _sealed(node) == 1


def test_each_recipient_shows_its_timeline_with_the_remote_servers_words(
        api: Any, node: Any, app: dict[str, str], sink: Sink, listener: Any) -> None:
    from tests.outbound.db.conftest import deliver
    from tests.outbound.db.test_pipeline import dsn

    r = api.post("/api/mail", json=full_mail("deferrable", cc=[]), headers=app)
    assert r.status_code == 202, r.text
    send_id = r.json()["mail"]["id"]
    dispatch.sweep(node, transport=sink.transport())
    [received] = sink.handler.received
    # The remote server answers later with a DSN to the VERP return path, through the node's own ingress.
    deliver(listener, dsn("ann@remote.test", "unrelated@elsewhere.test", received.mail_from), "",
            [received.mail_from])
    [recipient] = api.get(f"/api/mail/{send_id}", headers=app).json()["mail"]["recipients"]
    assert recipient["delivery_state"] == "bounced"
    handed, bounced = recipient["events"]
    assert handed["event"] == "handed_over" and handed["source"] == "node"
    assert (bounced["event"], bounced["status"], bounced["bounce_type"], bounced["source"]) == (
        "bounced", "5.1.1", "hard", "dsn")
    assert "user unknown" in bounced["diagnostic"]


def test_a_resend_keeps_the_application_mails_own_fields(
        api: Any, node: Any, installed: Any, sink: Sink) -> None:
    from tests.outbound.db.test_pipeline import Raising

    admin = H(installed.token)
    r = api.post("/api/mail", json=full_mail("deferrable", text=None, attachments=[], cc=[]), headers=admin)
    assert r.status_code == 202, r.text
    send_id = r.json()["mail"]["id"]
    dispatch.sweep(node, transport=Raising())  # type: ignore[arg-type]
    r = api.post(f"/api/sends/{send_id}/retry", json={"mode": "resend-may-duplicate", "reason": "lost",
                                                       "accept_duplicate_risk": True}, headers=admin)
    assert r.status_code == 200, r.text
    again = r.json()["send"]["id"]
    # A resend is sealed as correspondence (outbound.retry), so it waits out the mailbox's hold window.
    node.clock.advance(budgets.SEND_HOLD_WINDOW_DEFAULT_SECONDS + 1)
    dispatch.sweep(node, transport=sink.transport())
    [received] = sink.handler.received
    msg = _parse(received.content)
    assert str(msg["From"]) == "Support Desk <support@example.test>"
    assert str(msg["Reply-To"]) == "Help <help@example.test>" and msg["X-Order-Id"] == "42"
    assert msg.get_content_type() == "text/html"
    mail = api.get(f"/api/mail/{again}", headers=admin).json()["mail"]
    assert (mail["tags"], mail["metadata"]) == (["invoice", "campaign:2026-12"], {"customer": "ann", "order_id": "42"})


def test_attachments_over_the_content_budget_are_413_and_seal_nothing(
        api: Any, node: Any, app: dict[str, str], sink: Sink) -> None:
    # One byte over SEND_CONTENT_MAX_BYTES counting the text and HTML beside it.
    mail = full_mail("realtime")
    spare = budgets.SEND_CONTENT_MAX_BYTES - len(mail["text"].encode()) - len(mail["html"].encode())
    big = {"filename": "big.bin", "content_type": "application/octet-stream",
           "content": base64.b64encode(b"\x00" * (spare + 1)).decode("ascii")}
    r = api.post("/api/mail", json={**mail, "attachments": [big]}, headers=app)
    assert (r.status_code, r.json()["error"]) == (413, "E_SEND_TOO_LARGE"), r.text[:300]
    assert r.json()["detail"]["limit_name"] == "SEND_CONTENT_MAX_BYTES"
    assert _sealed(node) == 0 and sink.handler.received == []
    # Exactly at the budget it is taken.
    big["content"] = base64.b64encode(b"\x00" * spare).decode("ascii")
    r = api.post("/api/mail", json={**mail, "attachments": [big]}, headers=app)
    assert r.status_code == 200, r.text[:300]
