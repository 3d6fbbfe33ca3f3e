"""Pure decisions of webhooks to applications: the event vocabulary, who sees an event, the server-side
request forgery verdict, the back-off, and what an attempt's answer means. No I/O.

Every map keyed on a stored state is total over its enum and fails closed on a value it has never seen: an
unknown recorded event becomes no webhook event (it is not guessed), an unknown address is refused.
Standard Webhooks (https://www.standardwebhooks.com/, "Retry schedule", "Signature scheme") is the contract.
"""

from __future__ import annotations

import base64
import ipaddress
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from mailnode import budgets
from mailnode.errors import invalid
from mailnode.vocabulary.send_states import SendState

#: The default port of each scheme an endpoint may use (RFC 9110 section 4.2.1 and 4.2.2).
DEFAULT_PORTS = {"http": 80, "https": 443}
#: The status classes (RFC 9110 section 15.3, "Successful 2xx"; 15.4, "Redirection 3xx").
SUCCESS_CLASS = range(200, 300)
REDIRECT_CLASS = range(300, 400)


class EventType(StrEnum):
    """A webhook event's type: what happened to one recipient of an application's mail."""

    HANDED_OVER = "mail.handed_over"
    DELIVERED = "mail.delivered"
    DEFERRED = "mail.deferred"
    BOUNCED = "mail.bounced"
    COMPLAINED = "mail.complained"
    FAILED = "mail.failed"
    WITHHELD = "mail.withheld"
    SUPPRESSED = "mail.suppressed"


class DeliveryState(StrEnum):
    """A webhook delivery's state: ``pending`` (an attempt is due at ``next_attempt_at``), ``delivered`` (a
    2xx answer), ``failed`` (the retry schedule ran out), ``disabled`` (its endpoint was disabled first)."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"
    DISABLED = "disabled"


#: The webhook event of a recipient's ``submission_state`` (``send_recipients``). Total over ``SendState``:
#: the states that are not an outcome an application waits for (held, awaiting ...) give no event.
EVENT_OF_SUBMISSION: dict[SendState, EventType | None] = {
    SendState.HELD: None,
    SendState.AWAITING: None,
    SendState.CANCELLED: None,
    SendState.WITHHELD: EventType.WITHHELD,
    SendState.THROTTLED: None,
    SendState.REFUSED: EventType.FAILED,
    SendState.SUPPRESSED: EventType.SUPPRESSED,
    SendState.HANDED_OVER: EventType.HANDED_OVER,
    SendState.OUTCOME_UNKNOWN: None,
}

#: The webhook event of an attributed ``send_recipient_events.event_type`` (``outbound.events``).
EVENT_OF_RECORDED: dict[str, EventType] = {
    "delivered": EventType.DELIVERED,
    "bounced": EventType.BOUNCED,
    "deferred": EventType.DEFERRED,
    "complained": EventType.COMPLAINED,
    "failed": EventType.FAILED,
    "rejected": EventType.FAILED,
}


def event_of_submission(state: str) -> EventType | None:
    """The event a recipient's submission ``state`` gives, or None (no event, or a state never seen)."""
    try:
        return EVENT_OF_SUBMISSION[SendState(state)]
    except ValueError:
        return None


def event_of_recorded(event_type: str) -> EventType | None:
    """The event a recorded delivery event gives, or None for an unknown type (fail closed)."""
    return EVENT_OF_RECORDED.get(event_type)


def parse_event_types(values: Sequence[str]) -> list[str]:
    """The event types an endpoint asks for, deduplicated in vocabulary order.

    Raises ``E_WEBHOOK_EVENT_TYPE_UNKNOWN`` (422) for an empty list or a type outside ``EventType``.
    """
    known = [e.value for e in EventType]
    unknown = sorted({v for v in values if v not in known})
    if unknown or not values:
        raise invalid("E_WEBHOOK_EVENT_TYPE_UNKNOWN", f"Unknown webhook event types: {unknown or '(none given)'}.",
                      "An endpoint receives one or more of the node's mail event types.",
                      f"Pass event_types from: {', '.join(known)}.", unknown=unknown, known=known)
    return [k for k in known if k in values]


def parse_tag_filter(values: Sequence[str] | None) -> list[str] | None:
    """An endpoint's tag filter: None (every event) or a non-empty list of distinct tags, at most
    ``budgets.WEBHOOK_TAG_FILTER_MAX``. Raises ``E_WEBHOOK_TAG_FILTER_MALFORMED`` (422)."""
    if values is None:
        return None
    tags = list(dict.fromkeys(v.strip() for v in values))
    if not tags or len(tags) > budgets.WEBHOOK_TAG_FILTER_MAX or any(not t for t in tags):
        raise invalid("E_WEBHOOK_TAG_FILTER_MALFORMED", "The tag filter must hold 1 to "
                      f"{budgets.WEBHOOK_TAG_FILTER_MAX} non-empty tags.",
                      "An event passes the filter when its mail carries one of the tags; an empty filter "
                      "would pass nothing.", "Pass tag_filter: null for every event, or a short list of tags.",
                      limit=budgets.WEBHOOK_TAG_FILTER_MAX)
    return tags


