"""Delivery and complaint reports: detect them in received bytes and read who they are about.

``read_report(raw)`` never raises and returns a :class:`DeliveryReport`. It tries, in order:

1. an RFC 3464 ``message/delivery-status`` part anywhere in the tree (``multipart/report;
   report-type=delivery-status``, and the nested shapes some providers produce, such as a report
   inside ``multipart/mixed`` or inside a forwarded ``message/rfc822``);
2. an RFC 5965 ``message/feedback-report`` part (ARF complaints);
3. a provider's JSON notification mailed as the body (Amazon SES, bare or in an SNS envelope);
4. ``flufl.bounce.all_failures`` (Mailman's detectors) for plain-text postmaster bounces, with every
   returned value validated, because it returns JSON fragments and pipe commands on some inputs
   (``../shared/spec/libraries.md`` §4);
5. a reader of this module for plain-text notices flufl.bounce misses, used only when the message
   comes from a system sender or has a bounce subject, reading the notice above the quoted original.

``event_for(report, recipient)`` maps one reported recipient to the normalised event vocabulary.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from email import message_from_bytes, message_from_string
from email.message import Message
from email.policy import compat32
from email.utils import parseaddr
from typing import Any

import flufl.bounce

from mailnode import budgets
from mailnode.ingress import bounds


class ReportKind(enum.StrEnum):
    """What a message reports: ``delivery_status`` (RFC 3464 or an equivalent notice),
    ``feedback`` (RFC 5965 complaint), or ``none`` (not a report)."""

    DELIVERY_STATUS = "delivery_status"
    FEEDBACK = "feedback"
    NONE = "none"


class ReportSource(enum.StrEnum):
    """Which reader found the report: ``rfc3464``, ``arf``, ``provider`` (a provider's own shape:
    Amazon SES JSON, Hotmail's JMRP complaint),
    ``flufl`` (flufl.bounce detectors), ``text`` (this module's plain-text reader), ``none``."""

    RFC3464 = "rfc3464"
    ARF = "arf"
    PROVIDER = "provider"
    FLUFL = "flufl"
    TEXT = "text"
    NONE = "none"


class DeliveryEvent(enum.StrEnum):
    """The normalised event a reported recipient becomes (the vocabulary of ``send_recipient_events``)."""

    BOUNCED = "bounced"
    DEFERRED = "deferred"
    DELIVERED = "delivered"
    COMPLAINED = "complained"


#: The token set on a report that was recognised as one but could not be read.
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class ReportedRecipient:
    """One recipient a report is about.

    ``address``: the failed (or complaining) address, as written; ``status``: an RFC 3463 enhanced
    status code such as ``5.1.1``, or ``None``; ``action``: RFC 3464 §2.3.3 action (``failed``,
    ``delayed``, ``delivered``, ``relayed``, ``expanded``) lower case, or ``None``; ``diagnostic``:
    the Diagnostic-Code or the provider's text, or ``None``; ``original_recipient``: RFC 3464
    §2.3.1 Original-Recipient (the address as the sender submitted it, which attribution compares
    with), or ``None`` when the report does not give it.
    """

    address: str
    status: str | None = None
    action: str | None = None
    diagnostic: str | None = None
    original_recipient: str | None = None


@dataclass(frozen=True)
class DeliveryReport:
    """A report read from one message.

    ``kind``: see :class:`ReportKind`; ``source``: see :class:`ReportSource`; ``recipients``: the
    reported recipients in order; ``original_message_id``: the Message-ID of the reported message
    (brackets removed) when the report quotes it, used for attribution; ``original_envelope_id``:
    RFC 3461 ENVID (``Original-Envelope-Id``); ``original_to``: the To addresses of the quoted
    original; ``reporting_mta``; ``feedback_type``: RFC 5965 ``Feedback-Type`` (``abuse``...);
    ``problem``: :data:`UNREADABLE` when the message looks like a report but nothing could be read.
    """

    kind: ReportKind
    source: ReportSource
    recipients: tuple[ReportedRecipient, ...] = ()
    original_message_id: str | None = None
    original_envelope_id: str | None = None
    original_to: tuple[str, ...] = ()
    reporting_mta: str | None = None
    feedback_type: str | None = None
    problem: str | None = None


NOT_A_REPORT = DeliveryReport(kind=ReportKind.NONE, source=ReportSource.NONE)

#: An RFC 3463 enhanced status code (class.subject.detail).
_STATUS = re.compile(r"(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d.])")
#: A plausible mailbox: one ``@``, no quotes, braces, spaces or pipes (flufl.bounce can return those).
_ADDRESS = re.compile(r"^[^\s@\"'{}<>|(),;:\\\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9\-.]*[A-Za-z0-9])?$")
#: Addresses inside running text.
_ADDRESS_IN_TEXT = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-.]*[A-Za-z0-9])?")
#: Local parts of the senders that write delivery notices.
_SYSTEM_SENDERS = ("mailer-daemon", "postmaster", "mail-daemon", "maildaemon", "mailer_daemon")
#: Subjects of plain-text delivery notices (English, as the corpus's MTAs write them).
_BOUNCE_SUBJECT = re.compile(
    r"undeliver|delivery (status|failure|fail|notification|has failed|problem)|failure notice|returned mail|"
    r"mail delivery (failed|failure|system|subsystem)|could not be delivered|not delivered|delivery error|"
    r"nondeliver|non-deliver|message (delayed|not delivered)|warning: could not send|mail system error",
    re.IGNORECASE,
)
#: Lines after which a plain-text notice quotes the original message.
_ORIGINAL_MARKER = re.compile(
    r"^.*(below this line is a copy|this is a copy of (the|your) message|message headers follow|"
    r"original message follows|headers of the original|"
    r"^\s*-{2,}.*(original|returned|undelivered|forwarded) message.*$|"
    r"^\s*(original|returned|undelivered) message( headers)?:?\s*$).*$",
    re.IGNORECASE | re.MULTILINE,
)


