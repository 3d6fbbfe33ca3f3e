"""The conversation page and the composer over HTTP (the ASGI client, a real database and the real inbound
path): what a signed-in person sees and does, through the same services as the API."""

from __future__ import annotations

from email.message import EmailMessage
from typing import Any

from sqlalchemy import select

from mailnode.schema.mail_messages import cases, messages
from tests.outbound.db.conftest import deliver, inbound
from tests.web.conftest import csrf_of, sign_in

NEWSLETTER_SCRIPT = "document.title='script ran'"


def newsletter() -> bytes:
    """An HTML newsletter with a script, an event handler, a remote image and an executable attachment."""
    msg = EmailMessage()
    msg["From"] = "News <news@remote.test>"
    msg["To"] = "support@example.test"
    msg["Subject"] = "Our December news"
    msg["Message-ID"] = "<news1@remote.test>"
    msg.set_content("December news in text.")
    msg.add_alternative(f"<html><body><h1 id='headline'>December news</h1><script>{NEWSLETTER_SCRIPT}</script>"
                        "<img src='https://tracker.remote.test/p.gif' onerror=\"document.title='handler ran'\">"
                        "<p>Read on.</p></body></html>", subtype="html")
    msg.add_attachment(b"MZ\x90\x00program", maintype="application", subtype="octet-stream",
                       filename="invoice.pdf.exe")
    return msg.as_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _one(node: Any) -> tuple[str, str, str]:
    with node.read() as conn:
        m = conn.execute(select(messages.c.id, messages.c.conversation_id, messages.c.case_id)
                         .order_by(messages.c.received_at.desc())).first()
    return str(m.id), str(m.conversation_id), str(m.case_id)


