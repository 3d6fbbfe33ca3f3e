"""Answering a message: the reply's recipients, Subject and quote, and a forward's body. Pure.

Issue 15, "Answering". A reply names its parent (``in_reply_to_message_id``); what the author leaves out is
filled in here from the stored message, and the seal then adds In-Reply-To and References (RFC 5322
§3.6.4) and applies every gate as for any send (``outbound.compose`` does the reading, the seal the rest):

- **To** (when the request names no recipient): for a person or an application, the parent's ``Reply-To``
  addresses when it has any, else its ``From`` (RFC 5322 §3.6.2: Reply-To says where replies go), display
  names kept. A Butler keeps its envelope-sender rule (``outbound.butler_recipient.reply_recipient``: the SMTP return
  path, never From or Reply-To; seed 003), with its four refusals.
- **Reply-all** adds the parent's other ``To`` and ``Cc`` addresses as Cc, minus the mailbox's own addresses
  and anyone already named (case-insensitively). A Butler cannot reply to all (``E_BUTLER_REPLY_ALL``, 422).
  Addresses in the parent that do not validate are left out (they could not be sealed), never guessed at.
- **Subject** (when the request gives none): ``Re: `` and the parent's Subject with its reply prefixes
  removed, so a thread never reads ``Re: Re:``. Prefixes recognised (``REPLY_PREFIXES``, any case, with an
  optional counter as in ``Re[2]:``): ``Re`` (RFC 5322 §3.6.5), and the localised ones common mail clients
  write: ``Aw`` (German), ``Sv`` (Scandinavian), ``Antw`` (Dutch), ``Ref``. (``VS`` is left alone: it is a
  reply in Finnish and a forward in Norwegian.) mailnode writes
  only ``Re:`` (RFC 5322 §3.6.5 and RFC 3834 §3.1.5 both use it). A forward's Subject is ``Fwd: `` likewise
  over ``FORWARD_PREFIXES``.
- **Quote** (``quote: true``): the parent's stored text body after an attribution line, each line prefixed
  ``> `` (the RFC 3676 §4.5 convention), cut at ``budgets.REPLY_QUOTE_MAX_CHARS`` characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.headerregistry import Address, HeaderRegistry
from typing import Any

from mailnode import budgets
from mailnode.errors import MailnodeError, invalid
from mailnode.outbound.butler_recipient import DELIVERY_EVENT, reply_recipient

#: Reply prefixes removed before ``Re: `` is written (compared case-insensitively).
REPLY_PREFIXES: tuple[str, ...] = ("re", "aw", "sv", "antw", "ref")
#: Forward prefixes removed before ``Fwd: `` is written.
FORWARD_PREFIXES: tuple[str, ...] = ("fwd", "fw", "wg", "tr", "vs")

_HEADERS = HeaderRegistry()


def _prefix_pattern(prefixes: Sequence[str]) -> re.Pattern[str]:
    return re.compile(r"^\s*(?:" + "|".join(prefixes) + r")\s*(?:\[\d+\]|\(\d+\))?\s*:\s*", re.IGNORECASE)


_REPLY_PREFIX = _prefix_pattern(REPLY_PREFIXES)
_ANY_PREFIX = _prefix_pattern(REPLY_PREFIXES + FORWARD_PREFIXES)


def _base_subject(subject: str | None, pattern: re.Pattern[str]) -> str:
    text = " ".join((subject or "").split())
    while True:
        stripped = pattern.sub("", text, count=1)
        if stripped == text:
            return text
        text = stripped


def reply_subject(parent_subject: str | None) -> str:
    """``Re: `` + the parent's Subject without its reply prefixes; whitespace runs (folding) become one space.

    ``"Re: RE: Aw: Invoice"`` -> ``"Re: Invoice"``; ``None`` or ``""`` -> ``"Re:"``. A forward prefix is kept
    (``"Fwd: Invoice"`` -> ``"Re: Fwd: Invoice"``): the reply answers a forward.
    """
    base = _base_subject(parent_subject, _REPLY_PREFIX)
    return f"Re: {base}" if base else "Re:"


def forward_subject(parent_subject: str | None) -> str:
    """``Fwd: `` + the Subject without its reply and forward prefixes (``"Re: Fwd: x"`` -> ``"Fwd: x"``)."""
    base = _base_subject(parent_subject, _ANY_PREFIX)
    return f"Fwd: {base}" if base else "Fwd:"


@dataclass(frozen=True)
class ParentFacts:
    """What a reply reads of the message it answers (``outbound.compose.parent_facts`` builds it).

    Attributes:
        message_id: ``msg_...``.
        subject: its Subject, or None.
        headers: its From, Reply-To, To and Cc fields as received, ``(name, value)`` in order (encoded words
            still encoded, so a quoted display name keeps its quotes).
        envelope_from: the SMTP reverse path it was delivered with (``""`` for a null one).
        envelope_to: the address it was delivered to.
        reply_refusal: the inbound classifier's refusal token, or None.
        from_name, from_address: the parsed From, as stored.
    """

    message_id: str
    subject: str | None
    headers: tuple[tuple[str, str], ...]
    envelope_from: str
    envelope_to: str
    reply_refusal: str | None
    from_name: str | None = None
    from_address: str | None = None


def _mailboxes(facts: ParentFacts, field: str) -> list[tuple[str, str]]:
    """``(display name, addr-spec)`` of every address in the parent's ``field`` headers, in order; an
    address that does not validate (``addresses.normalise_address``) is left out, and so is a header the
    ingress parse budgets would not read (``addresses.header_refusal``: too many addresses or words)."""
    from mailnode.addresses import header_refusal, normalise_address

    out: list[tuple[str, str]] = []
    for name, value in facts.headers:
        if name.lower() != field.lower() or header_refusal(value, address_list=True, spent_chars=0) is not None:
            continue
        for mailbox in getattr(_HEADERS(field, value), "addresses", ()):
            try:
                bare = normalise_address(mailbox.addr_spec, field.lower())
            except MailnodeError:
                # Not an address the seal could send to: left out of the reply, as the docstring says.
                continue
            out.append((mailbox.display_name.strip(), bare.address))
    return out


def _written(name: str, address: str) -> str:
    """An address as the seal reads it back (``addresses.parse_recipient``): quoted name when needed."""
    if not name:
        return address
    local, _, domain = address.rpartition("@")
    return str(Address(display_name=name, username=local, domain=domain))


def no_reply_recipient(message_id: str) -> MailnodeError:
    """The 422 for a parent with neither a usable Reply-To nor From."""
    return invalid("E_REPLY_HAS_NO_RECIPIENT", f"Message {message_id} names no address to reply to.",
                   "Neither its Reply-To nor its From header holds an address that validates.",
                   "Name the recipient yourself (to) and send again.", message_id=message_id)


def butler_reply_all(message_id: str) -> MailnodeError:
    """The 422 for a Butler asking to reply to all."""
    return invalid("E_BUTLER_REPLY_ALL", "A Butler's reply goes to the envelope sender only.",
                   "A Butler never addresses anyone the delivery's return path does not name (seed 003, "
                   "\"Who a Butler's reply goes to\").", "Reply without reply_all.", message_id=message_id)


def reply_recipients(facts: ParentFacts, *, own_addresses: frozenset[str], reply_all: bool, butler: bool,
                     named: Sequence[str] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``(to, cc)`` a reply adds to what the request ``named`` (its recipients as given, any kind).

    ``to`` is filled only when ``named`` is empty; ``cc`` holds reply-all's additions (empty without
    ``reply_all``). ``own_addresses`` are the mailbox's addresses, lower-cased. Addresses come back written
    as ``Name <local@domain>`` when the parent gave a display name. Raises ``E_REPLY_HAS_NO_RECIPIENT``
    (422), ``E_BUTLER_REPLY_ALL`` (422) and, for a Butler, ``outbound.butler_recipient``'s four refusals (422).
    """
    if butler and reply_all:
        raise butler_reply_all(facts.message_id)
    seen = {_address_key(v) for v in named} | set(own_addresses)
    to: list[str] = []
    if not named:
        if butler:
            recipient = reply_recipient(DELIVERY_EVENT, {
                "message_id": facts.message_id, "return_path": facts.envelope_from,
                "reply_refusal": facts.reply_refusal, "mailbox_address": facts.envelope_to})
            picked = [("", recipient)]
        else:
            picked = _mailboxes(facts, "Reply-To") or _mailboxes(facts, "From")
            if not picked and facts.from_address:
                picked = [(facts.from_name or "", facts.from_address)]
        for name, address in picked:
            if address.lower() not in seen:
                seen.add(address.lower())
                to.append(_written(name, address))
        if not to:
            raise no_reply_recipient(facts.message_id)
    cc: list[str] = []
    if reply_all:
        for name, address in _mailboxes(facts, "To") + _mailboxes(facts, "Cc"):
            if address.lower() not in seen:
                seen.add(address.lower())
                cc.append(_written(name, address))
    return tuple(to), tuple(cc)