def valid_address(value: str) -> str | None:
    """The address cleaned of ``<>``, a ``rfc822;`` type and spaces, or ``None`` when it is not
    one plausible mailbox."""
    text = value.strip()
    if ";" in text:
        text = text.split(";", 1)[1]
    text = text.strip().strip("<>").strip()
    if not _ADDRESS.match(text):
        return None
    local = text.rsplit("@", 1)[0]
    # A dot-atom has no empty atoms (RFC 5322 §3.4.1); a leading slash is a file or pipe delivery.
    if local.startswith((".", "/")) or local.endswith(".") or ".." in local:
        return None
    return text


def _status(text: str | None) -> str | None:
    """The first enhanced status code in ``text``, or ``None``."""
    if not text:
        return None
    found = _STATUS.search(text)
    return ".".join(found.groups()) if found else None


def _header(block: Message, name: str) -> str | None:
    """A header of a compat32 block as a single-line ``str``, or ``None``."""
    value = block.get(name)
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def _blocks(part: Message) -> list[Message]:
    """The field blocks of a ``message/delivery-status`` or ``message/feedback-report`` part.

    compat32 parses each blank-line-separated block as a Message; when the part was not parsed
    that way (an encoded or odd part), its text is split on blank lines and parsed here.
    """
    payload = part.get_payload()
    if isinstance(payload, list) and payload and all(isinstance(item, Message) for item in payload):
        return list(payload)
    data = part.get_payload(decode=True)
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(payload or "")
    text = text.replace("\r\n", "\n")
    return [
        message_from_string(chunk.strip() + "\n", policy=compat32)
        for chunk in re.split(r"\n\s*\n", text)
        if chunk.strip()
    ]


def _walk(message: Message) -> Iterator[Message]:
    """Every part, depth first (attached messages included)."""
    yield from message.walk()