def test_the_page_shows_the_thread_and_claim_close_reopen_go_through_the_case_service(
        web: Any, node: Any, installed: Any, listener: Any) -> None:
    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    _msg_id, conv, case_id = _one(node)
    sign_in(web, installed.token)
    page = web.get(f"/conversations/{conv}")
    assert page.status_code == 200, page.text
    assert "Where is my order?" in page.text and "Hello, order 42 has not arrived." in page.text
    assert "Open, unassigned." in page.text
    token = csrf_of(page.text)
    r = web.post(f"/cases/{case_id}/claim", data={"csrf_token": token}, follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (303, f"/conversations/{conv}")
    assert "Open, held by you." in web.get(f"/conversations/{conv}").text
    web.post(f"/cases/{case_id}/close", data={"csrf_token": token})
    assert "Closed." in web.get(f"/conversations/{conv}").text
    web.post(f"/cases/{case_id}/reopen", data={"csrf_token": token})
    with node.read() as conn:
        row = conn.execute(select(cases).where(cases.c.id == case_id)).one()
    assert (row.state, row.assignee_id) == ("open", installed.user_id)
    # Closing a case twice is the service's refusal, in its four parts.
    web.post(f"/cases/{case_id}/close", data={"csrf_token": token})
    again = web.post(f"/cases/{case_id}/close", data={"csrf_token": token})
    assert again.status_code == 409 and "E_CASE_CLOSED" in again.text and "A case closes once." in again.text


def test_a_claim_without_the_csrf_token_is_refused(web: Any, node: Any, installed: Any, listener: Any) -> None:
    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    _, _, case_id = _one(node)
    sign_in(web, installed.token)
    r = web.post(f"/cases/{case_id}/claim", data={})
    assert r.status_code == 403 and "E_CSRF_INVALID" in r.text
    with node.read() as conn:
        assert conn.execute(select(cases.c.assignee_id).where(cases.c.id == case_id)).scalar_one() is None


def test_the_html_frame_is_sanitised_sandboxed_and_its_own_strict_document(
        web: Any, node: Any, installed: Any, listener: Any) -> None:
    deliver(listener, newsletter(), "news@remote.test", ["support@example.test"])
    msg_id, conv, _ = _one(node)
    sign_in(web, installed.token)
    page = web.get(f"/conversations/{conv}")
    assert f'src="/messages/{msg_id}/frame"' in page.text
    assert 'sandbox="allow-popups allow-popups-to-escape-sandbox"' in page.text
    assert "1 remote image not loaded" in page.text
    # The attachment's danger in words, with a download link that works with the session alone.
    assert "This is a program wearing a document&#39;s name. Do not open it." in page.text
    frame = web.get(f"/messages/{msg_id}/frame")
    assert frame.status_code == 200
    csp = frame.headers["content-security-policy"]
    assert "sandbox" in csp and "frame-ancestors 'self'" in csp and "script-src" not in csp
    assert "default-src 'none'" in csp and "https:" not in csp
    assert frame.headers["x-frame-options"] == "SAMEORIGIN"
    assert "December news" in frame.text and "<script" not in frame.text and "onerror" not in frame.text
    assert "tracker.remote.test" not in frame.text
    shown = web.get(f"/messages/{msg_id}/frame?remote_images=true")
    assert "tracker.remote.test" in shown.text and "https:" in shown.headers["content-security-policy"]
    # The conversation page itself keeps the page CSP: nobody frames it.
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_an_attachment_downloads_with_the_session_and_the_api_headers(
        web: Any, node: Any, installed: Any, listener: Any) -> None:
    deliver(listener, newsletter(), "news@remote.test", ["support@example.test"])
    msg_id, _, _ = _one(node)
    api_listing = web.get(f"/api/messages/{msg_id}", headers={"Authorization": f"Bearer {installed.token}"})
    part = next(a["part"] for a in api_listing.json()["message"]["attachment_list"] if not a["inline"])
    api_bytes = web.get(f"/api/messages/{msg_id}/attachments/{part}",
                        headers={"Authorization": f"Bearer {installed.token}"})
    assert web.get(f"/messages/{msg_id}/attachments/{part}", follow_redirects=False).status_code == 303
    sign_in(web, installed.token)
    got = web.get(f"/messages/{msg_id}/attachments/{part}")
    assert got.status_code == 200 and got.content == api_bytes.content == b"MZ\x90\x00program"
    for name in ("content-disposition", "content-type"):
        assert got.headers[name] == api_bytes.headers[name]


def test_a_reply_with_an_attachment_is_held_with_its_time_left_and_cancelled_inside_the_window(
        web: Any, node: Any, installed: Any, listener: Any) -> None:
    from mailnode.schema.outbound import send_manifests

    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    msg_id, conv, _ = _one(node)
    h = {"Authorization": f"Bearer {installed.token}"}
    assert web.patch(f"/api/mailboxes/{installed.mailbox_id}", json={"hold_window_seconds": 120},
                     headers=h).status_code == 200
    sign_in(web, installed.token)
    composer = web.get(f"/compose?mode=reply&message={msg_id}&conversation={conv}")
    assert composer.status_code == 200, composer.text
    # Filled in as POST /api/sends would: the sender with its display name, Re:, the quoted original.
    assert 'value="Customer &lt;customer@remote.test&gt;"' in composer.text
    assert 'value="Re: Where is my order?"' in composer.text
    assert "&gt; Hello, order 42 has not arrived." in composer.text
    token = csrf_of(composer.text)
    key = composer.text.split('name="idempotency_key" value="')[1].split('"')[0]
    form = {"csrf_token": token, "mode": "reply", "mailbox_id": installed.mailbox_id, "message_id": msg_id,
            "idempotency_key": key, "to": "Customer <customer@remote.test>", "subject": "Re: Where is my order?",
            "body": "It ships today.", "quote": "1"}
    sent = web.post("/compose", data=form, files=[("files", ("label.pdf", b"%PDF-1.4 label", "application/pdf"))],
                    follow_redirects=False)
    assert sent.status_code == 303, sent.text
    send_id = sent.headers["location"].rsplit("/", 1)[1]
    shown = web.get(sent.headers["location"])
    assert "Held: it leaves in 2 min 00 s unless you cancel it." in shown.text
    assert 'id="cancel"' in shown.text
    with node.read() as conn:
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id)).one()
    assert [a["filename"] for a in row.attachments] == ["label.pdf"] and row.state == "held"
    # Send pressed twice is one send: the composer's idempotency key.
    twice = web.post("/compose", data=form, files=[("files", ("label.pdf", b"%PDF-1.4 label", "application/pdf"))],
                     follow_redirects=False)
    assert twice.headers["location"] == f"/sends/{send_id}"
    cancelled = web.post(f"/sends/{send_id}/cancel", data={"csrf_token": token})
    assert "Cancelled: Stopped by a person before it left." in cancelled.text
    assert 'id="cancel"' not in cancelled.text
    thread = web.get(f"/conversations/{conv}").text
    assert "Cancelled: Stopped by a person before it left." in thread and "It ships today." in thread


