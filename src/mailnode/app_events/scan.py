"""The event scan: mail events read from what the node already records, turned into webhook deliveries.

Nothing on the dispatch path writes for webhooks (issue 20, "Numbers"): this pass reads, per organisation
with an enabled endpoint, the recipients whose submission state changed (``send_recipients``, by the index on
``(org_id, submission_state, submission_state_at)``) and the attributed delivery events
(``send_recipient_events``, by ``(org_id, event_type, received_at)``) since its durable cursor (a
``sweep_cursors`` row named ``webhook_events``), and writes one ``pending`` delivery per (endpoint, fact) an
endpoint asks for. The scan re-reads ``WEBHOOK_SCAN_OVERLAP_SECONDS`` behind its cursor so a row committed late
with an earlier time is not missed; the unique (endpoint, event key) makes a re-read write nothing.

Tags and metadata: ``mail_tags`` and ``mail_metadata`` read the manifest's ``tags`` and ``metadata`` columns
(what ``POST /api/mail`` was given; None when it was given none). A ``suppressed`` recipient's reason is its
``suppression_reason`` (``hard_bounce``, ``complaint``, ``manual``, ``import``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, select, update

from mailnode import budgets
from mailnode.app_events import rules
from mailnode.ids import new_id
from mailnode.outbound.mail_reads import APPLICATION_CLASSES
from mailnode.schema.app_events import webhook_deliveries, webhook_endpoints
from mailnode.schema.outbound import send_manifests, send_recipient_events, send_recipients
from mailnode.schema.retention import sweep_cursors

CURSOR_NAME = "webhook_events"

#: The manifest's columns an event carries besides its facts: the application's own labels.
_OPTIONAL = [send_manifests.c.tags, send_manifests.c.metadata]


@dataclass(frozen=True)
class Fact:
    """One recorded fact about one recipient of an application's mail, as an event."""

    key: str
    event: rules.EventType
    at: datetime
    author_id: str
    tags: list[str] | None
    data: dict[str, Any]


def _application_mail() -> Any:
    """Application mail, as ``GET /api/mail`` counts it: realtime or deferrable, and not the node's own
    (auto-submitted notices and codes). Correspondence and Butlers' mail give no webhook event."""
    return send_manifests.c.mail_class.in_([c.value for c in APPLICATION_CLASSES]) & \
        send_manifests.c.auto_submitted.is_(None)


def mail_tags(row: Any) -> list[str] | None:
    """The tags of the mail ``row`` (a manifest row or a join carrying its columns), or None when the node
    records none for it (no ``tags`` column, or NULL)."""
    value = row._mapping.get("tags")
    return [str(t) for t in value] if isinstance(value, list) else None


def mail_metadata(row: Any) -> dict[str, str] | None:
    """The metadata of the mail ``row``, or None when the node records none for it."""
    value = row._mapping.get("metadata")
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else None


def _data(row: Any, recipient: str, state: str, reason: str | None, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"mail_id": row.manifest_id, "mail_class": row.mail_class, "recipient": recipient,
                            "state": state, "reason": reason, "tags": mail_tags(row) or [], **extra}
    metadata = mail_metadata(row)
    if metadata is not None:
        data["metadata"] = metadata
    return data


def submission_facts(conn: Connection, org_id: str, since: datetime) -> list[Fact]:
    """Recipients of application mail (``_application_mail``) whose submission state gives an event, changed
    at or after ``since`` (one statement, at most ``WEBHOOK_SCAN_PAGE_MAX`` rows, oldest first)."""
    r, m = send_recipients.c, send_manifests.c
    states = [s.value for s, e in rules.EVENT_OF_SUBMISSION.items() if e is not None]
    rows = conn.execute(
        select(r.id, r.address, r.submission_state, r.submission_state_at, r.last_error, r.suppression_reason,
               r.manifest_id,
               m.author_id, m.mail_class, m.state_reason, *_OPTIONAL)
        .join(send_manifests, send_manifests.c.id == r.manifest_id)
        .where(r.org_id == org_id, r.submission_state.in_(states), r.submission_state_at >= since,
               _application_mail())
        .order_by(r.submission_state_at).limit(budgets.WEBHOOK_SCAN_PAGE_MAX)).all()
    out = []
    for row in rows:
        event = rules.event_of_submission(row.submission_state)
        if event is None:
            continue
        reason = (row.suppression_reason if row.submission_state == "suppressed"
                  else row.state_reason if row.submission_state != "handed_over" else None)
        out.append(Fact(f"srp:{row.id}:{row.submission_state}", event, row.submission_state_at, row.author_id,
                        mail_tags(row), _data(row, row.address, row.submission_state, reason or row.last_error)))
    return out


