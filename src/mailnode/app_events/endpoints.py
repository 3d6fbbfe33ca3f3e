"""Webhook endpoints and their deliveries as the API sees them: register, read, change, remove, list
deliveries with their attempts, and send a delivery again.

Who may: an organisation's administrator, any endpoint of the organisation (and registers endpoints that
receive the events of all of the organisation's application mail); an application, only the endpoints it
registered (its own mail's events). Anyone else is refused (``E_NOT_AN_ADMINISTRATOR``, 403) at
registration; an endpoint or delivery the caller may not see answers ``E_NO_SUCH_WEBHOOK_ENDPOINT`` /
``E_NO_SUCH_WEBHOOK_DELIVERY`` (404) like an absent one. Each change is audited (``webhook.endpoint_*``,
``webhook.delivery_resent``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from mailnode import audit, authz, budgets
from mailnode.app_events import rules
from mailnode.errors import conflict, limit_exceeded, not_an_administrator, not_found
from mailnode.ids import new_id, parse_id
from mailnode.schema.app_events import webhook_attempts, webhook_deliveries, webhook_endpoints


def no_such_endpoint(endpoint_id: str) -> Exception:
    """``E_NO_SUCH_WEBHOOK_ENDPOINT`` (404)."""
    return not_found("E_NO_SUCH_WEBHOOK_ENDPOINT", f"No webhook endpoint {endpoint_id} that you may see.",
                     "List yours with GET /api/webhooks/endpoints.", endpoint_id=endpoint_id)


def no_such_delivery(delivery_id: str) -> Exception:
    """``E_NO_SUCH_WEBHOOK_DELIVERY`` (404)."""
    return not_found("E_NO_SUCH_WEBHOOK_DELIVERY", f"No webhook delivery {delivery_id} that you may see.",
                     "List an endpoint's deliveries with GET /api/webhooks/endpoints/{id}/deliveries.",
                     delivery_id=delivery_id)


def endpoint_view(row: Any) -> dict[str, Any]:
    """The API shape of one endpoint (never its secret)."""
    return {"id": row.id, "url": row.url, "owner_id": row.owner_id, "event_types": list(row.event_types),
            "tag_filter": list(row.tag_filter) if row.tag_filter is not None else None,
            "description": row.description, "enabled": row.disabled_at is None, "disabled_at": row.disabled_at,
            "disabled_reason": row.disabled_reason, "created_at": row.created_at}


def _may_register(conn: Connection, org_id: str, principal_id: str) -> None:
    if principal_id.startswith("app_"):
        return
    if not authz.is_admin(conn, org_id, principal_id):
        raise not_an_administrator("register a webhook endpoint")


def _seen(conn: Connection, org_id: str, principal_id: str, endpoint_id: str) -> Any:
    """The endpoint row when ``principal_id`` may see it (its owner, or an administrator), else None."""
    row = conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id,
                                                       webhook_endpoints.c.org_id == org_id)).first()
    if row is None or (row.owner_id != principal_id and not (principal_id.startswith("usr_")
                                                             and authz.is_admin(conn, org_id, principal_id))):
        return None
    return row


def _visible(conn: Connection, org_id: str, principal_id: str, endpoint_id: str) -> Any:
    """The endpoint row when ``principal_id`` may see it; ``E_ID_MALFORMED`` (422) or
    ``E_NO_SUCH_WEBHOOK_ENDPOINT`` (404) otherwise."""
    parse_id(endpoint_id, "whe", "endpoint_id")
    row = _seen(conn, org_id, principal_id, endpoint_id)
    if row is None:
        raise no_such_endpoint(endpoint_id)
    return row


def create_endpoint(conn: Connection, *, org_id: str, principal_id: str, at: datetime, url: str,
                    event_types: Sequence[str] | None, tag_filter: Sequence[str] | None,
                    description: str | None) -> dict[str, Any]:
    """Register an endpoint owned by ``principal_id``; the answer carries the signing ``secret``, shown only here.

    ``event_types`` None means every type. Raises ``E_NOT_AN_ADMINISTRATOR`` (403),
    ``E_WEBHOOK_URL_MALFORMED`` / ``E_WEBHOOK_EVENT_TYPE_UNKNOWN`` / ``E_WEBHOOK_TAG_FILTER_MALFORMED`` /
    ``E_BUDGET_EXCEEDED`` (``WEBHOOK_ENDPOINTS_PER_ORG_MAX``) (422). The address is checked for forgery at
    each delivery, not here: a name's addresses change.
    """
    _may_register(conn, org_id, principal_id)
    clean_url = rules.parse_url(url)
    every = [e.value for e in rules.EventType]
    types = rules.parse_event_types(list(event_types) if event_types is not None else every)
    tags = rules.parse_tag_filter(tag_filter)
    count = conn.execute(select(func.count()).select_from(webhook_endpoints)
                         .where(webhook_endpoints.c.org_id == org_id)).scalar_one()
    if count >= budgets.WEBHOOK_ENDPOINTS_PER_ORG_MAX:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "WEBHOOK_ENDPOINTS_PER_ORG_MAX",
                             budgets.WEBHOOK_ENDPOINTS_PER_ORG_MAX, count + 1,
                             "Remove an endpoint you no longer use (DELETE /api/webhooks/endpoints/{id}).")
    eid, secret = new_id("whe"), rules.new_secret()
    conn.execute(webhook_endpoints.insert().values(
        id=eid, org_id=org_id, owner_id=principal_id, url=clean_url, event_types=types, tag_filter=tags,
        secret=secret, description=description, created_at=at))
    audit.append(conn, org_id=org_id, at=at, action="webhook.endpoint_created", actor_id=principal_id,
                 subject=eid, detail={"url": clean_url, "event_types": types, "tag_filter": tags})
    row = conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.id == eid)).one()
    return {"endpoint": endpoint_view(row), "secret": secret}


def list_endpoints(conn: Connection, *, org_id: str, principal_id: str) -> list[dict[str, Any]]:
    """The endpoints ``principal_id`` may see (an administrator: all of the organisation's), by id."""
    q = select(webhook_endpoints).where(webhook_endpoints.c.org_id == org_id).order_by(webhook_endpoints.c.id)
    if not (principal_id.startswith("usr_") and authz.is_admin(conn, org_id, principal_id)):
        q = q.where(webhook_endpoints.c.owner_id == principal_id)
    return [endpoint_view(r) for r in conn.execute(q).all()]


def read_endpoint(conn: Connection, *, org_id: str, principal_id: str, endpoint_id: str) -> dict[str, Any]:
    """One endpoint; ``E_ID_MALFORMED`` (422), ``E_NO_SUCH_WEBHOOK_ENDPOINT`` (404)."""
    return endpoint_view(_visible(conn, org_id, principal_id, endpoint_id))


def change_endpoint(conn: Connection, *, org_id: str, principal_id: str, endpoint_id: str, at: datetime,
                    changes: dict[str, Any]) -> dict[str, Any]:
    """Apply ``changes`` (any of ``url``, ``event_types``, ``tag_filter`` (None clears it), ``description``,
    ``enabled``) and return the endpoint. Enabling clears the disabling; disabling marks its pending
    deliveries ``disabled`` (sent again one by one with ``resend``). Errors as ``create_endpoint`` and
    ``read_endpoint``."""
    row = _visible(conn, org_id, principal_id, endpoint_id)
    values: dict[str, Any] = {}
    if "url" in changes:
        values["url"] = rules.parse_url(changes["url"])
    if "event_types" in changes:
        values["event_types"] = rules.parse_event_types(changes["event_types"])
    if "tag_filter" in changes:
        values["tag_filter"] = rules.parse_tag_filter(changes["tag_filter"])
    if "description" in changes:
        values["description"] = changes["description"]
    if "enabled" in changes:
        if changes["enabled"] and row.disabled_at is not None:
            values.update(disabled_at=None, disabled_reason=None)
        elif not changes["enabled"] and row.disabled_at is None:
            values.update(disabled_at=at, disabled_reason=f"disabled by {principal_id}")
            disable_pending(conn, endpoint_id)
    if values:
        conn.execute(update(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id).values(**values))
        audit.append(conn, org_id=org_id, at=at, action="webhook.endpoint_changed", actor_id=principal_id,
                     subject=endpoint_id, detail={k: v for k, v in changes.items()})
    return endpoint_view(conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id)).one())


