"""RFC 5322 bytes for an outbound send, built by mailnode itself with the stdlib ``email`` package.

``render(message)`` is pure: the same ``OutboundMessage`` gives the same bytes (the Date is an input, the
Message-ID is derived from the send id). The caller validates addresses first (``addresses``); ``render``
re-checks every header value (``addresses.header_fault``: line breaks, control characters) so no path can
inject a header. Bcc is carried for the
envelope and is never written (RFC 5322 §3.6.3 lets the sender omit it; mailnode always does, so one
Bcc recipient is never shown to another). Display names are written beside their addresses and RFC 2047
encoded when they are not ASCII (``email.headerregistry``). A send with an HTML part is
multipart/alternative (text first, RFC 2046 §5.1.4); one with attachments is multipart/mixed around it, each
attachment ``Content-Disposition: attachment`` with its filename RFC 2231 encoded when not ASCII, and a
forwarded message attached as ``message/rfc822`` (RFC 2046 §5.2.1). Also here: the body normaliser and the
SHA-256 helper used for evidence.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email import message_from_bytes
from email import policy as email_policy
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime
from typing import Literal

from mailnode import budgets
from mailnode.addresses import reject_header_injection
from mailnode.errors import MailnodeError, invalid
from mailnode.outbound.mail_fields import header_allowed

#: ``Auto-Submitted`` values mailnode writes (RFC 3834 §5): a Butler's mail answers a message
#: (``auto-replied``); the node's own notices are generated (``auto-generated``).
AutoSubmitted = Literal["auto-replied", "auto-generated"]
AUTO_SUBMITTED_VALUES: tuple[str, ...] = ("auto-replied", "auto-generated")

#: The policy used to serialise: RFC 5322 line endings (CRLF) and 7-bit output, so non-ASCII headers
#: become RFC 2047 encoded words and the body is quoted-printable or base64; no SMTPUTF8 or 8BITMIME
#: is needed from the smarthost.
_POLICY = SMTP.clone(cte_type="7bit")

#: A msg-id as mailnode accepts it for In-Reply-To/References (RFC 5322 §3.6.4): angle brackets around
#: ``left@right`` with no whitespace or further brackets.
_MSG_ID = re.compile(r"^<[^<>\s@]+@[^<>\s@]+>$")


@dataclass(frozen=True)
class OutboundAttachment:
    """One attachment as the seal stored it.

    Attributes:
        filename: the name written in ``Content-Disposition`` (already checked: one line, no path).
        content_type: ``type/subtype`` (lower-case); ``message/rfc822`` attaches a whole message.
        data: the bytes.
    """

    filename: str
    content_type: str
    data: bytes


@dataclass(frozen=True)
class OutboundMessage:
    """What ``render`` needs, all already validated and normalised.

    Attributes:
        from_address: the mailbox address (``local@domain``, A-label domain).
        from_name: display name for From, or None.
        to, cc: recipient addresses written in the To and Cc headers (may be empty; order kept).
        bcc: recipients that get the message but appear in no header.
        subject: the Subject text (no line breaks or control characters but HT).
        date: aware datetime of the seal, written as the Date header (RFC 5322 §3.3).
        message_id: ``<snd_...@sending-domain>`` (see ``make_message_id``).
        in_reply_to: the parent's msg-id, or None.
        references: the parent's References chain followed by the parent's msg-id, oldest first; it is
            bounded on output by ``bound_references``.
        body: the typed body text (rendered as text/plain UTF-8).
        auto_submitted: ``auto-replied`` (a Butler's mail), ``auto-generated`` (node notices) or None.
        names: ``(address lower-cased, display name)`` pairs for the To and Cc addresses that have one.
        html: an HTML alternative to ``body`` (text/html UTF-8), or None.
        attachments: attached after the body, in order.
        reply_to: ``(address, display name or "")`` pairs written as Reply-To (RFC 5322 §3.6.2), or ().
        extra_headers: custom headers ``(name, value)`` (``outbound.mail_fields.header_allowed`` names only),
            written after the node's own headers.
        plain: False for an HTML-only message: the body is the ``html`` part alone (text/html), no text part.
    """

    from_address: str
    to: tuple[str, ...]
    subject: str
    date: datetime
    message_id: str
    body: str
    from_name: str | None = None
    cc: tuple[str, ...] = ()
    bcc: tuple[str, ...] = ()
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    auto_submitted: AutoSubmitted | None = None
    names: tuple[tuple[str, str], ...] = ()
    html: str | None = None
    attachments: tuple[OutboundAttachment, ...] = ()
    reply_to: tuple[tuple[str, str], ...] = ()
    extra_headers: tuple[tuple[str, str], ...] = ()
    plain: bool = True


def make_message_id(send_id: str, sending_domain: str) -> str:
    """The RFC 5322 §3.6.4 Message-ID of a send: ``<snd_...@sending-domain>`` (domain lower-cased)."""
    reject_header_injection("Message-ID", send_id)
    reject_header_injection("Message-ID", sending_domain)
    return f"<{send_id}@{sending_domain.lower()}>"


def bound_references(chain: Sequence[str], limit: int = budgets.SEND_REFERENCES_EMITTED_MAX) -> tuple[str, ...]:
    """Deduplicate a References chain (oldest first) and keep at most ``limit`` ids: the root and the newest.

    RFC 5322 §3.6.4 builds References as the parent's References plus the parent's Message-ID; long
    threads grow without bound, so mailnode keeps the first id (the thread root, which threading needs)
    and the ``limit - 1`` newest. Duplicates keep their first position. ``limit`` < 1 keeps nothing.
    """
    seen: set[str] = set()
    unique: list[str] = []
    for ref in chain:
        if ref not in seen:
            seen.add(ref)
            unique.append(ref)
    if limit < 1:
        return ()
    if len(unique) <= limit:
        return tuple(unique)
    if limit == 1:
        return (unique[0],)
    return (unique[0], *unique[-(limit - 1) :])


def normalise_body(text: str) -> str:
    """The normalised body: CRLF line endings, trailing spaces and tabs removed from every line.

    Nothing else changes (no Unicode normalisation, no re-wrapping), so the typed body can be compared
    with it line for line. ``"a \\r\\nb\\t\\n"`` becomes ``"a\\r\\nb\\r\\n"``; a lone CR counts as a line end.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\r\n".join(line.rstrip(" \t") for line in lines)


def sha256_hex(data: bytes | str) -> str:
    """SHA-256 of ``data`` as 64 lower-case hex digits; a ``str`` is hashed as its UTF-8 bytes."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def _check_msg_id(field: str, value: str) -> str:
    reject_header_injection(field, value)
    if not _MSG_ID.match(value):
        raise invalid(
            "E_HEADER_MALFORMED",
            f"The {field} value {value!r} is not a message id.",
            "A message id is <left@right> with no spaces (RFC 5322 §3.6.4).",
            "Reply to a message that carries a well-formed Message-ID, or send without threading.",
            field=field,
            value=value[:200],
        )
    return value


def render(message: OutboundMessage) -> bytes:
    """Render ``message`` as RFC 5322 bytes with CRLF line endings.

    Headers, in order: From, To, Cc (only when non-empty), Reply-To (when given), Subject, Date, Message-ID,
    In-Reply-To and References (only for a reply; References bounded by ``bound_references``),
    Auto-Submitted (when set), the custom headers (``extra_headers``), then MIME-Version and a text/plain;
    charset="utf-8" body (RFC 2045/2046); with ``html`` a multipart/alternative of both (or text/html alone
    when ``plain`` is False), with ``attachments`` a
    multipart/mixed (see the module docstring).
    Bcc is never written; a display name (``names``) is written before its address, RFC 2047 encoded.

    Raises ``E_HEADER_INJECTION`` (422) for a line break (anything ``str.splitlines`` breaks on) or a control
    character but HT in any header value, ``E_TEXT_MALFORMED`` (422) for a lone surrogate in one
    (``addresses.header_fault``), ``E_HEADER_MALFORMED`` (422)
    for a Message-ID, In-Reply-To or References entry that is not ``<left@right>``, an ``Auto-Submitted``
    value outside ``AUTO_SUBMITTED_VALUES``, a naive ``date``, a send with no To/Cc/Bcc recipient, a custom
    header ``outbound.mail_fields.header_allowed`` does not allow, or an HTML-only message without HTML.
    """
    if not (message.to or message.cc or message.bcc):
        raise _malformed("To", "", "A message needs at least one recipient.")
    if message.date.tzinfo is None:
        raise _malformed("Date", str(message.date), "The Date must be an aware datetime (UTC).")
    if message.auto_submitted is not None and message.auto_submitted not in AUTO_SUBMITTED_VALUES:
        raise _malformed("Auto-Submitted", str(message.auto_submitted), "Only auto-replied and auto-generated.")
    for field, values in (("From", (message.from_address,)), ("To", message.to), ("Cc", message.cc),
                          ("Bcc", message.bcc)):
        for value in values:
            reject_header_injection(field, value)
    if message.from_name is not None:
        reject_header_injection("From", message.from_name)
    reject_header_injection("Subject", message.subject)
    _check_msg_id("Message-ID", message.message_id)
    references = bound_references([_check_msg_id("References", r) for r in message.references])
    in_reply_to = _check_msg_id("In-Reply-To", message.in_reply_to) if message.in_reply_to else None

    names = dict(message.names)
    for name in names.values():
        reject_header_injection("To", name)
    for address, name in message.reply_to:
        reject_header_injection("Reply-To", address)
        reject_header_injection("Reply-To", name)
    for field, value in message.extra_headers:
        if header_allowed(field) != field:
            raise _malformed(field, value, "Only the custom headers outbound.mail_fields allows are written.")
        reject_header_injection(field, value)
    if not message.plain and message.html is None:
        raise _malformed("Content-Type", "text/html", "An HTML-only message needs its HTML part.")
    msg = EmailMessage(policy=_POLICY)
    msg["From"] = _address(message.from_address, message.from_name or "")
    if message.to:
        msg["To"] = [_address(a, names.get(a.lower(), "")) for a in message.to]
    if message.cc:
        msg["Cc"] = [_address(a, names.get(a.lower(), "")) for a in message.cc]
    if message.reply_to:
        msg["Reply-To"] = [_address(a, n) for a, n in message.reply_to]
    msg["Subject"] = message.subject
    msg["Date"] = format_datetime(message.date.astimezone(UTC))
    msg["Message-ID"] = message.message_id
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
    if references:
        msg["References"] = " ".join(references)
    if message.auto_submitted:
        msg["Auto-Submitted"] = message.auto_submitted
    for field, value in message.extra_headers:
        msg[field] = value
    # Written before the content so it precedes Content-Type (set_content only adds it when absent).
    msg["MIME-Version"] = "1.0"
    if not message.plain and message.html is not None:
        # HTML only: nothing is derived from it (a text part made by stripping tags would be words the
        # sender never wrote), so the message is the one text/html part the caller gave.
        msg.set_content(message.html, subtype="html", charset="utf-8")
    else:
        msg.set_content(message.body, subtype="plain", charset="utf-8")
        if message.html is not None:
            msg.add_alternative(message.html, subtype="html", charset="utf-8")
    for att in message.attachments:
        reject_header_injection("filename", att.filename)
        if att.content_type == "message/rfc822":
            # The stdlib attaches a parsed message as message/rfc822; it re-encodes its parts for 7-bit
            # transport, which RFC 2046 §5.2.1 requires (no base64 around message/rfc822 itself).
            inner = message_from_bytes(att.data, policy=email_policy.default)
            msg.add_attachment(inner, filename=att.filename)
        else:
            maintype, _, subtype = att.content_type.partition("/")
            msg.add_attachment(att.data, maintype=maintype, subtype=subtype, filename=att.filename)
    return msg.as_bytes(policy=_POLICY)


def attachments_of(rendered: bytes) -> tuple[OutboundAttachment, ...]:
    """The attachments ``render`` wrote into ``rendered``, in order, as it was given them (a resend seals the
    same files again without keeping a second copy). Only for bytes ``render`` produced."""
    msg = message_from_bytes(rendered, policy=email_policy.default)
    out: list[OutboundAttachment] = []
    for part in msg.iter_attachments() if msg.is_multipart() else ():
        if part.get_content_type() == "message/rfc822":
            data = part.get_content().as_bytes(policy=email_policy.SMTP)
        else:
            # The transfer-decoded bytes, for every type: ``get_content`` answers a str for text/* parts (decoded
            # by a charset the seal never wrote), which cannot be the attachment's bytes.
            payload = part.get_payload(decode=True)
            data = payload if isinstance(payload, bytes) else b""
        out.append(OutboundAttachment(filename=part.get_filename() or "attachment",
                                      content_type=part.get_content_type(), data=data))
    return tuple(out)


def written_address(address: str, display_name: str | None) -> str:
    """``address`` with its display name as a request would give it (``Alice <a@x>``, quoted when needed)."""
    return str(_address(address, display_name or "")) if display_name else address


def _address(addr_spec: str, display_name: str = "") -> Address:
    local, _, domain = addr_spec.rpartition("@")
    return Address(display_name=display_name, username=local, domain=domain)


def _malformed(field: str, value: str, why: str) -> MailnodeError:
    return invalid(
        "E_HEADER_MALFORMED",
        f"The {field} header cannot be rendered.",
        why,
        "Correct the send's fields and seal it again.",
        field=field,
        value=value[:200],
    )
