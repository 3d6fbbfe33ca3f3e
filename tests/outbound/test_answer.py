"""Issue 15's decisions as tables, no database: reply Subject and recipients, display names, what a send may
carry, and who reads a send's body in the thread."""

from __future__ import annotations

from datetime import UTC, datetime
from email import message_from_bytes
from email.policy import default as default_policy

import pytest

from mailnode import budgets
from mailnode.addresses import parse_recipient
from mailnode.errors import MailnodeError
from mailnode.mail.thread import BodyGrant, SendRelations, author_kind, send_body_grant
from mailnode.outbound.answer import (
    ParentFacts,
    forward_filename,
    forward_subject,
    quote_original,
    reply_recipients,
    reply_subject,
)
from mailnode.outbound.compose import raw_address_headers
from mailnode.outbound.content import check_content, decode_attachment
from mailnode.outbound.render import OutboundAttachment, OutboundMessage, attachments_of, render


@pytest.mark.parametrize(("parent", "expected"), [
    ("Where is my order?", "Re: Where is my order?"),
    ("Re: Where is my order?", "Re: Where is my order?"),
    ("RE: re:  Where is my order?", "Re: Where is my order?"),
    ("Aw: AW: Rechnung", "Re: Rechnung"),
    ("SV: Antw: Ref: x", "Re: x"),
    ("Re[2]: Re(3): x", "Re: x"),
    ("Fwd: Report", "Re: Fwd: Report"),
    ("VS: x", "Re: VS: x"),
    ("Regarding: x", "Re: Regarding: x"),
    ("  folded\r\n   subject ", "Re: folded subject"),
    ("", "Re:"),
    (None, "Re:"),
])
def test_reply_subject_never_reads_re_re(parent: str | None, expected: str) -> None:
    assert reply_subject(parent) == expected


@pytest.mark.parametrize(("parent", "expected"), [
    ("Report", "Fwd: Report"), ("Fwd: FW: Report", "Fwd: Report"), ("Re: WG: Report", "Fwd: Report"),
    (None, "Fwd:"),
])
def test_forward_subject(parent: str | None, expected: str) -> None:
    assert forward_subject(parent) == expected


def _facts(*headers: tuple[str, str], envelope_from: str = "bounce@remote.test", refusal: str | None = None
           ) -> ParentFacts:
    return ParentFacts(message_id="msg_1", subject="x", headers=headers, envelope_from=envelope_from,
                       envelope_to="support@example.test", reply_refusal=refusal, from_name="Cy",
                       from_address="cy@remote.test")


OWN = frozenset({"support@example.test"})
FROM = ("From", "Cy <cy@remote.test>")
REPLY_TO = ("Reply-To", '"Desk, =?utf-8?q?M=C3=BCller?=" <desk@remote.test>')
TO = ("To", "support@example.test, Dana <dana@remote.test>")
CC = ("Cc", "eve@remote.test, SUPPORT@example.test, not an address")