def _original(message: Message) -> Message | None:
    """The quoted original: a ``message/rfc822`` part's message, or ``text/rfc822-headers`` parsed."""
    for part in _walk(message):
        content_type = part.get_content_type()
        if content_type in ("message/rfc822", "message/global"):
            payload = part.get_payload()
            if isinstance(payload, list) and payload and isinstance(payload[0], Message):
                return payload[0]
        if content_type in ("text/rfc822-headers", "message/rfc822-headers", "text/rfc822-header"):
            data = part.get_payload(decode=True)
            if isinstance(data, bytes):
                return message_from_bytes(data.lstrip(), policy=compat32)
    return None


def _message_id(value: str | None) -> str | None:
    """A Message-ID value with its brackets removed, or ``None``."""
    if not value:
        return None
    found = re.search(r"<([^<>]+)>", value)
    text = found.group(1) if found else value.strip()
    return text or None


def _original_facts(message: Message) -> tuple[str | None, tuple[str, ...]]:
    """(Message-ID, To addresses) of the quoted original, when the report carries it."""
    original = _original(message)
    if original is None:
        return None, ()
    to: list[str] = []
    for value in original.get_all("To", []) or []:
        for item in str(value).split(","):
            address = valid_address(parseaddr(item)[1] or "")
            if address:
                to.append(address)
    return _message_id(_header(original, "Message-ID")), tuple(to)


def _rfc3464(message: Message) -> DeliveryReport | None:
    """Read every ``message/delivery-status`` part (RFC 3464 §2); ``None`` when there is none."""
    parts = [part for part in _walk(message) if part.get_content_type() == "message/delivery-status"]
    if not parts:
        return None
    recipients: list[ReportedRecipient] = []
    envelope_id = reporting_mta = None
    for part in parts:
        blocks = _blocks(part)
        for block in blocks:
            envelope_id = envelope_id or _header(block, "Original-Envelope-Id")
            reporting_mta = reporting_mta or _header(block, "Reporting-MTA")
            address = valid_address(_header(block, "Final-Recipient") or "")
            original = valid_address(_header(block, "Original-Recipient") or "")
            address = address or original
            if address is None:
                continue
            diagnostic = _header(block, "Diagnostic-Code")
            action = _header(block, "Action")
            recipients.append(
                ReportedRecipient(
                    address=address,
                    status=_status(_header(block, "Status")) or _status(diagnostic),
                    action=action.split()[0].lower() if action else None,
                    diagnostic=diagnostic,
                    original_recipient=original,
                )
            )
    original_id, original_to = _original_facts(message)
    return DeliveryReport(
        kind=ReportKind.DELIVERY_STATUS,
        source=ReportSource.RFC3464,
        recipients=tuple(recipients),
        original_message_id=original_id,
        original_envelope_id=envelope_id,
        original_to=original_to,
        reporting_mta=reporting_mta,
        problem=None if recipients else UNREADABLE,
    )


def _arf(message: Message) -> DeliveryReport | None:
    """Read a ``message/feedback-report`` part (RFC 5965 §3); ``None`` when there is none.

    The complaining recipient is ``Original-Rcpt-To`` (RFC 5965 §3.2), else the To of the quoted
    original (``message/rfc822`` or ``text/rfc822-headers``).
    """
    parts = [part for part in _walk(message) if part.get_content_type() == "message/feedback-report"]
    if not parts:
        return None
    fields: dict[str, str] = {}
    rcpt_to: list[str] = []
    for block in _blocks(parts[0]):
        for name in ("Feedback-Type", "Reporting-MTA", "Original-Envelope-Id"):
            value = _header(block, name)
            if value and name not in fields:
                fields[name] = value
        for value in block.get_all("Original-Rcpt-To", []) or []:
            address = valid_address(str(value))
            if address:
                rcpt_to.append(address)
    original_id, original_to = _original_facts(message)
    addresses = rcpt_to or list(original_to)
    feedback_type = fields.get("Feedback-Type")
    return DeliveryReport(
        kind=ReportKind.FEEDBACK,
        source=ReportSource.ARF,
        recipients=tuple(ReportedRecipient(address=item, action=None) for item in _unique(addresses)),
        original_message_id=original_id,
        original_envelope_id=fields.get("Original-Envelope-Id"),
        original_to=original_to,
        reporting_mta=fields.get("Reporting-MTA"),
        feedback_type=feedback_type.lower() if feedback_type else None,
        problem=None if addresses else UNREADABLE,
    )