def _address_key(value: str) -> str:
    """The lower-cased addr-spec of a recipient as a request gave it (bare or with a display name)."""
    groups: Any = getattr(_HEADERS("To", value), "addresses", ())
    return str(groups[0].addr_spec).lower() if len(groups) == 1 else value.strip().lower()


def _when(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if at is not None else "an unknown date"


def _who(name: str | None, address: str | None) -> str:
    if name and address:
        return f"{name} <{address}>"
    return name or address or "the sender"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + "\n[... quoted text shortened]"


def quote_original(text: str | None, *, at: datetime | None, from_name: str | None,
                   from_address: str | None, limit: int = budgets.REPLY_QUOTE_MAX_CHARS) -> str:
    """The parent's text quoted for a reply: ``On <date> UTC, <who> wrote:`` then each line prefixed ``> ``
    (``>`` alone for an empty line), the text first cut at ``limit`` characters. ``text`` None quotes
    nothing but the attribution (an HTML-only message has no stored text)."""
    lines = _cut((text or "").replace("\r\n", "\n").rstrip("\n"), limit).split("\n")
    quoted = "\n".join(f"> {line}" if line else ">" for line in lines)
    return f"On {_when(at)}, {_who(from_name, from_address)} wrote:\n{quoted}\n"


def forwarded_inline(text: str | None, *, subject: str | None, at: datetime | None, from_name: str | None,
                     from_address: str | None, to: str | None, limit: int = budgets.REPLY_QUOTE_MAX_CHARS) -> str:
    """A forwarded message as text: the block mail clients write (``---------- Forwarded message ----------``,
    From, Date, Subject, To), then its text cut at ``limit`` characters."""
    head = ["---------- Forwarded message ----------", f"From: {_who(from_name, from_address)}",
            f"Date: {_when(at)}", f"Subject: {subject or ''}"]
    if to:
        head.append(f"To: {to}")
    return "\n".join(head) + "\n\n" + _cut((text or "").replace("\r\n", "\n"), limit) + "\n"


#: Characters a forwarded message's attachment filename keeps; everything else becomes ``_``.
_FILENAME_UNSAFE = re.compile(r"[^\w .,()\-]+")


def forward_filename(subject: str | None) -> str:
    """The filename of a message forwarded as an attachment: its Subject made safe, ``.eml`` added."""
    stem = _FILENAME_UNSAFE.sub("_", " ".join((subject or "").split())).strip(" ._")[:100]
    return f"{stem or 'message'}.eml"
