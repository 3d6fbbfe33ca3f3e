"""Recording a verified provider webhook event: dedup by event id, attribution, the delivery state.

Called with a ``ProviderEvent`` that ``outbound.webhooks.verify_resend_webhook`` produced (nothing here
trusts an unverified body). Attribution is by the provider's email id, then the Message-ID it reports
(``outbound.events.by_provider_id``); an unattributed event is kept with ``manifest_id`` NULL under the
node's organisation. Delivery kinds go through ``outbound.events.record`` (out-of-order rule for
``delivery_state``; a complaint moves none); observations (``sent``, ``opened``, ``clicked``,
``scheduled``) are stored and move nothing, except that ``sent`` fills in the recipient's provider
Message-ID when the transport could not read it. A repeated event id changes nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.exc import IntegrityError

from mailnode.db import integrity
from mailnode.errors import MailnodeError
from mailnode.ids import new_id
from mailnode.outbound import events
from mailnode.outbound.webhooks import EventKind, ProviderEvent
from mailnode.schema.directory import organisations
from mailnode.schema.outbound import send_manifests, send_recipient_events, send_recipients

SOURCE = "resend"


def _org_of(conn: Connection, attribution: events.Attribution | None) -> str:
    if attribution is not None:
        return str(conn.execute(select(send_manifests.c.org_id)
                                .where(send_manifests.c.id == attribution.manifest_id)).scalar_one())
    row = conn.execute(select(organisations.c.id).order_by(organisations.c.created_at).limit(1)).first()
    if row is None:
        raise MailnodeError(code="E_NOT_INITIALISED", what="The node has no organisation to file the event under.",
                            why="mailnode init has not been run.", fix="Run mailnode init.", status=409)
    return str(row.id)


def record_provider_event(conn: Connection, event: ProviderEvent, at: datetime) -> dict[str, Any]:
    """Store ``event`` once; returns ``{"recorded", "duplicate", "ignored", "attributed", "event_id"}``.

    ``duplicate`` only when the event id violates ``events.DEDUP_INDEX``; any other integrity error
    re-raises ``sqlalchemy.exc.IntegrityError`` (nothing is recorded as a duplicate that was not one).
    """
    if event.kind is None:
        return {"recorded": False, "duplicate": False, "ignored": True, "attributed": False, "event_id": None}
    attribution = None
    if event.provider_email_id:
        attribution = events.by_provider_id(conn, None, event.provider_email_id)
    if attribution is None and event.message_id:
        attribution = events.by_provider_id(conn, None, event.message_id)
    org_id = _org_of(conn, attribution)
    recipient = event.recipients[0] if event.recipients else None
    detail = {"provider_type": event.provider_type, "email_id": event.provider_email_id,
              "message_id": event.message_id, "diagnostic": event.reason,
              "occurred_at": event.occurred_at.isoformat() if event.occurred_at else None}
    if event.kind.value in events.DELIVERY_STATE_FOR_EVENT:
        eid = events.record(conn, org_id=org_id, event=event.kind.value, attribution=attribution, recipient=recipient,
                            status=None, source=SOURCE, source_event_id=event.event_id, at=at,
                            bounce_type=event.bounce_kind, detail=detail)
    else:
        eid = _observation(conn, org_id, event, attribution, recipient, at, detail)
    if eid is not None and attribution is not None and event.kind is EventKind.SENT and event.message_id:
        conn.execute(update(send_recipients).where(send_recipients.c.id == attribution.recipient_id,
                                                   send_recipients.c.provider_message_id.is_(None))
                     .values(provider_message_id=event.message_id))
    return {"recorded": eid is not None, "duplicate": eid is None, "ignored": False,
            "attributed": attribution is not None, "event_id": eid}


def _observation(conn: Connection, org_id: str, event: ProviderEvent, attribution: events.Attribution | None,
                 recipient: str | None, at: datetime, detail: dict[str, Any]) -> str | None:
    eid = new_id("sev")
    try:
        with conn.begin_nested():
            conn.execute(send_recipient_events.insert().values(
                id=eid, org_id=org_id, event_type=event.kind.value if event.kind else event.provider_type[:30],
                recipient=recipient, manifest_id=attribution.manifest_id if attribution else None,
                recipient_id=attribution.recipient_id if attribution else None, status=None, bounce_type=None,
                source=SOURCE, source_event_id=event.event_id, message_id=None, received_at=at, detail=detail))
    except IntegrityError as exc:
        # Only the dedup index means "recorded before"; a foreign-key or any other violation is a defect.
        if not integrity.violates(exc, send_recipient_events, events.DEDUP_INDEX):
            raise
        return None
    return eid