def _jmrp(message: Message) -> DeliveryReport | None:
    """Read Hotmail/Outlook.com's pre-ARF complaint (JMRP): the complained-about message attached
    as ``message/rfc822``, its recipient in ``X-HmXmrOriginalRecipient``; ``None`` otherwise."""
    original = _original(message)
    if original is None:
        return None
    address = valid_address(_header(original, "X-HmXmrOriginalRecipient") or "")
    if address is None:
        return None
    original_id, original_to = _original_facts(message)
    return DeliveryReport(
        kind=ReportKind.FEEDBACK,
        source=ReportSource.PROVIDER,
        recipients=(ReportedRecipient(address=address),),
        original_message_id=original_id,
        original_to=original_to,
        feedback_type="abuse",
    )


def _unique(items: Iterable[str]) -> list[str]:
    """Items in first-seen order, duplicates (compared case-insensitively) dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item.lower() not in seen:
            seen.add(item.lower())
            out.append(item)
    return out


def _text(message: Message) -> str:
    """The message's own text: its first-level text parts, decoded leniently, not the quoted original."""
    texts: list[str] = []
    parts = [message] if not message.is_multipart() else list(_top_parts(message))
    for part in parts:
        # A multipart/* part without a usable boundary is not multipart to compat32; its payload
        # is the notice as text (seen in real Zoho and Orange notices).
        unsplit = not part.is_multipart() and part.get_content_type().startswith("multipart/")
        if part.is_multipart() or not (part.get_content_type().startswith("text/") or unsplit):
            continue
        if part.get_content_type() in ("text/rfc822-headers",):
            continue
        data = part.get_payload(decode=True)
        if isinstance(data, bytes):
            charset = part.get_content_charset()
            try:
                texts.append(data.decode(charset or "utf-8", "replace"))
            except LookupError:  # a charset Python does not know, e.g. "x-unknown"
                texts.append(data.decode("utf-8", "replace"))
    return "\n".join(texts)


def _top_parts(message: Message) -> Iterator[Message]:
    """Parts of a multipart, descending into nested multiparts but not into attached messages."""
    payload = message.get_payload()
    if not isinstance(payload, list):
        return
    for part in payload:
        if not isinstance(part, Message):
            continue
        if part.is_multipart() and not part.get_content_type().startswith("message/"):
            yield from _top_parts(part)
        elif not part.get_content_type().startswith("message/"):
            yield part


def _json_objects(text: str) -> Iterator[dict[str, Any]]:
    """JSON objects found in ``text``, and the JSON strings they carry (SNS wraps SES's as a string)."""
    start = text.find("{")
    if start < 0:
        return
    try:
        value = json.loads(text[start : text.rfind("}") + 1])
    except (ValueError, RecursionError):
        # A body split by a folded line (some MTAs wrap long lines): join and retry once.
        try:
            value = json.loads(re.sub(r"\r?\n ", "", text[start : text.rfind("}") + 1]))
        except (ValueError, RecursionError):
            return
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            for key in ("Message", "message"):
                inner = item.get(key)
                if isinstance(inner, str) and inner.lstrip().startswith("{"):
                    try:
                        stack.append(json.loads(inner))
                    except (ValueError, RecursionError):
                        pass