def test_a_draft_saves_itself_and_comes_back_when_the_composer_reopens(
        web: Any, node: Any, installed: Any, listener: Any) -> None:
    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    msg_id, conv, _ = _one(node)
    sign_in(web, installed.token)
    composer = web.get(f"/compose?mode=reply&message={msg_id}&conversation={conv}")
    token = csrf_of(composer.text)
    saved = web.post("/compose/draft", data={"mailbox_id": installed.mailbox_id, "message_id": msg_id,
                                             "mode": "reply", "to": "customer@remote.test",
                                             "subject": "Re: Where is my order?", "body": "Half a thought"},
                     headers={"X-CSRF-Token": token})
    assert saved.status_code == 200, saved.text
    draft_id = saved.json()["draft_id"]
    web.post("/compose/draft", data={"mailbox_id": installed.mailbox_id, "draft_id": draft_id, "mode": "reply",
                                     "to": "customer@remote.test", "body": "A whole thought"},
             headers={"X-CSRF-Token": token})
    again = web.get(f"/compose?mode=reply&message={msg_id}&conversation={conv}")
    assert "A whole thought</textarea>" in again.text and f'value="{draft_id}"' in again.text
    assert "Draft restored" in again.text


PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
       b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")


def test_an_inline_image_shows_in_the_frame_as_data_since_the_frame_has_no_origin(
        web: Any, node: Any, installed: Any, listener: Any) -> None:
    msg = EmailMessage()
    msg["From"] = "News <news@remote.test>"
    msg["To"] = "support@example.test"
    msg["Subject"] = "With a logo"
    msg["Message-ID"] = "<logo1@remote.test>"
    msg.set_content("Logo.")
    msg.add_alternative("<p>Our logo:</p><img src='cid:logo@remote.test' alt='logo'>", subtype="html")
    msg.get_payload()[1].add_related(PNG, maintype="image", subtype="png", cid="<logo@remote.test>")
    raw = msg.as_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    deliver(listener, raw, "news@remote.test", ["support@example.test"])
    msg_id, _, _ = _one(node)
    sign_in(web, installed.token)
    frame = web.get(f"/messages/{msg_id}/frame")
    import base64

    assert f'src="data:image/png;base64,{base64.b64encode(PNG).decode()}"' in frame.text
    assert f"/api/messages/{msg_id}/attachments/" not in frame.text


def test_frame_document_writes_each_shown_part_once_and_leaves_longer_part_numbers_alone() -> None:
    from mailnode.web.conversation import frame_document, referenced_parts

    html = ('<img src="/api/messages/msg_1/attachments/1.2"><img src="/api/messages/msg_1/attachments/1.20">'
            '<img src="/api/messages/msg_1/attachments/1.2">')
    assert referenced_parts(html, "msg_1") == ["1.2", "1.20"]
    doc = frame_document(html, "msg_1", {"1.2": ("image/png", b"\x01")})
    assert doc.count('src="data:image/png;base64,AQ=="') == 2
    assert 'src="/api/messages/msg_1/attachments/1.20"' in doc
    assert doc.startswith("<!doctype html>")


def _send_form(web: Any, url: str, **fields: str) -> Any:
    composer = web.get(url)
    assert composer.status_code == 200, composer.text
    key = composer.text.split('name="idempotency_key" value="')[1].split('"')[0]
    return composer, web.post("/compose", data={"csrf_token": csrf_of(composer.text), "idempotency_key": key,
                                                **fields}, follow_redirects=False)


def test_a_forward_and_a_new_message_are_sealed_like_the_api_seals_them(
        web: Any, node: Any, installed: Any, listener: Any, sink: Any) -> None:
    from mailnode.schema.outbound import send_manifests

    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    msg_id, conv, _ = _one(node)
    sign_in(web, installed.token)
    composer, sent = _send_form(web, f"/compose?mode=forward&message={msg_id}&conversation={conv}",
                                mode="forward", mailbox_id=installed.mailbox_id, message_id=msg_id,
                                to="Billing <billing@remote.test>", subject="Fwd: Where is my order?",
                                body="Can you check this one?")
    assert 'value="Fwd: Where is my order?"' in composer.text and "Forwarded message" in composer.text
    assert sent.status_code == 303, sent.text
    _, new = _send_form(web, f"/compose?mode=new&mailbox={installed.mailbox_id}", mode="new",
                        mailbox_id=installed.mailbox_id, to="dana@remote.test", subject="Hello",
                        body="A new conversation.")
    assert new.status_code == 303, new.text
    with node.read() as conn:
        rows = conn.execute(select(send_manifests).order_by(send_manifests.c.sealed_at, send_manifests.c.id)).all()
    assert [(r.subject, r.to_addresses) for r in rows] == [
        ("Fwd: Where is my order?", ["billing@remote.test"]), ("Hello", ["dana@remote.test"])]
    assert "Billing" in str(rows[0].display_names)
    # The forwarded message goes under the person's words, as POST /api/sends forwards.
    text = web.get(f"/api/sends/{rows[0].id}", headers={"Authorization": f"Bearer {installed.token}"}
                   ).json()["send"]["body"]["text"]
    assert text.startswith("Can you check this one?") and "Hello, order 42 has not arrived." in text
    assert web.get("/compose?mode=sideways&message=x").status_code == 422


