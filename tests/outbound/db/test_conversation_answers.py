"""Issue 15 through the HTTP API on a real database, a real smarthost sink and the real inbound path: the
thread shows both sides (our sends, a Butler's proposal with its body, notes); a reply fills itself in; display
names, HTML and attachments leave as a reader expects; forwarding goes through the same seal; notes are never
sent."""

from __future__ import annotations

import base64
from email import message_from_bytes
from email.policy import default as default_policy
from typing import Any

from sqlalchemy import func, select

from mailnode.outbound import dispatch
from mailnode.schema.outbound import send_manifests
from tests.outbound.db.conftest import deliver, inbound

H = lambda token: {"Authorization": f"Bearer {token}"}


def _parent(api: Any, installed: Any, listener: Any, **headers: str) -> dict[str, Any]:
    deliver(listener, inbound(**headers), "bounce-box@remote.test", ["support@example.test"])
    r = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages", headers=H(installed.token))
    return dict(r.json()["messages"][0])


def _send(api: Any, installed: Any, **body: Any) -> dict[str, Any]:
    r = api.post("/api/sends", json={"mailbox_id": installed.mailbox_id, **body}, headers=H(installed.token))
    assert r.status_code == 201, r.text
    return dict(r.json()["send"])


def _handed(node: Any, sink: Any) -> list[Any]:
    """What the sweep handed over, in the order the sends were made: a batch submits its sends concurrently, so
    the sink receives them in any order; the Message-ID carries the send's id, a ULID, which sorts by time."""
    dispatch.sweep(node, transport=sink.transport())
    msgs = [message_from_bytes(t.content, policy=default_policy) for t in sink.handler.received]
    return sorted(msgs, key=lambda m: str(m["Message-ID"]))


def _user(api: Any, node: Any, installed: Any, email: str, *relations: str) -> str:
    from mailnode.directory.tokens import create_token

    uid = api.post("/api/users", json={"email": email}, headers=H(installed.token)).json()["user"]["id"]
    for rel in relations:
        r = api.post("/api/access", json={"subject_id": uid, "relation": rel, "object_id": installed.mailbox_id},
                     headers=H(installed.token))
        assert r.status_code in (200, 201), r.text
    with node.begin() as conn:
        _, token = create_token(conn, org_id=installed.org_id, principal_id=uid, at=node.clock.now(), actor_id=None,
                                label="test")
    return str(token)


def test_a_reply_fills_in_reply_to_subject_threading_and_the_quote(
        api: Any, node: Any, installed: Any, listener: Any, sink: Any, hold_zero: None) -> None:
    parent = _parent(api, installed, listener, subject="RE: Aw: Where is my order?",
                     Reply_To='"Orders Desk, Müller" <orders@remote.test>', Cc="Dana <dana@remote.test>, "
                     "support@example.test", References="<q0@remote.test>")
    sent = _send(api, installed, in_reply_to_message_id=parent["id"], body="It ships today.", quote=True,
                 reply_all=True)
    assert sent["conversation_id"] == parent["conversation_id"]
    (msg, *_rest) = _handed(node, sink)
    # Reply-To wins over From for a person; reply-all adds Cc minus the mailbox's own address.
    assert [(a.display_name, a.addr_spec) for a in msg["To"].addresses] == [("Orders Desk, Müller",
                                                                               "orders@remote.test")]
    assert [a.addr_spec for a in msg["Cc"].addresses] == ["dana@remote.test"]
    assert msg["Subject"] == "Re: Where is my order?"
    assert msg["In-Reply-To"] == "<q1@remote.test>"
    assert msg["References"] == "<q0@remote.test> <q1@remote.test>"
    text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert text.startswith("It ships today.\n\nOn ")
    assert "Customer <customer@remote.test> wrote:\n> Hello, order 42 has not arrived." in text
    # The display name left RFC 2047 encoded (7-bit headers), and reads back as typed.
    raw = sink.handler.received[0].content
    assert b"=?utf-8?" in raw and "Müller".encode() not in raw.split(b"\r\n\r\n")[0]