def disable_pending(conn: Connection, endpoint_id: str) -> None:
    """Mark the endpoint's pending deliveries ``disabled`` (one statement)."""
    conn.execute(update(webhook_deliveries).where(webhook_deliveries.c.endpoint_id == endpoint_id,
                                                  webhook_deliveries.c.state == rules.DeliveryState.PENDING.value)
                 .values(state=rules.DeliveryState.DISABLED.value, next_attempt_at=None))


def remove_endpoint(conn: Connection, *, org_id: str, principal_id: str, endpoint_id: str, at: datetime) -> None:
    """Remove the endpoint with its deliveries and their attempts. Errors as ``read_endpoint``."""
    _visible(conn, org_id, principal_id, endpoint_id)
    ids = select(webhook_deliveries.c.id).where(webhook_deliveries.c.endpoint_id == endpoint_id)
    conn.execute(delete(webhook_attempts).where(webhook_attempts.c.delivery_id.in_(ids)))
    conn.execute(delete(webhook_deliveries).where(webhook_deliveries.c.endpoint_id == endpoint_id))
    conn.execute(delete(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id))
    audit.append(conn, org_id=org_id, at=at, action="webhook.endpoint_removed", actor_id=principal_id,
                 subject=endpoint_id)


def delivery_view(row: Any, attempts: list[Any]) -> dict[str, Any]:
    """The API shape of one delivery with its attempts, oldest first."""
    return {"id": row.id, "endpoint_id": row.endpoint_id, "event_id": row.event_id, "event_type": row.event_type,
            "payload": row.payload, "state": row.state, "attempts": row.attempts,
            "next_attempt_at": row.next_attempt_at, "last_status_code": row.last_status_code,
            "last_error": row.last_error, "created_at": row.created_at, "delivered_at": row.delivered_at,
            "attempt_log": [{"id": a.id, "attempted_at": a.attempted_at, "address": a.address,
                             "status_code": a.status_code, "error": a.error, "response_excerpt": a.response_excerpt,
                             "response_bytes": a.response_bytes, "duration_ms": a.duration_ms} for a in attempts]}


