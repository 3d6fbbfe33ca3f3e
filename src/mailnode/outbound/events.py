"""Recording delivery signals: provider events and inbound delivery reports, attributed or not.

Attribution finds the recipient row a signal is about, in order: the recipient row a VERP return path
names; the per-recipient provider/transport message id; the original Message-ID of one of this node's
sends (then the recipient by address within it). An unattributed signal is kept with ``manifest_id``
NULL and is never counted by a breaker. An attributed one moves the recipient's ``delivery_state`` only
from NULL or ``deferred`` (out-of-order safe, enforced in SQL); a complaint moves none (spec/outbound.md
Part A §7, §18).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from mailnode.db import integrity
from mailnode.ids import new_id
from mailnode.outbound import suppression
from mailnode.schema.outbound import send_manifests, send_recipient_events, send_recipients

#: The unique index an event is deduplicated on: one row per ``(source, source_event_id)``.
DEDUP_INDEX = "uq_send_recipient_events_source"

#: The normalised event vocabulary of attributed rows, and the delivery_state each one writes (None: none).
DELIVERY_STATE_FOR_EVENT: dict[str, str | None] = {
    "delivered": "accepted",
    "bounced": "bounced",
    "deferred": "deferred",
    "failed": "failed",
    "rejected": "rejected",
    "complained": None,
}

#: What an unattributed inbound report is recorded as, by normalised event.
UNATTRIBUTED_TYPE_FOR_EVENT: dict[str, str] = {
    "delivered": "delivery_report",
    "bounced": "delivery_report",
    "deferred": "delivery_report",
    "failed": "delivery_report",
    "rejected": "delivery_report",
    "complained": "complaint_report",
}


@dataclass(frozen=True)
class Attribution:
    """The recipient row and manifest a signal is about."""

    manifest_id: str
    recipient_id: str


def by_recipient_id(conn: Connection, recipient_id: str) -> Attribution | None:
    """Attribution through a recipient row id (the VERP token)."""
    row = conn.execute(select(send_recipients.c.id, send_recipients.c.manifest_id)
                       .where(send_recipients.c.id == recipient_id)).first()
    return Attribution(row.manifest_id, row.id) if row else None


def by_provider_id(conn: Connection, org_id: str | None, provider_id: str) -> Attribution | None:
    """Attribution through the provider's email id or the Message-ID it reported for a recipient."""
    key = provider_id.strip()
    q = select(send_recipients.c.id, send_recipients.c.manifest_id).where(
        or_(send_recipients.c.transport_message_id == key, send_recipients.c.provider_message_id == key,
            send_recipients.c.provider_message_id == key.strip("<>")))
    if org_id:
        q = q.where(send_recipients.c.org_id == org_id)
    row = conn.execute(q.limit(1)).first()
    return Attribution(row.manifest_id, row.id) if row else None


def by_message_id(conn: Connection, org_id: str, rfc_message_id: str, address: str) -> Attribution | None:
    """Attribution through the original Message-ID of one of this node's sends and the recipient's address."""
    key = rfc_message_id.strip().strip("<>")
    if not key:
        return None
    manifest = conn.execute(select(send_manifests.c.id).where(send_manifests.c.org_id == org_id,
                                                              send_manifests.c.rfc_message_id == key)).first()
    if manifest is None:
        provider = by_provider_id(conn, org_id, key)
        if provider is None:
            return None
        manifest_id = provider.manifest_id
    else:
        manifest_id = manifest.id
    row = conn.execute(select(send_recipients.c.id).where(
        send_recipients.c.manifest_id == manifest_id,
        func.lower(send_recipients.c.address) == address.strip().lower())).first()
    return Attribution(manifest_id, row.id) if row else None


def record(conn: Connection, *, org_id: str, event: str | None, attribution: Attribution | None, recipient: str | None,
           status: str | None, source: str, source_event_id: str, at: datetime, message_id: str | None = None,
           bounce_type: str | None = None, detail: dict[str, Any] | None = None) -> str | None:
    """Insert one event row (deduplicated on ``(source, source_event_id)``) and apply its delivery state.

    ``event`` is a normalised type (``DELIVERY_STATE_FOR_EVENT``'s keys), or None for a reported
    recipient whose outcome could not be read: that row is kept as an unattributed ``delivery_report``
    (visible, never counted, never moving a state). Returns the new row id, or None when the same event
    was recorded before (a violation of ``DEDUP_INDEX`` and nothing else, ``db.integrity.violates``). An
    unknown ``event`` string raises ``KeyError`` (fail closed); any other integrity error (an unknown
    ``org_id``: a foreign key) re-raises ``sqlalchemy.exc.IntegrityError``.

    In the same transaction, an attributed hard bounce or complaint puts the recipient's address on the
    organisation's suppression list (``outbound.suppression.record_event``; a repeated event adds nothing).
    """
    if event is None:
        attribution = None
        delivery_state = None
        event_type = "delivery_report"
    else:
        delivery_state = DELIVERY_STATE_FOR_EVENT[event]
        event_type = event if attribution else UNATTRIBUTED_TYPE_FOR_EVENT[event]
    eid = new_id("sev")
    try:
        with conn.begin_nested():
            conn.execute(send_recipient_events.insert().values(
                id=eid, org_id=org_id, event_type=event_type, recipient=recipient,
                manifest_id=attribution.manifest_id if attribution else None,
                recipient_id=attribution.recipient_id if attribution else None, status=status,
                bounce_type=bounce_type, source=source, source_event_id=source_event_id, message_id=message_id,
                received_at=at, detail=detail,
            ))
    except IntegrityError as exc:
        # Only the dedup index means "recorded before"; a foreign-key or any other violation is a defect.
        if not integrity.violates(exc, send_recipient_events, DEDUP_INDEX):
            raise
        return None
    if attribution and delivery_state is not None:
        conn.execute(
            update(send_recipients)
            .where(send_recipients.c.id == attribution.recipient_id,
                   or_(send_recipients.c.delivery_state.is_(None), send_recipients.c.delivery_state == "deferred"))
            .values(delivery_state=delivery_state, delivery_state_at=at, last_event_id=eid,
                    bounce_type=bounce_type, last_error=(detail or {}).get("diagnostic"))
        )
    suppression.record_event(conn, org_id=org_id, event_id=eid, event=event, bounce_type=bounce_type,
                             address=recipient, send_id=attribution.manifest_id if attribution else None,
                             recipient_id=attribution.recipient_id if attribution else None, at=at)
    return eid