def test_assign_to_a_teammate_lists_who_may_work_the_mailbox_and_assigns_through_the_claim(
        web: Any, node: Any, installed: Any, listener: Any) -> None:
    from tests.web.conversation.test_collision import _person

    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    _, conv, case_id = _one(node)
    dana = _person(node, installed, "dana@example.test", "Dana", "send.propose")
    _person(node, installed, "rita@example.test", "Rita Reader", "mailbox.content.read")
    sign_in(web, installed.token)
    page = web.get(f"/conversations/{conv}")
    assert f'<option value="{dana}">Dana</option>' in page.text and "Rita Reader" not in page.text
    r = web.post(f"/cases/{case_id}/claim", data={"csrf_token": csrf_of(page.text), "assignee": dana})
    assert r.status_code == 200 and "Open, held by Dana." in r.text
    with node.read() as conn:
        assert conn.execute(select(cases.c.assignee_id).where(cases.c.id == case_id)).scalar_one() == dana


def test_a_reply_sent_while_a_colleague_holds_the_case_is_refused_in_words_and_seals_nothing(
        web: Any, node: Any, installed: Any, listener: Any) -> None:
    # The page locks its fields while Dana holds the case; a form posted anyway (a stale page, no script) is
    # refused by the send service the API uses, in its four parts.
    import html

    from mailnode.mail import cases as case_service
    from mailnode.schema.outbound import send_manifests
    from tests.web.conversation.test_collision import _person

    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    msg_id, conv, case_id = _one(node)
    dana = _person(node, installed, "dana@example.test", "Dana", "send.propose")
    sign_in(web, installed.token)
    composer = web.get(f"/compose?mode=reply&message={msg_id}&conversation={conv}")
    key = composer.text.split('name="idempotency_key" value="')[1].split('"')[0]
    with node.begin() as conn:
        case_service.claim(conn, org_id=installed.org_id, principal_id=dana, at=node.clock.now(), case_id=case_id)
    sent = web.post("/compose", data={"csrf_token": csrf_of(composer.text), "idempotency_key": key, "mode": "reply",
                                      "mailbox_id": installed.mailbox_id, "message_id": msg_id,
                                      "to": "customer@remote.test", "subject": "Re: Where is my order?",
                                      "body": "On its way."}, follow_redirects=False)
    assert sent.status_code == 409
    shown = html.unescape(sent.text)
    assert "Dana holds this conversation's case; your reply was not sent." in shown
    assert "E_REPLY_CASE_HELD" in shown and "Take the case over first" in shown
    with node.read() as conn:
        assert conn.execute(select(send_manifests.c.id)).first() is None


def test_the_page_costs_the_same_statements_with_one_message_or_five(
        web: Any, node: Any, installed: Any, listener: Any) -> None:
    # Each message's reading used to cost its own four statements (the row, the relation, purges,
    # attachments): the thread has read the first three, and the attachments of all are one statement.
    from sqlalchemy import event

    def statements(conv: str) -> int:
        web.get(f"/conversations/{conv}")  # a first request may write the session's last-seen time
        seen: list[str] = []

        def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            seen.append(statement)

        event.listen(node.engine, "before_cursor_execute", count)
        try:
            r = web.get(f"/conversations/{conv}")
        finally:
            event.remove(node.engine, "before_cursor_execute", count)
        assert r.status_code == 200, r.text
        return len([s for s in seen if not s.lstrip().upper().startswith(("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT",
                                                                           "RELEASE"))])

    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    _, conv, _ = _one(node)
    sign_in(web, installed.token)
    one = statements(conv)
    for n in range(2, 6):
        deliver(listener, inbound(subject="Re: Where is my order?", message_id=f"<more{n}@remote.test>",
                                  In_Reply_To="<q1@remote.test>", References="<q1@remote.test>"),
                "customer@remote.test", ["support@example.test"])
    with node.read() as conn:
        assert len(conn.execute(select(messages.c.id).where(messages.c.conversation_id == conv)).all()) == 5
    assert statements(conv) == one