def _views(conn: Connection, rows: Sequence[Any]) -> list[dict[str, Any]]:
    ids = [r.id for r in rows]
    by_delivery: dict[str, list[Any]] = {i: [] for i in ids}
    if ids:
        for a in conn.execute(select(webhook_attempts).where(webhook_attempts.c.delivery_id.in_(ids))
                              .order_by(webhook_attempts.c.attempted_at, webhook_attempts.c.id)).all():
            by_delivery[a.delivery_id].append(a)
    return [delivery_view(r, by_delivery[r.id]) for r in rows]


def list_deliveries(conn: Connection, *, org_id: str, principal_id: str, endpoint_id: str, limit: int,
                    cursor: str | None) -> list[dict[str, Any]]:
    """An endpoint's deliveries, newest first, after ``cursor`` (a ``whd_`` id), each with its attempts
    (two statements). Errors as ``read_endpoint``."""
    _visible(conn, org_id, principal_id, endpoint_id)
    q = (select(webhook_deliveries).where(webhook_deliveries.c.endpoint_id == endpoint_id)
         .order_by(webhook_deliveries.c.id.desc()).limit(limit))
    if cursor:
        q = q.where(webhook_deliveries.c.id < cursor)
    return _views(conn, conn.execute(q).all())


def resend_delivery(conn: Connection, *, org_id: str, principal_id: str, delivery_id: str,
                    at: datetime) -> dict[str, Any]:
    """Queue a delivery again now, whatever its state, with a fresh retry schedule (its ``event_id`` stays,
    so a receiver that saw it deduplicates). Raises ``E_ID_MALFORMED`` (422), ``E_NO_SUCH_WEBHOOK_DELIVERY``
    (404), ``E_WEBHOOK_ENDPOINT_DISABLED`` (409: enable the endpoint first)."""
    parse_id(delivery_id, "whd", "delivery_id")
    row = conn.execute(select(webhook_deliveries).where(webhook_deliveries.c.id == delivery_id,
                                                        webhook_deliveries.c.org_id == org_id)).first()
    if row is None:
        raise no_such_delivery(delivery_id)
    endpoint = _seen(conn, org_id, principal_id, row.endpoint_id)
    if endpoint is None:
        raise no_such_delivery(delivery_id)
    if endpoint.disabled_at is not None:
        raise conflict("E_WEBHOOK_ENDPOINT_DISABLED", f"Webhook endpoint {endpoint.id} is disabled.",
                       f"It was disabled at {endpoint.disabled_at.isoformat()}: {endpoint.disabled_reason}.",
                       f"Enable it with PATCH /api/webhooks/endpoints/{endpoint.id} {{\"enabled\": true}}.",
                       endpoint_id=endpoint.id)
    conn.execute(update(webhook_deliveries).where(webhook_deliveries.c.id == delivery_id).values(
        state=rules.DeliveryState.PENDING.value, attempts=0, next_attempt_at=at, delivered_at=None))
    audit.append(conn, org_id=org_id, at=at, action="webhook.delivery_resent", actor_id=principal_id,
                 subject=delivery_id)
    fresh = conn.execute(select(webhook_deliveries).where(webhook_deliveries.c.id == delivery_id)).one()
    return _views(conn, [fresh])[0]