def recorded_facts(conn: Connection, org_id: str, since: datetime) -> list[Fact]:
    """Attributed delivery events (delivered, bounced, deferred, complained, failed ...) of application mail
    received at or after ``since`` (one statement, at most ``WEBHOOK_SCAN_PAGE_MAX`` rows, oldest first)."""
    e, m = send_recipient_events.c, send_manifests.c
    rows = conn.execute(
        select(e.id, e.event_type, e.recipient, e.status, e.bounce_type, e.source, e.received_at, e.detail,
               e.manifest_id, m.author_id, m.mail_class, *_OPTIONAL)
        .join(send_manifests, send_manifests.c.id == e.manifest_id)
        .where(e.org_id == org_id, e.event_type.in_(list(rules.EVENT_OF_RECORDED)), e.received_at >= since,
               _application_mail())
        .order_by(e.received_at).limit(budgets.WEBHOOK_SCAN_PAGE_MAX)).all()
    out = []
    for row in rows:
        event = rules.event_of_recorded(row.event_type)
        if event is None:
            continue
        detail = row.detail if isinstance(row.detail, dict) else {}
        out.append(Fact(f"sre:{row.id}", event, row.received_at, row.author_id, mail_tags(row),
                        _data(row, row.recipient, row.event_type, detail.get("diagnostic"), status=row.status,
                              bounce_type=row.bounce_type, source=row.source)))
    return out


def scan_org(conn: Connection, org_id: str, now: datetime) -> list[str]:
    """One scan of one organisation inside the caller's transaction; the ids of the deliveries written.

    Reads the enabled endpoints, the facts since the cursor (minus the overlap), writes the deliveries each
    endpoint asks for (event type, who sees the mail, tag filter, facts at or after the endpoint was made),
    then moves the cursor: to ``now`` minus the overlap, or to the last fact read of a full page.
    """
    endpoints = conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.org_id == org_id,
                                                             webhook_endpoints.c.disabled_at.is_(None))).all()
    if not endpoints:
        return []
    cursor = conn.execute(select(sweep_cursors.c.at).where(sweep_cursors.c.org_id == org_id,
                                                           sweep_cursors.c.name == CURSOR_NAME)).scalar()
    overlap = timedelta(seconds=budgets.WEBHOOK_SCAN_OVERLAP_SECONDS)
    since = cursor if cursor is not None else min(ep.created_at for ep in endpoints) - overlap
    pages = [submission_facts(conn, org_id, since), recorded_facts(conn, org_id, since)]
    full = [page[-1].at for page in pages if len(page) >= budgets.WEBHOOK_SCAN_PAGE_MAX]
    wanted = [(ep, fact) for page in pages for fact in page for ep in endpoints
              if fact.event.value in ep.event_types and fact.at >= ep.created_at
              and rules.endpoint_sees(ep.owner_id, fact.author_id) and rules.tags_match(ep.tag_filter, fact.tags)]
    written: list[str] = []
    if wanted:
        keys = {f.key for _, f in wanted}
        have = {(r.endpoint_id, r.event_key) for r in conn.execute(
            select(webhook_deliveries.c.endpoint_id, webhook_deliveries.c.event_key)
            .where(webhook_deliveries.c.org_id == org_id, webhook_deliveries.c.event_key.in_(keys))).all()}
        for ep, fact in wanted:
            if (ep.id, fact.key) in have:
                continue
            did = new_id("whd")
            conn.execute(webhook_deliveries.insert().values(
                id=did, org_id=org_id, endpoint_id=ep.id, event_id=new_id("evt"), event_key=fact.key,
                event_type=fact.event.value, payload=rules.payload(fact.event, fact.at, fact.data),
                state=rules.DeliveryState.PENDING.value, attempts=0, next_attempt_at=now, created_at=now))
            have.add((ep.id, fact.key))
            written.append(did)
    moved = min(full) if full else now - overlap
    _save_cursor(conn, org_id, max(moved, since))
    return written


def _save_cursor(conn: Connection, org_id: str, at: datetime) -> None:
    where = and_(sweep_cursors.c.org_id == org_id, sweep_cursors.c.name == CURSOR_NAME)
    if conn.execute(update(sweep_cursors).where(where).values(at=at)).rowcount == 0:
        conn.execute(sweep_cursors.insert().values(org_id=org_id, name=CURSOR_NAME, at=at))