def _json(message: Message) -> DeliveryReport | None:
    """Read an Amazon SES notification (Bounce, Complaint or Delivery) mailed as a body."""
    for item in _json_objects(_text(message)):
        kind = str(item.get("notificationType") or item.get("eventType") or "").lower()
        mail: dict[str, Any] = item["mail"] if isinstance(item.get("mail"), dict) else {}
        headers: dict[str, Any] = mail["commonHeaders"] if isinstance(mail.get("commonHeaders"), dict) else {}
        original_id = _message_id(str(headers.get("messageId") or "")) if headers else None
        original_to = tuple(a for a in (valid_address(str(x)) for x in mail.get("destination") or []) if a)
        recipients: list[ReportedRecipient] = []
        report_kind = ReportKind.DELIVERY_STATUS
        if kind == "bounce" and isinstance(item.get("bounce"), dict):
            bounce = item["bounce"]
            for entry in bounce.get("bouncedRecipients") or []:
                address = valid_address(str(entry.get("emailAddress", "")))
                if address:
                    diagnostic = entry.get("diagnosticCode")
                    temporary = str(bounce.get("bounceType", "")).lower() == "transient"
                    recipients.append(
                        ReportedRecipient(
                            address=address,
                            status=_status(entry.get("status")) or _status(diagnostic),
                            action=str(entry.get("action") or ("delayed" if temporary else "failed")).lower(),
                            diagnostic=diagnostic,
                        )
                    )
        elif kind == "complaint" and isinstance(item.get("complaint"), dict):
            report_kind = ReportKind.FEEDBACK
            for entry in item["complaint"].get("complainedRecipients") or []:
                address = valid_address(str(entry.get("emailAddress", "")))
                if address:
                    recipients.append(ReportedRecipient(address=address))
        elif kind == "delivery" and isinstance(item.get("delivery"), dict):
            delivery = item["delivery"]
            for value in delivery.get("recipients") or []:
                address = valid_address(str(value))
                if address:
                    response = delivery.get("smtpResponse")
                    recipients.append(
                        ReportedRecipient(
                            address=address, status=_status(response), action="delivered", diagnostic=response
                        )
                    )
        else:
            continue
        feedback = (
            item.get("complaint", {}).get("complaintFeedbackType")
            if report_kind is ReportKind.FEEDBACK
            else None
        )
        return DeliveryReport(
            kind=report_kind,
            source=ReportSource.PROVIDER,
            recipients=tuple(recipients),
            original_message_id=original_id,
            original_to=original_to,
            feedback_type=str(feedback).lower() if feedback else None,
            problem=None if recipients else UNREADABLE,
        )
    return None


def _notice(message: Message) -> str:
    """The notice text above the quoted original (the whole text when no marker is found)."""
    text = _text(message).replace("\r\n", "\n")
    found = _ORIGINAL_MARKER.search(text)
    return text[: found.start()] if found else text


def _status_near(notice: str, address: str) -> tuple[str | None, str | None]:
    """(status, the line it came from) for ``address``: the first enhanced code on the address's
    line or on the lines that follow it, up to the next blank line."""
    lines = notice.split("\n")
    lowered = address.lower()
    for index, line in enumerate(lines):
        if lowered not in line.lower():
            continue
        for follow in lines[index:]:
            code = _status(follow)
            if code:
                return code, follow.strip()
            if not follow.strip() and follow is not line:
                break
    return None, None


def _looks_like_notice(message: Message) -> bool:
    """Whether a plain message is a delivery notice: a system sender or a bounce subject."""
    sender = parseaddr(str(message.get("From", "")))
    local = (sender[1] or sender[0]).split("@", 1)[0].strip().lower()
    if (
        any(local.startswith(name) for name in _SYSTEM_SENDERS)
        or "mailer-daemon" in str(message.get("From", "")).lower()
    ):
        return True
    return bool(_BOUNCE_SUBJECT.search(str(message.get("Subject", ""))))


def _flufl(message: Message) -> DeliveryReport | None:
    """Run flufl.bounce's detectors and keep only values that are plausible addresses.

    flufl.bounce reports warnings (temporary) and failures (permanent) as bytes; they become
    ``action`` ``delayed`` and ``failed``. Its heuristic detectors call everything permanent.
    """
    temporary, permanent = flufl.bounce.all_failures(message)
    notice = _notice(message)
    recipients: list[ReportedRecipient] = []
    for values, action in ((permanent, "failed"), (temporary, "delayed")):
        for value in sorted(values):
            address = valid_address(
                value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
            )
            if address is None or any(item.address.lower() == address.lower() for item in recipients):
                continue
            status, line = _status_near(notice, address)
            recipients.append(
                ReportedRecipient(address=address, status=status, action=action, diagnostic=line)
            )
    if not recipients:
        return None
    original_id, original_to = _original_facts(message)
    return DeliveryReport(
        kind=ReportKind.DELIVERY_STATUS,
        source=ReportSource.FLUFL,
        recipients=tuple(recipients),
        original_message_id=original_id or _quoted_message_id(message),
        original_to=original_to,
    )