@pytest.mark.parametrize(("headers", "reply_all", "butler", "named", "expected"), [
    # A person: Reply-To when present, else From; display names kept (re-quoted when they need it).
    ((FROM,), False, False, (), (("Cy <cy@remote.test>",), ())),
    ((FROM, REPLY_TO), False, False, (), (('"Desk, Müller" <desk@remote.test>',), ())),
    # No usable header: the From the message row keeps.
    ((), False, False, (), (("Cy <cy@remote.test>",), ())),
    # Reply-all: the other To and Cc, minus the mailbox's own addresses (any case) and anything invalid.
    ((FROM, TO, CC), True, False, (), (("Cy <cy@remote.test>",), ("Dana <dana@remote.test>", "eve@remote.test"))),
    # Named recipients are kept; nothing is filled, reply-all does not repeat them.
    ((FROM, TO, CC), True, False, ("Eve <EVE@remote.test>",), ((), ("Dana <dana@remote.test>",))),
    # A Butler: the envelope sender, never From or Reply-To.
    ((FROM, REPLY_TO), False, True, (), (("bounce@remote.test",), ())),
])
def test_reply_recipients(headers: tuple[tuple[str, str], ...], reply_all: bool, butler: bool,
                          named: tuple[str, ...], expected: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
    assert reply_recipients(_facts(*headers), own_addresses=OWN, reply_all=reply_all, butler=butler,
                            named=named) == expected


@pytest.mark.parametrize(("facts", "reply_all", "butler", "code"), [
    (_facts(FROM), True, True, "E_BUTLER_REPLY_ALL"),
    (_facts(FROM, envelope_from=""), False, True, "E_BUTLER_PARENT_HAS_NO_RETURN_PATH"),
    (_facts(FROM, envelope_from="support@example.test"), False, True, "E_BUTLER_REPLY_WOULD_LOOP"),
    (_facts(FROM, refusal="auto_reply"), False, True, "E_BUTLER_REPLY_REFUSED"),
    (ParentFacts("msg_1", "x", (("From", "nobody"),), "b@remote.test", "support@example.test", None),
     False, False, "E_REPLY_HAS_NO_RECIPIENT"),
])
def test_reply_recipients_refusals(facts: ParentFacts, reply_all: bool, butler: bool, code: str) -> None:
    with pytest.raises(MailnodeError) as err:
        reply_recipients(facts, own_addresses=OWN, reply_all=reply_all, butler=butler)
    assert err.value.code == code


def test_raw_address_headers_keep_encoded_quoting_and_stop_at_the_body() -> None:
    raw = (b"From: Cy <cy@remote.test>\r\nSubject: x\r\nReply-To: \"Desk,\r\n M\xc3\xbcller\" <d@remote.test>\r\n"
           b"\r\nTo: body@remote.test\r\n")
    assert raw_address_headers(raw) == (("From", "Cy <cy@remote.test>"),
                                        ("Reply-To", '"Desk, Müller" <d@remote.test>'))


@pytest.mark.parametrize(("value", "name", "address"), [
    ("alice@Example.TEST", None, "alice@example.test"),
    ("Alice Müller <alice@example.test>", "Alice Müller", "alice@example.test"),
    ('"Müller, Alice" <alice@example.test>', "Müller, Alice", "alice@example.test"),
    ("=?utf-8?q?Alice_M=C3=BCller?= <alice@example.test>", "Alice Müller", "alice@example.test"),
    ("<alice@example.test>", None, "alice@example.test"),
    ('"" <alice@example.test>', None, "alice@example.test"),
])
def test_parse_recipient_takes_display_names(value: str, name: str | None, address: str) -> None:
    got = parse_recipient(value)
    assert (got.display_name, got.address) == (name, address)


@pytest.mark.parametrize(("value", "code"), [
    ("a@example.test, b@example.test", "E_ADDRESS_MALFORMED"),
    ("team: a@example.test;", "E_ADDRESS_MALFORMED"),
    ("x <a@example.test> y", "E_ADDRESS_MALFORMED"),
    ("Alice <not-an-address>", "E_ADDRESS_MALFORMED"),
    ("Alice\r\nBcc: x@example.test <a@example.test>", "E_HEADER_INJECTION"),
    ("=?utf-8?q?A=0D=0ABcc:_x@example.test?= <a@example.test>", "E_HEADER_INJECTION"),
])
def test_parse_recipient_refusals(value: str, code: str) -> None:
    with pytest.raises(MailnodeError) as err:
        parse_recipient(value)
    assert err.value.code == code


def _att(name: str = "a.pdf", ctype: str = "application/pdf", size: int = 3) -> OutboundAttachment:
    return OutboundAttachment(name, ctype, b"x" * size)


@pytest.mark.parametrize(("body", "html", "attachments", "code"), [
    ("x", "<p>x</p>", (_att(),), None),
    ("x", None, tuple(_att() for _ in range(budgets.SEND_ATTACHMENTS_MAX)), None),
    ("x", None, tuple(_att() for _ in range(budgets.SEND_ATTACHMENTS_MAX + 1)), "E_TOO_MANY_ATTACHMENTS"),
    ("x", "a\x00b", (), "E_TEXT_MALFORMED"),
    ("x", None, (_att(name=""),), "E_ATTACHMENT_MALFORMED"),
    ("x", None, (_att(name="a" * (budgets.SEND_ATTACHMENT_FILENAME_MAX_CHARS + 1)),), "E_ATTACHMENT_MALFORMED"),
    ("x", None, (_att(name="dir/a.pdf"),), "E_ATTACHMENT_MALFORMED"),
    ("x", None, (_att(name="a\r\nb.pdf"),), "E_ATTACHMENT_MALFORMED"),
    ("x", None, (_att(ctype="pdf"),), "E_ATTACHMENT_MALFORMED"),
    ("x", None, (_att(ctype="multipart/mixed"),), "E_ATTACHMENT_MALFORMED"),
    ("", None, (_att(size=budgets.SEND_CONTENT_MAX_BYTES),), None),
    ("x", None, (_att(size=budgets.SEND_CONTENT_MAX_BYTES),), "E_SEND_TOO_LARGE"),
    ("", "y", (_att(size=budgets.SEND_CONTENT_MAX_BYTES),), "E_SEND_TOO_LARGE"),
])
def test_check_content(body: str, html: str | None, attachments: tuple[OutboundAttachment, ...],
                       code: str | None) -> None:
    if code is None:
        check_content(body, html, attachments)
        return
    with pytest.raises(MailnodeError) as err:
        check_content(body, html, attachments)
    assert err.value.code == code


def test_decode_attachment_refuses_what_is_not_base64() -> None:
    assert decode_attachment(0, "a.txt", "Text/Plain", "aGk=").data == b"hi"
    with pytest.raises(MailnodeError) as err:
        decode_attachment(1, "a.txt", "text/plain", "not base64!")
    assert (err.value.code, err.value.detail["index"]) == ("E_ATTACHMENT_MALFORMED", 1)


@pytest.mark.parametrize(("author", "propose", "decide", "content", "mail_class", "expected"), [
    (True, False, False, False, "correspondence", BodyGrant.AUTHOR),
    (True, True, True, True, "correspondence", BodyGrant.AUTHOR),
    (False, True, False, False, "correspondence", BodyGrant.RELEASE_OR_CANCEL),
    (False, True, True, True, "correspondence", BodyGrant.RELEASE_OR_CANCEL),
    (False, False, True, False, "correspondence", BodyGrant.APPROVE),
    (False, False, True, True, "correspondence", BodyGrant.APPROVE),
    (False, False, False, True, "correspondence", BodyGrant.CONTENT_READ),
    (False, False, False, False, "correspondence", None),
    # A mailed sign-in or verification code: its author alone, whatever the reader may do in the mailbox.
    (True, False, False, False, "realtime", BodyGrant.AUTHOR),
    (False, True, True, True, "realtime", None),
    (False, True, True, True, "deferrable", None),
    (False, True, True, True, "a-class-not-yet-known", None),
])
def test_who_reads_a_sends_body(author: bool, propose: bool, decide: bool, content: bool, mail_class: str,
                                expected: BodyGrant | None) -> None:
    assert send_body_grant(SendRelations(is_author=author, may_propose=propose, may_decide=decide,
                                         may_read_content=content, mail_class=mail_class)) is expected


def test_the_bodies_people_read_are_the_bodies_search_indexes() -> None:
    from mailnode.mail.thread import BODY_SHARED_CLASSES
    from mailnode.search.documents import BODY_INDEXED_CLASSES

    assert BODY_SHARED_CLASSES == BODY_INDEXED_CLASSES


@pytest.mark.parametrize(("author_id", "auto", "kind"), [
    ("usr_01HZZZZZZZZZZZZZZZZZZZZZZZ", None, "person"), ("btl_01HZZZZZZZZZZZZZZZZZZZZZZZ", "auto-replied", "butler"),
    ("app_01HZZZZZZZZZZZZZZZZZZZZZZZ", None, "application"),
    ("usr_01HZZZZZZZZZZZZZZZZZZZZZZZ", "auto-generated", "node"),
    ("tok_01HZZZZZZZZZZZZZZZZZZZZZZZ", None, "unknown"),
])
def test_author_kind(author_id: str, auto: str | None, kind: str) -> None:
    assert author_kind(author_id, auto) == kind


def test_quote_and_forward_filename() -> None:
    at = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    assert quote_original("Hi\r\n\r\nthanks\n", at=at, from_name="Cy", from_address="cy@remote.test") == (
        "On 2026-03-01 09:30 UTC, Cy <cy@remote.test> wrote:\n> Hi\n>\n> thanks\n")
    cut = quote_original("x" * 50, at=None, from_name=None, from_address=None, limit=10)
    assert cut == "On an unknown date, the sender wrote:\n> xxxxxxxxxx\n> [... quoted text shortened]\n"
    assert forward_filename("Re: a/b\\c <script>") == "Re_ a_b_c _script.eml"
    assert forward_filename(None) == "message.eml"


def test_render_writes_encoded_names_alternative_and_attachments() -> None:
    raw = render(OutboundMessage(
        from_address="support@example.test", to=("alice@example.test",), cc=("bob@example.test",),
        subject="Hi", date=datetime(2026, 3, 1, tzinfo=UTC), message_id="<snd_1@example.test>", body="text",
        names=(("alice@example.test", "Alice Müller"), ("bob@example.test", "Bob, Jr")), html="<p>text</p>",
        attachments=(OutboundAttachment("a.pdf", "application/pdf", b"%PDF"),)))
    head = raw.split(b"\r\n\r\n")[0]
    assert raw.isascii() and b"To: Alice =?utf-8?q?M=C3=BCller?= <alice@example.test>" in head
    assert b'Cc: "Bob, Jr" <bob@example.test>' in head
    msg = message_from_bytes(raw, policy=default_policy)
    assert msg.get_content_type() == "multipart/mixed"
    assert [p.get_content_type() for p in msg.walk()] == ["multipart/mixed", "multipart/alternative", "text/plain",
                                                          "text/html", "application/pdf"]


@pytest.mark.parametrize("attachment", [
    OutboundAttachment("a.pdf", "application/pdf", b"%PDF-1.4 \x00\xff"),
    # A text attachment: the stdlib answers its content as a str, which once made every dispatch of such a send
    # fail (the send stayed held, the sweep raising each time).
    OutboundAttachment("details.txt", "text/plain", b"order 42: shipped\r\n"),
    OutboundAttachment("notes.txt", "text/plain", "Grüße, crème brûlée".encode("latin-1")),
    OutboundAttachment("page.html", "text/html", b"<p>hi</p>"),
    OutboundAttachment("data.csv", "text/csv", b"a,b\r\n1,2\r\n"),
    OutboundAttachment("empty.bin", "application/octet-stream", b""),
])
def test_attachments_read_back_from_the_rendered_message_are_the_bytes_sealed(
        attachment: OutboundAttachment) -> None:
    raw = render(OutboundMessage(
        from_address="support@example.test", to=("alice@example.test",), subject="Hi",
        date=datetime(2026, 3, 1, tzinfo=UTC), message_id="<snd_1@example.test>", body="text",
        attachments=(attachment,)))
    assert attachments_of(raw) == (attachment,)
