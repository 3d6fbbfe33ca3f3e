"""Is this mail automated, and may it be answered automatically? Two pure decisions.

``automated(facts)`` follows RFC 3834 §2 and RFC 5230 §4.6 (and the checks Pigeonhole's vacation
extension makes); ``reply_refusal(facts, mailbox_addresses)`` refuses every automated message and
also mail from the mailbox's own addresses and mail not addressed to the mailbox. Each returns
``None`` or a :class:`Reason` token; the first reason found in the documented order wins. Facts
come from :func:`facts_from` (a parsed message, its envelope sender and its report kind).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from mailnode.ingress.parse import ParsedMessage
from mailnode.ingress.reports import DeliveryReport, ReportKind


class Reason(enum.StrEnum):
    """Why a message is automated or may not be answered automatically (a closed vocabulary).

    Automated (``automated`` and ``reply_refusal``), in the order they are checked:

    - ``null_sender``: the envelope sender is the null reverse path ``<>`` (RFC 3834 §2, RFC 5230 §4.6).
    - ``delivery_report``: a delivery status notification (RFC 3464) or an equivalent notice.
    - ``feedback_report``: a complaint report (RFC 5965).
    - ``auto_submitted``: ``Auto-Submitted`` with any value but ``no`` (RFC 3834 §5).
    - ``vacation_marker``: a vendor's auto-reply header (``X-Autoreply``, ``X-Autorespond``,
      ``X-Apple-Action: VACATION``, ``X-MS-Exchange-Inbox-Rules-Loop`` and the like).
    - ``precedence``: ``Precedence: bulk``, ``list`` or ``junk`` (case-insensitive; RFC 3834 §2).
    - ``list_header``: any ``List-*`` header (RFC 2369, RFC 2919; RFC 5230 §4.6).
    - ``auto_response_suppress``: ``X-Auto-Response-Suppress`` naming ``All`` or ``OOF`` (Microsoft).
    - ``system_sender``: a sender whose local part is ``MAILER-DAEMON``, ``LISTSERV`` or
      ``majordomo``, contains ``-request``, or starts with ``owner-`` (RFC 5230 §4.6).

    Only ``reply_refusal``:

    - ``own_address``: the envelope sender is one of the mailbox's own addresses.
    - ``not_addressed``: none of the mailbox's addresses is in To, Cc, Bcc or Resent-To/-Cc/-Bcc.
    """

    NULL_SENDER = "null_sender"
    DELIVERY_REPORT = "delivery_report"
    FEEDBACK_REPORT = "feedback_report"
    AUTO_SUBMITTED = "auto_submitted"
    VACATION_MARKER = "vacation_marker"
    PRECEDENCE = "precedence"
    LIST_HEADER = "list_header"
    AUTO_RESPONSE_SUPPRESS = "auto_response_suppress"
    SYSTEM_SENDER = "system_sender"
    OWN_ADDRESS = "own_address"
    NOT_ADDRESSED = "not_addressed"


@dataclass(frozen=True)
class MessageFacts:
    """What the two decisions read.

    ``envelope_from``: the SMTP MAIL FROM; ``""`` is the null reverse path, ``None`` means unknown
    (for example a file imported without an envelope). ``from_address``: the From header's address
    (``""`` when absent). ``headers``: ``(lower-case name, value)`` pairs, at least the automation
    headers. ``report_kind``: from :mod:`mailnode.ingress.reports`. ``recipients``: the addresses in
    To, Cc, Bcc and Resent-To/-Cc/-Bcc.
    """

    envelope_from: str | None
    from_address: str
    headers: tuple[tuple[str, str], ...]
    report_kind: ReportKind
    recipients: tuple[str, ...]

    def values(self, name: str) -> list[str]:
        """Every value of header ``name`` (case-insensitive)."""
        wanted = name.lower()
        return [value for key, value in self.headers if key.lower() == wanted]


def facts_from(parsed: ParsedMessage, envelope_from: str | None, report: DeliveryReport) -> MessageFacts:
    """Build :class:`MessageFacts` from a parsed message, its envelope sender and its report."""
    return MessageFacts(
        envelope_from=envelope_from,
        from_address=parsed.from_.address if parsed.from_ else "",
        headers=parsed.automation_headers,
        report_kind=report.kind,
        recipients=tuple(item.address for item in parsed.recipients),
    )


#: ``Precedence`` values that mark bulk mail (RFC 3834 §2 and RFC 2076 usage).
BULK_PRECEDENCE = frozenset({"bulk", "list", "junk"})
#: ``X-Auto-Response-Suppress`` values that ask for no out-of-office reply
#: (Microsoft [MS-OXCMAIL] §2.2.3.2.20).
SUPPRESS_VALUES = frozenset({"all", "oof"})
#: System senders' local parts, compared case-insensitively (RFC 5230 §4.6, Pigeonhole's list).
SYSTEM_LOCAL_PARTS = frozenset({"mailer-daemon", "listserv", "majordomo"})
#: Vendor auto-reply headers: any value marks an auto-reply.
VACATION_HEADERS = frozenset(
    {"x-autoreply", "x-autorespond", "x-autoresponder", "x-mailautoreply", "x-ms-exchange-inbox-rules-loop"}
)
#: ``X-Apple-Action`` values that mark Apple's vacation reply.
APPLE_VACATION = frozenset({"vacation"})


def _local_part(address: str) -> str:
    """The local part of an address, lower case, without brackets or surrounding space."""
    text = address.strip().strip("<>").strip().lower()
    return text.rsplit("@", 1)[0] if "@" in text else text


def is_system_sender(address: str) -> bool:
    """Whether ``address`` is a system sender (RFC 5230 §4.6): local part ``MAILER-DAEMON``,
    ``LISTSERV`` or ``majordomo``, containing ``-request``, or starting with ``owner-``."""
    local = _local_part(address)
    if not local:
        return False
    return local in SYSTEM_LOCAL_PARTS or "-request" in local or local.startswith("owner-")


def automated(facts: MessageFacts) -> Reason | None:
    """Whether a message was sent by an automaton, and why (RFC 3834 §2, RFC 5230 §4.6).

    Returns the first :class:`Reason` in the order the enum documents, or ``None`` for mail a
    person sent. ``Auto-Submitted: no`` means a person. The system-sender check reads the envelope
    sender and the From address.
    """
    if facts.envelope_from is not None and facts.envelope_from.strip().strip("<>").strip() == "":
        return Reason.NULL_SENDER
    if facts.report_kind is ReportKind.DELIVERY_STATUS:
        return Reason.DELIVERY_REPORT
    if facts.report_kind is ReportKind.FEEDBACK:
        return Reason.FEEDBACK_REPORT
    for value in facts.values("auto-submitted"):
        # RFC 3834 §5: a keyword, then optional parameters; comments may appear anywhere.
        words = re.sub(r"\([^()]*\)", " ", value).split(";", 1)[0].split()
        token = words[0].lower() if words else ""
        if token and token != "no":
            return Reason.AUTO_SUBMITTED
    if any(key.lower() in VACATION_HEADERS for key, _ in facts.headers):
        return Reason.VACATION_MARKER
    if any(value.strip().lower() in APPLE_VACATION for value in facts.values("x-apple-action")):
        return Reason.VACATION_MARKER
    if any(value.strip().lower() in BULK_PRECEDENCE for value in facts.values("precedence")):
        return Reason.PRECEDENCE
    if any(key.lower().startswith("list-") for key, _ in facts.headers):
        return Reason.LIST_HEADER
    for value in facts.values("x-auto-response-suppress"):
        if {item.lower() for item in re.split(r"[\s,;]+", value) if item} & SUPPRESS_VALUES:
            return Reason.AUTO_RESPONSE_SUPPRESS
    if is_system_sender(facts.envelope_from or "") or is_system_sender(facts.from_address):
        return Reason.SYSTEM_SENDER
    return None


def _normalise(address: str) -> str:
    """An address for comparison: brackets and space removed, lower case (the whole address is
    compared case-insensitively, as Pigeonhole does)."""
    return address.strip().strip("<>").strip().lower()


def reply_refusal(facts: MessageFacts, mailbox_addresses: Iterable[str]) -> Reason | None:
    """Whether an automatic reply (vacation, acknowledgement, Butler auto-answer) must not be sent.

    Args:
        facts: the message's facts.
        mailbox_addresses: every address of the mailbox the message was delivered to (the envelope
            recipient and the mailbox's other addresses).

    Returns:
        Every :func:`automated` reason first; then ``own_address`` when the envelope sender is one
        of ``mailbox_addresses``; then ``not_addressed`` when none of them appears in To, Cc, Bcc or
        Resent-To/-Cc/-Bcc (RFC 5230 §4.5); ``None`` when a reply may go.
    """
    reason = automated(facts)
    if reason is not None:
        return reason
    own = {_normalise(item) for item in mailbox_addresses if _normalise(item)}
    if facts.envelope_from is not None and _normalise(facts.envelope_from) in own:
        return Reason.OWN_ADDRESS
    if not own & {_normalise(item) for item in facts.recipients}:
        return Reason.NOT_ADDRESSED
    return None