def _quoted_message_id(message: Message) -> str | None:
    """The Message-ID of an original quoted as text below the notice, or ``None``."""
    text = _text(message).replace("\r\n", "\n")
    found = _ORIGINAL_MARKER.search(text)
    if not found:
        return None
    header = re.search(r"^Message-ID:\s*(<[^>\n]+>)", text[found.end() :], re.IGNORECASE | re.MULTILINE)
    return _message_id(header.group(1)) if header else None


def _plain_text(message: Message) -> DeliveryReport | None:
    """This module's reader for plain-text notices flufl.bounce misses.

    Only for messages from a system sender or with a bounce subject; takes the addresses in the
    notice above the quoted original, leaving out the notice's own To (the original sender), its
    From and system mailboxes. ``None`` when it finds no address.
    """
    if not _looks_like_notice(message):
        return None
    notice = _notice(message)
    excluded = {"postmaster", "mailer-daemon", "root", "abuse", "noreply", "no-reply"}
    own = {
        parseaddr(str(message.get(name, "")))[1].lower()
        for name in ("To", "From", "Sender", "Reply-To", "Return-Path")
    }
    candidates = []
    for found in _ADDRESS_IN_TEXT.finditer(notice):
        address = valid_address(found.group(0).strip(".'"))
        if address is None or address.lower() in own or address.split("@")[0].lower() in excluded:
            continue
        # A MAIL FROM line names the original sender, not a recipient.
        line_start = notice.rfind("\n", 0, found.start()) + 1
        prefix = notice[line_start : found.start()].lower()
        if "from" in prefix and "rcpt" not in prefix and "to:" not in prefix:
            continue
        # A quoted Message-ID is an id, not a mailbox.
        if "message-id" in prefix or prefix.rstrip().endswith("id"):
            continue
        candidates.append(address)
    addresses = _unique(candidates)
    if not addresses:
        return None
    recipients = []
    for address in addresses:
        status, line = _status_near(notice, address)
        recipients.append(ReportedRecipient(address=address, status=status, action=None, diagnostic=line))
    original_id, original_to = _original_facts(message)
    return DeliveryReport(
        kind=ReportKind.DELIVERY_STATUS,
        source=ReportSource.TEXT,
        recipients=tuple(recipients),
        original_message_id=original_id or _quoted_message_id(message),
        original_to=original_to,
    )


def _read(message: Message, lines: int) -> DeliveryReport:
    """The readers in order; the first that recognises the message decides. The plain-text readers
    (flufl.bounce's detectors run about 50 regular expressions over every line) are skipped for a message of
    more than ``REPORT_TEXT_READERS_MAX_LINES`` lines."""
    structured = _rfc3464(message)
    if structured is not None and structured.recipients:
        return structured
    feedback = _arf(message)
    if feedback is not None:
        return feedback
    for provider_reader in (_json, _jmrp):
        provider = provider_reader(message)
        if provider is not None:
            return provider
    text_readers = (_flufl, _plain_text) if lines <= budgets.REPORT_TEXT_READERS_MAX_LINES else ()
    for reader in text_readers:
        found = reader(message)
        if found is not None:
            return found
    if structured is not None or message.get_content_type() == "multipart/report":
        return DeliveryReport(
            kind=ReportKind.DELIVERY_STATUS, source=ReportSource.RFC3464, problem=UNREADABLE
        )
    return NOT_A_REPORT


