"""Turn what an author asked for (a reply with blanks, a forward) into a complete ``SealRequest``.

Reads the stored message (and, for a forward as an attachment, its raw bytes), then fills the blanks with
``outbound.answer``'s pure rules. It decides nothing the seal decides: the composition it returns is sealed
by ``outbound.seal.seal`` like any other, through the same gates, and the seal checks the reply parent's
authority again. Who may name a message here: a reply parent, whoever ``outbound.parents.may_reply_to``
allows (``E_NO_SUCH_PARENT``, 404, otherwise); a forwarded message, whoever holds
``mailbox.content.read`` on its mailbox (``E_NO_SUCH_MESSAGE``, 404): a forward sends its content on.
Content retention deleted is refused ``E_CONTENT_DELETED`` (410) when a quote or forward needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from email.parser import HeaderParser
from email.policy import compat32
from typing import Any, Literal

from sqlalchemy import Connection, select

from mailnode import budgets
from mailnode.authz import holds
from mailnode.errors import MailnodeError, invalid, not_found
from mailnode.ids import parse_id, prefix_of
from mailnode.node import Node
from mailnode.outbound import answer
from mailnode.outbound.parents import may_reply_to
from mailnode.outbound.render import OutboundAttachment
from mailnode.outbound.seal import SealRequest, no_such_parent
from mailnode.retention import io as retention_io
from mailnode.schema.mail import mailbox_addresses
from mailnode.schema.mail_messages import messages

ForwardAs = Literal["inline", "attachment"]


@dataclass(frozen=True)
class Ask:
    """A composition with blanks. ``request.subject`` is used only when ``subject_given``.

    Attributes:
        request: the composition as given (recipients may be empty for a reply).
        subject_given: the author typed a Subject (else a reply's or forward's is written).
        reply_all: a reply also goes to the parent's other To and Cc recipients.
        quote: a reply quotes the parent's text below the author's.
        forward_message_id: the ``msg_...`` forwarded, or None.
        forward_as: ``inline`` (its text in the body) or ``attachment`` (its bytes as message/rfc822).
    """

    request: SealRequest
    subject_given: bool = True
    reply_all: bool = False
    quote: bool = False
    forward_message_id: str | None = None
    forward_as: ForwardAs = "inline"


def _conflicting(ask: Ask) -> MailnodeError | None:
    """The 422 for asks that contradict each other (pure)."""
    r = ask.request
    if ask.forward_message_id is not None and r.in_reply_to_message_id is not None:
        return invalid("E_REQUEST_INVALID", "A send is either a reply or a forward, not both.",
                       "A forward starts a new conversation; a reply continues its parent's.",
                       "Send in_reply_to_message_id or forward_message_id, not both.")
    if r.in_reply_to_message_id is None and (ask.reply_all or ask.quote):
        return invalid("E_REQUEST_INVALID", "reply_all and quote need in_reply_to_message_id.",
                       "Both read the message being answered.", "Name the message you reply to, or drop them.")
    if r.in_reply_to_message_id is None and ask.forward_message_id is None and not ask.subject_given:
        return invalid("E_REQUEST_INVALID", "A new send needs a subject.",
                       "Only a reply or a forward has a Subject to derive one from.", "Send a subject.")
    return None


#: Header fields a reply reads addresses from.
ADDRESS_FIELDS = frozenset({"from", "reply-to", "to", "cc"})
#: The end of a header section (RFC 5322 §2.1: an empty line), with either line ending.
_HEADER_END = re.compile(rb"\r?\n\r?\n")


def raw_address_headers(raw: bytes) -> tuple[tuple[str, str], ...]:
    """The From, Reply-To, To and Cc fields of ``raw`` as received (encoded words still encoded), unfolded. Pure.

    The stored headers are decoded for display, which loses the quoting a display name needs (an encoded
    ``"Desk, Müller"`` decodes to a bare comma), so a reply reads the addresses from the received bytes.
    Only the header section is read, at most ``budgets.PARSE_HEADERS_TOTAL_CHARS`` bytes of it.
    """
    end = _HEADER_END.search(raw, 0, budgets.PARSE_HEADERS_TOTAL_CHARS)
    head = raw[: end.start() if end else budgets.PARSE_HEADERS_TOTAL_CHARS].decode("utf-8", "replace")
    parsed = HeaderParser(policy=compat32).parsestr(head + "\r\n\r\n", headersonly=True)
    return tuple((name, " ".join(str(value).split())) for name, value in parsed.raw_items()
                 if name.lower() in ADDRESS_FIELDS)


def parent_facts(row: Any, headers: tuple[tuple[str, str], ...]) -> answer.ParentFacts:
    """``answer.ParentFacts`` from a ``messages`` row and its address ``headers`` (``raw_address_headers``)."""
    return answer.ParentFacts(message_id=row.id, subject=row.subject, headers=headers,
                              envelope_from=row.envelope_from or "", envelope_to=row.envelope_to or "",
                              reply_refusal=row.reply_refusal, from_name=row.from_name, from_address=row.from_address)


def _no_message(message_id: str) -> MailnodeError:
    return not_found("E_NO_SUCH_MESSAGE", f"No message {message_id}.",
                     fix="List messages with GET /api/mailboxes/{id}/messages.", message_id=message_id)


def _text_of(conn: Connection, row: Any) -> str | None:
    """The stored text body, refused ``E_CONTENT_DELETED`` (410) once retention deleted the content."""
    refusal = retention_io.content_refusal(conn, source_id=row.id)
    if refusal is not None:
        raise refusal
    return row.text_body


def compose(node: Node, *, org_id: str, author_id: str, ask: Ask) -> SealRequest:
    """The complete ``SealRequest`` for ``ask`` (see the module docstring and ``outbound.answer``).

    Raises ``E_REQUEST_INVALID`` (422) for contradicting asks, ``E_NO_SUCH_PARENT`` / ``E_NO_SUCH_MESSAGE``
    (404), ``E_CONTENT_DELETED`` (410), ``answer.reply_recipients``' codes (422), and ``E_EVIDENCE_MISSING``
    (500) when a forwarded message's bytes are gone without a purge record. A plain new send comes back
    unchanged (no statement).
    """
    refusal = _conflicting(ask)
    if refusal is not None:
        raise refusal
    r = ask.request
    if r.in_reply_to_message_id is None and ask.forward_message_id is None:
        return r
    with node.read() as conn:
        if r.in_reply_to_message_id is not None:
            return _reply(node, conn, org_id=org_id, author_id=author_id, ask=ask)
        return _forward(node, conn, org_id=org_id, author_id=author_id, ask=ask)


def _address_headers(node: Node, conn: Connection, row: Any) -> tuple[tuple[str, str], ...]:
    """The parent's address headers as received; none once retention deleted its content (the reply then
    goes to the From address the message row keeps)."""
    if retention_io.content_refusal(conn, source_id=row.id) is not None:
        return ()
    return raw_address_headers(retention_io.read_content(node, source_id=row.id, digest=row.raw_sha256))


def _reply(node: Node, conn: Connection, *, org_id: str, author_id: str, ask: Ask) -> SealRequest:
    r = ask.request
    parent_id = str(r.in_reply_to_message_id)
    parse_id(parent_id, "msg", "in_reply_to_message_id")
    row = conn.execute(select(messages).where(messages.c.id == parent_id, messages.c.org_id == org_id)).first()
    if row is None or not may_reply_to(conn, org_id=org_id, author_id=author_id, parent_id=parent_id,
                                       parent_mailbox_id=row.mailbox_id):
        raise no_such_parent(parent_id)
    own = frozenset(a.lower() for a in conn.execute(select(mailbox_addresses.c.address).where(
        mailbox_addresses.c.mailbox_id == row.mailbox_id)).scalars())
    facts = parent_facts(row, _address_headers(node, conn, row))
    to, cc = answer.reply_recipients(facts, own_addresses=own, reply_all=ask.reply_all,
                                     butler=prefix_of(author_id) == "btl", named=[*r.to, *r.cc, *r.bcc])
    body = r.body
    if ask.quote:
        quoted = answer.quote_original(_text_of(conn, row), at=row.date or row.received_at, from_name=row.from_name,
                                       from_address=row.from_address)
        body = f"{body.rstrip()}\n\n{quoted}" if body.strip() else quoted
    subject = r.subject if ask.subject_given else answer.reply_subject(row.subject)
    return replace(r, to=[*r.to, *to], cc=[*r.cc, *cc], subject=subject, body=body)


def _forward(node: Node, conn: Connection, *, org_id: str, author_id: str, ask: Ask) -> SealRequest:
    r = ask.request
    message_id = str(ask.forward_message_id)
    parse_id(message_id, "msg", "forward_message_id")
    row = conn.execute(select(messages).where(messages.c.id == message_id, messages.c.org_id == org_id)).first()
    if row is None or not holds(conn, org_id, author_id, "mailbox.content.read", "mailbox", row.mailbox_id):
        raise _no_message(message_id)
    subject = r.subject if ask.subject_given else answer.forward_subject(row.subject)
    if ask.forward_as == "attachment":
        raw = retention_io.read_content(node, source_id=row.id, digest=row.raw_sha256)
        attached = OutboundAttachment(filename=answer.forward_filename(row.subject), content_type="message/rfc822",
                                      data=raw)
        return replace(r, subject=subject, attachments=(*r.attachments, attached))
    to_header = next((v for n, v in (row.headers or []) if str(n).lower() == "to"), None)
    block = answer.forwarded_inline(_text_of(conn, row), subject=row.subject, at=row.date or row.received_at,
                                    from_name=row.from_name, from_address=row.from_address, to=to_header)
    body = f"{r.body.rstrip()}\n\n{block}" if r.body.strip() else block
    return replace(r, subject=subject, body=body)