def test_a_reply_without_reply_to_goes_to_from_and_addresses_take_display_names(
        api: Any, node: Any, installed: Any, listener: Any, sink: Any, hold_zero: None) -> None:
    parent = _parent(api, installed, listener)
    _send(api, installed, in_reply_to_message_id=parent["id"], body="Thanks.")
    _send(api, installed, to=["Alice Müller <alice@remote.test>"], cc=['"Bob, Jr" <bob@remote.test>'],
          subject="Hello", body="Hi")
    first, *others = _handed(node, sink)
    assert [(a.display_name, a.addr_spec) for a in first["To"].addresses] == [("Customer", "customer@remote.test")]
    named = next(m for m in others if m["Subject"] == "Hello")
    assert [(a.display_name, a.addr_spec) for a in named["To"].addresses] == [("Alice Müller", "alice@remote.test")]
    assert [(a.display_name, a.addr_spec) for a in named["Cc"].addresses] == [("Bob, Jr", "bob@remote.test")]
    r = api.post("/api/sends", json={"mailbox_id": installed.mailbox_id, "to": ["a@remote.test, b@remote.test"],
                                     "subject": "x", "body": "y"}, headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (422, "E_ADDRESS_MALFORMED")


def test_html_and_attachments_leave_as_multipart_and_are_bounded(
        api: Any, node: Any, installed: Any, sink: Any, hold_zero: None) -> None:
    pdf = b"%PDF-1.4 invoice\n"
    sent = _send(api, installed, to=["ann@remote.test"], subject="Invoice", body="See attached.",
                 html="<p>See <b>attached</b>.</p>",
                 attachments=[{"filename": "Rechnung Müller.pdf", "content_type": "application/pdf",
                               "content_base64": base64.b64encode(pdf).decode()}])
    (msg,) = _handed(node, sink)
    assert msg.get_content_type() == "multipart/mixed"
    assert msg.get_body(("plain",)).get_content().strip() == "See attached."
    assert msg.get_body(("html",)).get_content().strip() == "<p>See <b>attached</b>.</p>"
    (att,) = list(msg.iter_attachments())
    assert (att.get_filename(), att.get_content_type(), att.get_content()) == ("Rechnung Müller.pdf",
                                                                              "application/pdf", pdf)
    got = api.get(f"/api/conversations/{sent['conversation_id']}", headers=H(installed.token)).json()
    item = got["conversation"]["thread"][0]["send"]
    assert item["body"] == {"text": "See attached.", "html": "<p>See <b>attached</b>.</p>"}
    assert [(a["filename"], a["size_bytes"]) for a in item["attachments"]] == [("Rechnung Müller.pdf", len(pdf))]
    found = api.get("/api/search", params={"q": "has:attachment"},
                    headers=H(installed.token)).json()["results"]
    assert [(r["kind"], r["id"], r["attachments"]) for r in found] == [("send", sent["id"], 1)]

    from mailnode import budgets

    big = base64.b64encode(b"x" * (budgets.SEND_CONTENT_MAX_BYTES + 1)).decode()
    r = api.post("/api/sends", json={"mailbox_id": installed.mailbox_id, "to": ["ann@remote.test"], "subject": "x",
                                     "body": "y", "attachments": [{"filename": "big.bin", "content_base64": big}]},
                 headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (413, "E_SEND_TOO_LARGE")
    assert r.json()["detail"]["limit_name"] == "SEND_CONTENT_MAX_BYTES"
    assert set(r.json()) >= {"message", "why", "fix"}
    r = api.post("/api/sends", json={"mailbox_id": installed.mailbox_id, "to": ["ann@remote.test"], "subject": "x",
                                     "body": "y", "attachments": [{"filename": "../etc/passwd", "content_base64": ""}]},
                 headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (422, "E_ATTACHMENT_MALFORMED")


def test_a_text_attachment_leaves_with_its_bytes(
        api: Any, node: Any, installed: Any, sink: Any, hold_zero: None) -> None:
    # A text/* attachment is read back from the rendered message at dispatch; it once came back as a str and
    # every sweep raised on it, leaving the send held for ever.
    notes = "order 42: shipped\r\nGrüße\r\n".encode()
    sent = _send(api, installed, to=["ann@remote.test"], subject="Details", body="See attached.",
                 attachments=[{"filename": "details.txt", "content_type": "text/plain",
                               "content_base64": base64.b64encode(notes).decode()}])
    (msg,) = _handed(node, sink)
    (att,) = list(msg.iter_attachments())
    assert (att.get_filename(), att.get_content_type(), att.get_payload(decode=True)) == (
        "details.txt", "text/plain", notes)
    got = api.get(f"/api/sends/{sent['id']}", headers=H(installed.token)).json()["send"]
    assert got["state"] == "handed_over"


def test_one_sends_defect_does_not_stop_the_others_in_its_sweep(
        api: Any, node: Any, installed: Any, sink: Any, hold_zero: None, monkeypatch: Any,
        caplog: Any) -> None:
    # A defect in reading one send (here injected where the text-attachment defect was) is logged with its
    # traceback and leaves that send as it was; the other sends of the batch are handed over.
    plain = _send(api, installed, to=["ann@remote.test"], subject="Plain", body="No attachment.")
    attached = _send(api, installed, to=["bob@remote.test"], subject="Attached", body="See attached.",
                     attachments=[{"filename": "a.txt", "content_type": "text/plain",
                                   "content_base64": base64.b64encode(b"x").decode()}])

    def defect(rendered: bytes) -> Any:
        raise TypeError("injected defect")

    monkeypatch.setattr(dispatch, "attachments_of", defect)
    with caplog.at_level("ERROR", logger="mailnode.dispatch"):
        report = dispatch.sweep(node, transport=sink.transport())
    assert {r.manifest_id: r.detail for r in report.results if r.detail == "dispatch_failed"} == {
        attached["id"]: "dispatch_failed"}
    assert [t.rcpt_tos for t in sink.handler.received] == [["ann@remote.test"]]
    states = {s: api.get(f"/api/sends/{s}", headers=H(installed.token)).json()["send"]["state"]
              for s in (plain["id"], attached["id"])}
    assert states == {plain["id"]: "handed_over", attached["id"]: attached["state"]}
    assert any("send.dispatch_failed" in r.getMessage() and r.exc_info for r in caplog.records)


def test_forwarding_inline_and_as_an_attachment_goes_through_the_seal(
        api: Any, node: Any, installed: Any, listener: Any, sink: Any, hold_zero: None) -> None:
    parent = _parent(api, installed, listener, subject="Re: Where is my order?")
    inline = _send(api, installed, forward_message_id=parent["id"], to=["boss@remote.test"], body="FYI")
    attached = _send(api, installed, forward_message_id=parent["id"], forward_as="attachment",
                     to=["archive@remote.test"])
    assert inline["conversation_id"] != parent["conversation_id"] and inline["state"] == "held"
    msgs = {m["To"].addresses[0].addr_spec: m for m in _handed(node, sink)}
    fwd = msgs["boss@remote.test"]
    assert fwd["Subject"] == "Fwd: Where is my order?" and fwd["In-Reply-To"] is None
    text = fwd.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert text.startswith("FYI\n\n---------- Forwarded message ----------\nFrom: Customer <customer@remote.test>")
    assert "Hello, order 42 has not arrived." in text
    (att,) = list(msgs["archive@remote.test"].iter_attachments())
    assert att.get_content_type() == "message/rfc822"
    inner = att.get_content()
    assert inner["Message-ID"] == "<q1@remote.test>" and "order 42" in inner.get_body(("plain",)).get_content()
    with node.read() as conn:
        rows = conn.execute(select(send_manifests.c.attachments).where(send_manifests.c.id == attached["id"])).scalar()
    assert rows[0]["content_type"] == "message/rfc822" and rows[0]["filename"] == "Re_ Where is my order.eml"

    # Forwarding needs content read on the message: a sender without it is told the message does not exist.
    token = _user(api, node, installed, "pat@example.test", "send.propose")
    r = api.post("/api/sends", json={"mailbox_id": installed.mailbox_id, "forward_message_id": parent["id"],
                                     "to": ["x@remote.test"]}, headers=H(token))
    assert (r.status_code, r.json()["error"]) == (404, "E_NO_SUCH_MESSAGE")


def test_the_thread_shows_both_sides_a_butlers_proposal_with_its_body_and_notes(
        api: Any, node: Any, installed: Any, listener: Any) -> None:
    from mailnode.authz import grant_unchecked
    from mailnode.ids import new_id
    from mailnode.outbound.seal import SealRequest, seal

    parent = _parent(api, installed, listener)
    ours = _send(api, installed, in_reply_to_message_id=parent["id"], body="Looking into it.")
    butler = new_id("btl")
    with node.begin() as conn:
        grant_unchecked(conn, org_id=installed.org_id, at=node.clock.now(), subject_id=butler,
                        relation="send.propose", object_id=installed.mailbox_id, actor_id=None)
        grant_unchecked(conn, org_id=installed.org_id, at=node.clock.now(), subject_id=butler,
                        relation="mailbox.content.read", object_id=installed.mailbox_id, actor_id=None)
    proposal = seal(node, org_id=installed.org_id, author_id=butler, request=SealRequest(
        mailbox_id=installed.mailbox_id, to=["bounce-box@remote.test"], subject="Re: Where is my order?",
        body="We received your message.", in_reply_to_message_id=parent["id"]))
    case_id = parent["case_id"]
    r = api.post(f"/api/cases/{case_id}/notes", json={"body": "Customer called too; VIP."}, headers=H(installed.token))
    assert r.status_code == 201, r.text
    note = r.json()["note"]

    conv = api.get(f"/api/conversations/{parent['conversation_id']}", headers=H(installed.token)).json()["conversation"]
    kinds = [(i["kind"], (i.get("message") or i.get("send") or i.get("note"))["id"]) for i in conv["thread"]]
    assert kinds == [("message", parent["id"]), ("send", ours["id"]), ("send", proposal.id), ("note", note["id"])]
    # Each entry carries only its own kind: no null placeholders for the other two.
    assert all(set(i) == {"kind", "at", i["kind"]} for i in conv["thread"])
    by_id = {i["send"]["id"]: i["send"] for i in conv["thread"] if i["kind"] == "send"}
    mine, theirs = by_id[ours["id"]], by_id[proposal.id]
    assert mine["author"] == {"id": installed.user_id, "kind": "person"} and mine["body"]["text"] == "Looking into it."
    assert mine["waits_on"]["gate"] == "hold_window"
    assert theirs["author"] == {"id": butler, "kind": "butler"}
    assert theirs["state"] == "awaiting" and theirs["waits_on"]["gate"] == "butler_release_required"
    assert "POST /api/sends/" in theirs["waits_on"]["next_step"]
    # The person who may release the Butler's reply reads exactly what will leave.
    assert theirs["body"] == {"text": "We received your message.", "html": None}
    assert theirs["body_visible_because"] == "release_or_cancel"
    assert conv["thread"][0]["message"]["text_body"].startswith("Hello, order 42")

    # Someone who may only see the mailbox's metadata sees the thread, but no body.
    viewer = _user(api, node, installed, "vic@example.test", "mailbox.metadata.read")
    seen = api.get(f"/api/conversations/{parent['conversation_id']}", headers=H(viewer)).json()["conversation"]
    sends = [i["send"] for i in seen["thread"] if i["kind"] == "send"]
    assert [s["id"] for s in sends] == [ours["id"], proposal.id]
    assert all(s["body"] is None and s["body_visible"] is False for s in sends)
    assert seen["thread"][0]["message"]["text_body"] is None
    # GET /api/sends/{id} applies the same decision: a releaser reads the Butler's words, the viewer does not.
    releaser = _user(api, node, installed, "rel@example.test", "send.propose")
    got = api.get(f"/api/sends/{proposal.id}", headers=H(releaser)).json()["send"]
    assert got["body"] == {"text": "We received your message.", "html": None}
    assert got["body_visible_because"] == "release_or_cancel"
    got = api.get(f"/api/sends/{proposal.id}", headers=H(viewer)).json()["send"]
    assert got["body"] is None and got["body_visible_because"] is None
    # ... and may not add a note (no send.propose), while an outsider sees nothing at all.
    r = api.post(f"/api/cases/{case_id}/notes", json={"body": "me too"}, headers=H(viewer))
    assert (r.status_code, r.json()["error"]) == (403, "E_MAY_NOT_WORK_CASE")
    outsider = _user(api, node, installed, "out@example.test")
    r = api.get(f"/api/conversations/{parent['conversation_id']}", headers=H(outsider))
    assert (r.status_code, r.json()["error"]) == (404, "E_NO_SUCH_CONVERSATION")


def test_a_note_is_audited_and_never_sent(api: Any, node: Any, installed: Any, listener: Any, sink: Any,
                                          hold_zero: None) -> None:
    parent = _parent(api, installed, listener)
    r = api.post(f"/api/cases/{parent['case_id']}/notes", json={"body": "Internal: refund approved."},
                 headers=H(installed.token))
    assert r.status_code == 201
    with node.read() as conn:
        assert conn.execute(select(func.count()).select_from(send_manifests)).scalar_one() == 0
    assert _handed(node, sink) == []
    entries = api.get("/api/audit", headers=H(installed.token)).json()["entries"]
    added = [e for e in entries if e["action"] == "case.note_added"]
    assert [e["subject"] for e in added] == [parent["case_id"]]
    detail = added[0]["detail"]
    assert "refund" not in str(detail) and r.json()["note"]["id"] in str(detail)
    r = api.post(f"/api/cases/{parent['case_id']}/notes", json={"body": "  "}, headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (422, "E_NOTE_EMPTY")
    # A case's notes go with it.
    case_id = parent["case_id"]
    assert api.post(f"/api/cases/{case_id}/claim", headers=H(installed.token)).status_code == 200
    assert api.post(f"/api/cases/{case_id}/close", headers=H(installed.token)).status_code == 200
    r = api.delete(f"/api/cases/{case_id}", headers=H(installed.token))
    assert r.status_code == 200, r.text
    thread = api.get(f"/api/conversations/{parent['conversation_id']}", headers=H(installed.token)).json()
    assert [i["kind"] for i in thread["conversation"]["thread"]] == ["message"]


def test_the_idempotency_fingerprint_covers_html_attachments_and_names(api: Any, installed: Any) -> None:
    body = {"mailbox_id": installed.mailbox_id, "to": ["Ann <ann@remote.test>"], "subject": "Hi", "body": "x",
            "html": "<p>x</p>", "attachments": [{"filename": "a.txt", "content_type": "text/plain",
                                                  "content_base64": base64.b64encode(b"one").decode()}]}
    key = {"Idempotency-Key": "k-15", **H(installed.token)}
    first = api.post("/api/sends", json=body, headers=key)
    assert first.status_code == 201
    again = api.post("/api/sends", json=body, headers=key)
    assert again.status_code == 201 and again.headers.get("Idempotent-Replayed") == "true"
    changed = {**body, "to": ["Annie <ann@remote.test>"], "html": "<p>y</p>",
               "attachments": [{"filename": "a.txt", "content_type": "text/plain",
                                "content_base64": base64.b64encode(b"two").decode()}]}
    r = api.post("/api/sends", json=changed, headers=key)
    assert (r.status_code, r.json()["error"]) == (409, "E_IDEMPOTENCY_KEY_REUSED")
    assert r.json()["detail"]["differs"] == ["display_names", "html", "attachments"]


def test_a_resend_carries_the_names_html_and_attachments_again(
        api: Any, node: Any, installed: Any, sink: Any, hold_zero: None) -> None:
    from tests.outbound.db.test_pipeline import Raising

    pdf = b"%PDF-1.4 again\n"
    first = _send(api, installed, to=["Ann Example <ann@remote.test>"], subject="Invoice", body="Attached.",
                  html="<p>Attached.</p>", attachments=[{"filename": "inv.pdf", "content_type": "application/pdf",
                                                         "content_base64": base64.b64encode(pdf).decode()}])
    dispatch.sweep(node, transport=Raising())  # type: ignore[arg-type]
    r = api.post(f"/api/sends/{first['id']}/retry", json={"mode": "resend-may-duplicate", "reason": "lost",
                                                          "accept_duplicate_risk": True}, headers=H(installed.token))
    assert r.status_code == 200, r.text
    (msg,) = _handed(node, sink)
    assert [(a.display_name, a.addr_spec) for a in msg["To"].addresses] == [("Ann Example", "ann@remote.test")]
    assert msg.get_body(("html",)).get_content().strip() == "<p>Attached.</p>"
    assert [(a.get_filename(), a.get_content()) for a in msg.iter_attachments()] == [("inv.pdf", pdf)]


class Capturing:
    """A reconstructing transport (like Resend) that takes everything and keeps what it was handed."""

    from mailnode.transports.base import TransportCapabilities

    capabilities = TransportCapabilities("capturing", 1, None, "none", "reconstructed")

    def __init__(self) -> None:
        self.submitted: list[Any] = []

    async def submit(self, request: Any) -> Any:
        from mailnode.transports.base import SubmitOutcome, SubmitState

        self.submitted.append(request)
        return SubmitOutcome(SubmitState.HANDED_OVER, transport_message_id=f"cap-{len(self.submitted)}")

    async def aclose(self) -> None:
        return None


def test_a_reconstructing_transport_is_handed_the_html_part_and_attachments(
        api: Any, node: Any, installed: Any, hold_zero: None) -> None:
    _send(api, installed, to=["ann@remote.test"], subject="Invoice", body="Attached.", html="<p>Attached.</p>",
          attachments=[{"filename": "inv.pdf", "content_type": "application/pdf",
                        "content_base64": base64.b64encode(b"%PDF").decode()}])
    transport = Capturing()
    assert [r.state for r in dispatch.sweep(node, transport=transport).results] == ["handed_over"]  # type: ignore[arg-type]
    (sub,) = transport.submitted
    assert (sub.text, sub.html, sub.attachments) == ("Attached.", "<p>Attached.</p>",
                                                     (("inv.pdf", "application/pdf", b"%PDF"),))


def test_a_draft_keeps_a_display_name_and_its_seal_writes_it(
        api: Any, node: Any, installed: Any, sink: Any, hold_zero: None) -> None:
    r = api.post("/api/drafts", json={"mailbox_id": installed.mailbox_id, "to": ["Zoë Example <zoe@remote.test>"],
                                      "subject": "Draft", "body": "x"}, headers=H(installed.token))
    assert r.status_code == 201, r.text
    assert r.json()["draft"]["to"] == ["Zoë Example <zoe@remote.test>"]
    r = api.post("/api/sends", json={"draft_id": r.json()["draft"]["id"]}, headers=H(installed.token))
    assert r.status_code == 201, r.text
    (msg,) = _handed(node, sink)
    assert [(a.display_name, a.addr_spec) for a in msg["To"].addresses] == [("Zoë Example", "zoe@remote.test")]