def _with_boundary(message: Message, raw: bytes) -> Message:
    """Re-parse a top-level ``multipart/*`` whose boundary parameter was lost.

    Some MTAs fold the Content-Type so that the ``boundary`` parameter is not part of the header
    (the parser then sees one opaque part). The first ``--delimiter`` line of the body names the
    boundary; the bytes are parsed again with a Content-Type header naming it put first.
    """
    if message.is_multipart() or not message.get_content_type().startswith("multipart/"):
        return message
    payload = message.get_payload()
    if not isinstance(payload, str):
        return message
    found = re.search(r"^--([^\s\"]{1,70}?)[ \t]*\r?$", payload, re.MULTILINE)
    if found is None:
        return message
    header = f'Content-Type: {message.get_content_type()}; boundary="{found.group(1)}"\r\n'
    reparsed = bounds.load(header.encode("ascii", "replace") + raw)  # within the same PARSE_* budgets
    return reparsed.message if reparsed.body_read else message


def read_report(raw: bytes) -> DeliveryReport:
    """Detect and read a delivery or feedback report in one message's bytes; never raises.

    Args:
        raw: the message exactly as received.

    Returns:
        A :class:`DeliveryReport`: ``kind=none`` for ordinary mail, and for a message past the parsing budgets
        of ``ingress.bounds`` (its parts are not read); for a report, its recipients
        with status, action and diagnostic where the report gives them. When reading fails part way
        (a detector raised, or the report is recognised but empty), ``problem`` is ``unreadable`` and
        ``kind`` says what it looked like.
    """
    try:
        loaded = bounds.load(bytes(raw))
        if not loaded.body_read:  # past the PARSE_* budgets: the parts are not read, so neither is a report
            return NOT_A_REPORT
        message = _with_boundary(loaded.message, bytes(raw))
    except Exception:  # noqa: BLE001 - the stdlib parser failed on bounded bytes: kept as a message
        return DeliveryReport(kind=ReportKind.NONE, source=ReportSource.NONE, problem=UNREADABLE)
    try:
        return _read(message, raw.count(b"\n"))
    except Exception:  # noqa: BLE001 - a reader or flufl.bounce detector raised: keep the message, mark the report
        looks = message.get_content_type() == "multipart/report" or _looks_like_notice(message)
        kind = ReportKind.DELIVERY_STATUS if looks else ReportKind.NONE
        return DeliveryReport(kind=kind, source=ReportSource.NONE, problem=UNREADABLE)


#: Status class (RFC 3463 §3.1) to event: 2 success, 4 persistent transient, 5 permanent.
STATUS_CLASS_EVENTS: dict[str, DeliveryEvent] = {
    "2": DeliveryEvent.DELIVERED,
    "4": DeliveryEvent.DEFERRED,
    "5": DeliveryEvent.BOUNCED,
}
#: RFC 3464 §2.3.3 action to event, used only when the status is absent.
ACTION_EVENTS: dict[str, DeliveryEvent] = {
    "failed": DeliveryEvent.BOUNCED,
    "delayed": DeliveryEvent.DEFERRED,
    "delivered": DeliveryEvent.DELIVERED,
    "relayed": DeliveryEvent.DELIVERED,
    "expanded": DeliveryEvent.DELIVERED,
}


def event_for(kind: ReportKind, status: str | None, action: str | None = None) -> DeliveryEvent | None:
    """The normalised event for one reported recipient; a total function, never raises.

    - a ``feedback`` report: ``complained``;
    - a ``delivery_status`` report: by the status class (RFC 3463 §3.1): ``5.x.x`` ``bounced``,
      ``4.x.x`` ``deferred``, ``2.x.x`` ``delivered``; with no readable status, by the RFC 3464 action
      (``failed`` bounced, ``delayed`` deferred, ``delivered``/``relayed``/``expanded`` delivered);
    - anything else (``none``, an unknown class or action): ``None``. An unknown shape is never
      guessed as ``bounced``.
    """
    if kind is ReportKind.FEEDBACK:
        return DeliveryEvent.COMPLAINED
    if kind is not ReportKind.DELIVERY_STATUS:
        return None
    code = _status(status)
    if code is not None:
        return STATUS_CLASS_EVENTS.get(code[0])
    if action:
        return ACTION_EVENTS.get(action.strip().lower())
    return None
