"""Resend webhooks: verify the Svix signature over the raw bytes, then normalise the event.

``verify_resend_webhook(body, headers, secret)`` is the only way in: it checks the signature (HMAC-SHA256
over ``id.timestamp.body``, ±5 min tolerance, any one ``v1`` entry, constant time; spec/resend.md §9.4)
with the svix library before the body is parsed, and raises ``E_WEBHOOK_SIGNATURE_INVALID`` (401) for
anything it cannot prove. ``normalise_event_type`` is a total map from Resend's event types onto mailnode's
vocabulary and fails closed on a type it has never seen. Nothing here writes; the caller deduplicates by
``event_id`` (the ``svix-id``, stable across Svix's retries) and attributes by ``provider_email_id``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from svix.webhooks import Webhook, WebhookVerificationError

from mailnode.errors import MailnodeError, invalid


class EventKind(StrEnum):
    """mailnode's normalised provider events.

    Delivery events (they may move a recipient's ``delivery_state``; see ``DELIVERY_STATE_FOR``):
    ``delivered``, ``bounced``, ``deferred``, ``failed``, ``rejected``; ``complained`` is recorded and
    counted but moves no state (spec/outbound.md Part A 7). Observations (stored, never a state):
    ``sent`` (the provider accepted it), ``scheduled``, ``opened``, ``clicked``.
    """

    DELIVERED = "delivered"
    BOUNCED = "bounced"
    COMPLAINED = "complained"
    DEFERRED = "deferred"
    FAILED = "failed"
    REJECTED = "rejected"
    SENT = "sent"
    SCHEDULED = "scheduled"
    OPENED = "opened"
    CLICKED = "clicked"


#: The ``delivery_state`` each kind writes (None: stored, changes no state). Total over ``EventKind``.
DELIVERY_STATE_FOR: dict[EventKind, str | None] = {
    EventKind.DELIVERED: "accepted",
    EventKind.BOUNCED: "bounced",
    EventKind.DEFERRED: "deferred",
    EventKind.FAILED: "failed",
    EventKind.REJECTED: "rejected",
    EventKind.COMPLAINED: None,
    EventKind.SENT: None,
    EventKind.SCHEDULED: None,
    EventKind.OPENED: None,
    EventKind.CLICKED: None,
}

#: Resend's outbound email event types (spec/resend.md §9.1) and their kind. ``email.suppressed``: the
#: provider declined to send to a listed address, which is a rejection, not a bounce.
RESEND_EVENT_KINDS: dict[str, EventKind] = {
    "email.sent": EventKind.SENT,
    "email.scheduled": EventKind.SCHEDULED,
    "email.delivered": EventKind.DELIVERED,
    "email.delivery_delayed": EventKind.DEFERRED,
    "email.bounced": EventKind.BOUNCED,
    "email.complained": EventKind.COMPLAINED,
    "email.failed": EventKind.FAILED,
    "email.suppressed": EventKind.REJECTED,
    "email.opened": EventKind.OPENED,
    "email.clicked": EventKind.CLICKED,
}

#: Resend event types that are not about an outbound email; accepted and ignored (kind None).
#: ``email.received`` is inbound mail, which the inbound webhook path handles.
RESEND_IGNORED_TYPES: frozenset[str] = frozenset(
    {
        "email.received",
        "domain.created",
        "domain.updated",
        "domain.deleted",
        "contact.created",
        "contact.updated",
        "contact.deleted",
        "contact.topics.updated",
        "suppression.added",
        "suppression.removed",
        "topic.created",
        "topic.updated",
        "topic.deleted",
    }
)
#: Prefixes of families that are not outbound email events (``inbox.*`` is a private beta, §9.1).
RESEND_IGNORED_PREFIXES: tuple[str, ...] = ("inbox.",)

BounceKind = Literal["hard", "soft"]

#: ``bounce.type`` values (spec/resend.md §9.3; SES's taxonomy) and the bounce kind. ``Undetermined``
#: is soft: nothing proves the address is dead, and a hard bounce would stop all further mail to it.
_BOUNCE_KIND: dict[str, BounceKind] = {
    "permanent": "hard",
    "transient": "soft",
    "temporary": "soft",
    "undetermined": "soft",
}


@dataclass(frozen=True)
class ProviderEvent:
    """One verified, normalised provider event.

    Attributes:
        event_id: the ``svix-id`` header, the deduplication key.
        provider_type: the provider's ``type`` verbatim (``email.bounced``).
        kind: the normalised ``EventKind``, or None for a type mailnode ignores.
        provider_email_id: ``data.email_id``, the attribution key (the id ``POST /emails`` returned).
        recipients: ``data.to`` as bare addresses, lower-cased domain kept as sent.
        message_id: ``data.message_id`` (the RFC Message-ID Resend sent), absent before July 2026.
        occurred_at: the envelope ``created_at`` (when the event happened), aware UTC, or None.
        bounce_kind: ``hard``/``soft`` for a bounce, else None.
        reason: the provider's words for a bounce, failure or suppression, else None.
        raw: the parsed JSON body.
    """

    event_id: str
    provider_type: str
    kind: EventKind | None
    provider_email_id: str | None
    recipients: tuple[str, ...]
    message_id: str | None
    occurred_at: datetime | None
    bounce_kind: BounceKind | None
    reason: str | None
    raw: Mapping[str, Any]


def normalise_event_type(provider_type: str) -> EventKind | None:
    """Map a Resend event type to an ``EventKind``; None for a type that is deliberately ignored.

    Raises ``E_WEBHOOK_EVENT_UNKNOWN`` (422) for any other type: an event mailnode does not understand
    is never guessed at. The caller keeps the raw body and answers non-2xx, so the provider retries it
    after an upgrade.
    """
    kind = RESEND_EVENT_KINDS.get(provider_type)
    if kind is not None:
        return kind
    if provider_type in RESEND_IGNORED_TYPES or provider_type.startswith(RESEND_IGNORED_PREFIXES):
        return None
    raise invalid(
        "E_WEBHOOK_EVENT_UNKNOWN",
        f"The provider event type {provider_type!r} is not known.",
        "mailnode maps every provider event onto its own vocabulary and refuses to guess a new one.",
        "Upgrade mailnode to a version that knows this event type; the provider will retry the delivery.",
        provider_type=provider_type[:100],
    )


def bounce_kind_of(kind: EventKind | None, data: Mapping[str, Any]) -> BounceKind | None:
    """The bounce kind of a ``bounced`` event from ``data.bounce.type``; None for other kinds.

    ``Permanent`` → hard; ``Transient``/``Temporary``/``Undetermined`` → soft. A bounce without a type
    (the 2023 payloads, including suppressions reported as bounces) is hard: Resend documents
    ``email.bounced`` as a permanent rejection. A type mailnode does not know is soft (not proven dead).
    """
    if kind is not EventKind.BOUNCED:
        return None
    bounce = data.get("bounce")
    bounce_type = bounce.get("type") if isinstance(bounce, Mapping) else None
    if not isinstance(bounce_type, str) or not bounce_type:
        return "hard"
    return _BOUNCE_KIND.get(bounce_type.lower(), "soft")


def verify_resend_webhook(body: bytes, headers: Mapping[str, str], secret: str) -> ProviderEvent:
    """Verify ``body`` (the raw request bytes) against the Svix headers, then parse and normalise it.

    Args:
        body: the request body exactly as received; re-serialised JSON does not verify.
        headers: the request headers (any case); ``svix-id``, ``svix-timestamp``, ``svix-signature``.
        secret: the endpoint's signing secret, ``whsec_<base64>``.

    Raises:
        ``E_WEBHOOK_SIGNATURE_INVALID`` (401): missing headers, a stale or future timestamp (±5 min),
        no matching signature, a malformed signature header, a body that is not UTF-8, or a signature
        that verified over a body that is not a JSON object with a string ``type``.
        ``E_WEBHOOK_EVENT_UNKNOWN`` (422): a verified event of a type mailnode does not know.
        ``E_WEBHOOK_NOT_CONFIGURED`` (404): no secret is configured, so this node receives no webhooks
        (every one would otherwise pass or fail for the wrong reason). 404, not 500: the sender reached an
        endpoint that is not set up here, which is not the node failing; the provider keeps retrying a 404
        (Svix retries every non-2xx for days), so events sent before the operator sets the secret still
        arrive once it is set.
    """
    if not secret or secret == "whsec_":
        raise MailnodeError(
            code="E_WEBHOOK_NOT_CONFIGURED",
            what="This node receives no Resend webhooks: none is configured.",
            why="A webhook is accepted only when its signature verifies against the endpoint's signing secret, "
                "and this node has none, so it can verify nothing.",
            fix="If you operate this node: set MAILNODE_RESEND_WEBHOOK_SECRET to the endpoint's whsec_... "
                "secret and restart; the provider's retries then arrive. Otherwise, check the endpoint URL.",
            status=404,
        )
    try:
        # svix 2.x returns None from verify(); the body is parsed below, only after it verified.
        Webhook(secret).verify(body, dict(headers))
    except (WebhookVerificationError, ValueError) as exc:
        # ValueError covers a malformed signature header, bad base64 and a non-UTF-8 body
        # (binascii.Error and UnicodeDecodeError subclass it); see spec/libraries.md §1.
        raise _signature_invalid(f"{type(exc).__name__}: {exc}") from exc
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise _signature_invalid("the signed body is not JSON") from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise _signature_invalid("the signed body is not an event object with a type")
    lowered = {k.lower(): v for k, v in headers.items()}
    event_id = lowered.get("svix-id") or lowered.get("webhook-id") or ""
    return parse_event(event_id, payload)


def parse_event(event_id: str, payload: Mapping[str, Any]) -> ProviderEvent:
    """Build a ``ProviderEvent`` from an already verified payload (pure; see ``verify_resend_webhook``).

    Accepts both the 2023 and the current payload shapes (spec/resend.md §9.3, §11): ``message_id`` and
    ``bounce.type`` may be absent; ``to`` entries may carry display names (``Name <a@b>``).
    Raises ``E_WEBHOOK_EVENT_UNKNOWN`` (422) for an unknown ``type``.
    """
    provider_type = str(payload.get("type", ""))
    kind = normalise_event_type(provider_type)
    data = payload.get("data")
    data = data if isinstance(data, Mapping) else {}
    email_id = data.get("email_id")
    message_id = data.get("message_id")
    return ProviderEvent(
        event_id=event_id,
        provider_type=provider_type,
        kind=kind,
        provider_email_id=email_id if isinstance(email_id, str) and email_id else None,
        recipients=_recipients(data.get("to")),
        message_id=message_id if isinstance(message_id, str) and message_id else None,
        occurred_at=_parse_time(payload.get("created_at")),
        bounce_kind=bounce_kind_of(kind, data),
        reason=_reason(data),
        raw=payload,
    )


def _recipients(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        text = item.strip()
        # "Name <a@b>" carries the address between the last pair of angle brackets.
        if text.endswith(">") and "<" in text:
            text = text[text.rindex("<") + 1 : -1].strip()
        if text:
            out.append(text)
    return tuple(out)


def _reason(data: Mapping[str, Any]) -> str | None:
    for key in ("bounce", "failed", "suppressed"):
        part = data.get(key)
        if isinstance(part, Mapping):
            for field in ("message", "reason"):
                value = part.get(field)
                if isinstance(value, str) and value:
                    return value
    return None


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    # PostgreSQL text form (``2026-04-03 22:13:42.674981+00``) also appears (spec/resend.md §8).
    if text.endswith(("+00", "-00")) and len(text) > 3 and text[-3] in "+-":
        text += ":00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _signature_invalid(why: str) -> MailnodeError:
    return MailnodeError(
        code="E_WEBHOOK_SIGNATURE_INVALID",
        what="The webhook's signature could not be verified.",
        why=why,
        fix="Check that MAILNODE_RESEND_WEBHOOK_SECRET is this endpoint's whsec_... secret and that "
        "nothing between Resend and mailnode rewrites the body.",
        status=401,
        detail={"reason": why[:200]},
    )