def tags_match(tag_filter: Sequence[str] | None, tags: Iterable[str] | None) -> bool:
    """Whether an event of mail carrying ``tags`` passes an endpoint's ``tag_filter``.

    No filter passes everything. A filter passes mail carrying at least one of its tags; mail whose tags
    are unknown (None: the node records none for it) passes no filter (fail closed).
    """
    if tag_filter is None:
        return True
    if tags is None:
        return False
    return bool(set(tag_filter) & set(tags))


def endpoint_sees(owner_id: str, author_id: str) -> bool:
    """Whether an endpoint registered by ``owner_id`` receives the events of mail authored by ``author_id``.

    Both are application mail (the scan reads no other): an application's (``app_``) endpoint sees its own
    mail only; an administrator's (``usr_``) endpoint sees all of the organisation's, whoever sent it (as
    ``GET /api/mail`` lists it to an administrator). Any other owner sees nothing (fail closed).
    """
    if owner_id.startswith("app_"):
        return author_id == owner_id
    return owner_id.startswith("usr_")


def new_secret() -> str:
    """A signing secret as Standard Webhooks writes it: ``whsec_`` and base64 of
    ``budgets.WEBHOOK_SECRET_BYTES`` random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(budgets.WEBHOOK_SECRET_BYTES)).decode("ascii")


def parse_url(url: str) -> str:
    """An endpoint URL: ``http`` or ``https`` with a host, no credentials, at most
    ``budgets.WEBHOOK_URL_MAX_CHARS``. Raises ``E_WEBHOOK_URL_MALFORMED`` (422)."""
    problem = None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        parts, port, problem = None, None, str(exc)
    if parts is not None and problem is None:
        if len(url) > budgets.WEBHOOK_URL_MAX_CHARS:
            problem = f"longer than {budgets.WEBHOOK_URL_MAX_CHARS} characters"
        elif parts.scheme not in ("http", "https"):
            problem = "the scheme is not http or https"
        elif not parts.hostname:
            problem = "there is no host"
        elif parts.username is not None or parts.password is not None:
            problem = "it carries credentials"
        elif port == 0:
            problem = "port 0"
    if problem is not None:
        raise invalid("E_WEBHOOK_URL_MALFORMED", f"The webhook URL cannot be used: {problem}.",
                      "The node POSTs each event to an http(s) URL of the receiver.",
                      "Pass url: https://host[:port]/path.", url=url[:200])
    return url


@dataclass(frozen=True)
class Verdict:
    """The forgery guard's answer: ``address`` to connect to when allowed, else None and ``refusal``."""

    address: str | None
    refusal: str | None


def address_refusal(address: str) -> str | None:
    """Why the node refuses to connect to ``address`` (an IPv4 or IPv6 literal), or None for a public one.

    IPv4-mapped IPv6 addresses (``::ffff:127.0.0.1``) are judged as the IPv4 address they carry. Refused:
    loopback, link-local, private (RFC 1918, RFC 4193 ...), multicast, unspecified, reserved, and anything
    else the IANA special-purpose registries do not call globally reachable; an unreadable address too.
    """
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    checks = (("loopback", ip.is_loopback), ("link-local", ip.is_link_local), ("multicast", ip.is_multicast),
              ("unspecified", ip.is_unspecified), ("reserved", ip.is_reserved), ("private", ip.is_private),
              ("not globally reachable", not ip.is_global))
    for name, hit in checks:
        if hit:
            return f"{ip} is a {name} address" if name != "not globally reachable" else f"{ip} is {name}"
    return None


def ssrf_verdict(host: str, addresses: Sequence[str], allow_hosts: Iterable[str]) -> Verdict:
    """Whether the node may call ``host``, which resolved to ``addresses``, and at which address.

    A host in ``allow_hosts`` (the administrator's ``MAILNODE_WEBHOOK_ALLOW_HOSTS``, compared lower-cased)
    is allowed at its first address. Otherwise every address must be public (``address_refusal``): a name
    that resolves to one public and one private address is refused, since either could be used. No address
    at all is refused. The caller connects to ``Verdict.address`` and resolves nothing again.
    """
    if not addresses:
        return Verdict(None, f"{host} resolves to no address")
    if host.lower().strip("[]") in {h.lower().strip("[]") for h in allow_hosts}:
        return Verdict(addresses[0], None)
    for address in addresses:
        refusal = address_refusal(address)
        if refusal is not None:
            return Verdict(None, f"{host}: {refusal}; allow it with MAILNODE_WEBHOOK_ALLOW_HOSTS")
    return Verdict(addresses[0], None)


def retry_delay(attempts_made: int, schedule: Sequence[int]) -> int | None:
    """Seconds until the next attempt after ``attempts_made`` failed ones, or None when the schedule ran
    out (the delivery fails and its endpoint is disabled). ``schedule[i]`` is the delay after attempt i+1."""
    if attempts_made < 1 or attempts_made > len(schedule):
        return None
    return int(schedule[attempts_made - 1])


def answered_ok(status_code: int | None) -> bool:
    """Whether an attempt delivered: a 2xx answer. A 3xx is not followed and is a failed attempt, as is
    every other status and no answer at all (Standard Webhooks, "Retry schedule")."""
    return status_code is not None and status_code in SUCCESS_CLASS


def payload(event: EventType, created_at: datetime, data: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of one event: ``{"type", "created_at" (ISO 8601 UTC), "data"}``."""
    return {"type": event.value, "created_at": created_at.isoformat().replace("+00:00", "Z"), "data": data}
