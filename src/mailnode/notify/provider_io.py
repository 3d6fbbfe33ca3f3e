"""The provider breaker's I/O: read a transport's ``provider_status`` row, fold an outcome in, write it, log.

The decisions are ``notify.provider`` (pure). This module reads the row into ``ProviderStatus``, calls
``record_outcome`` after every hand-over (every class, every call site: dispatch, the sweeper, realtime
mail) and ``may_send`` before one, writes the result, and logs each returned ``LogEvent`` at its level with
its token first, so an alert rule can match it (spec/transactional.md §2). One row per configured
transport, created on first use. A transport that never answered has no row and reads as ``open``.

Writers serialise on the row: PostgreSQL locks it (``SELECT ... FOR UPDATE``); SQLite's write
transactions are already exclusive (``BEGIN IMMEDIATE``). So two workers' answers never lose each other,
and ``record_outcome`` itself never shortens a pause in force.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects import postgresql, sqlite

from mailnode.config import Settings
from mailnode.notify.log import LogEvent, LogLevel
from mailnode.notify.provider import (
    Decision,
    PauseKind,
    ProviderLimits,
    ProviderStatus,
    breaker_state,
    may_send,
    quota_percent,
    reading_today,
    record_outcome,
)
from mailnode.notify.tables import provider_status
from mailnode.outbound.transports.base import SubmitOutcome

log = logging.getLogger("mailnode.provider")

_LEVELS: dict[LogLevel, int] = {LogLevel.INFO: logging.INFO, LogLevel.WARNING: logging.WARNING,
                                LogLevel.ERROR: logging.ERROR}


def limits_of(settings: Settings) -> ProviderLimits:
    """The daily limit and ceilings from the settings (``provider_daily_limit`` 0 = no daily cap).

    Raises ``E_PROVIDER_LIMITS_INCOHERENT`` (422) when the ceilings are out of order.
    """
    daily = settings.provider_daily_limit or None
    return ProviderLimits(daily_limit=daily, realtime_ceiling=settings.provider_realtime_ceiling,
                          correspondence_ceiling=settings.provider_correspondence_ceiling)


def emit(logs: Iterable[LogEvent]) -> None:
    """Write each ``LogEvent`` at its level as ``<token> key=value ...`` on ``mailnode.provider``."""
    for event in logs:
        detail = " ".join(f"{k}={v}" for k, v in event.detail.items())
        log.log(_LEVELS.get(event.level, logging.ERROR), "%s %s", event.token, detail)


def from_row(transport: str, row: Any) -> ProviderStatus:
    """A stored row (or None) as ``ProviderStatus``; an unknown pause kind reads as ``systemic`` (fail closed)."""
    if row is None:
        return ProviderStatus(transport=transport)
    kind: PauseKind | None
    try:
        kind = PauseKind(row.pause_kind) if row.pause_kind is not None else None
    except ValueError:
        # A kind this version does not know is read as systemic, so the breaker stays shut until its end.
        log.error("provider.pause_kind_not_classified transport=%s kind=%s", transport, row.pause_kind)
        kind = PauseKind.SYSTEMIC
    return ProviderStatus(transport=transport, daily_used=row.daily_used, daily_observed_at=row.daily_observed_at,
                          pause_kind=kind, paused_at=row.paused_at, unavailable_until=row.unavailable_until,
                          pause_error=row.pause_error, last_success_at=row.last_success_at)


def read_status(conn: Connection, transport: str, *, for_update: bool = False) -> ProviderStatus:
    """The stored ``ProviderStatus`` of ``transport`` (a blank, open one when it has no row). One statement."""
    q = select(provider_status).where(provider_status.c.transport == transport)
    if for_update:
        q = q.with_for_update()
    return from_row(transport, conn.execute(q).first())


def read_all(conn: Connection) -> list[ProviderStatus]:
    """Every stored row, by transport name."""
    rows = conn.execute(select(provider_status).order_by(provider_status.c.transport)).all()
    return [from_row(r.transport, r) for r in rows]


def write_status(conn: Connection, status: ProviderStatus, now: datetime) -> None:
    """Insert or replace the row of ``status.transport`` (an upsert on both databases)."""
    values = {"daily_used": status.daily_used, "daily_observed_at": status.daily_observed_at,
              "pause_kind": status.pause_kind.value if status.pause_kind is not None else None,
              "paused_at": status.paused_at, "unavailable_until": status.unavailable_until,
              "pause_error": status.pause_error, "last_success_at": status.last_success_at, "updated_at": now}
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = insert(provider_status).values(transport=status.transport, **values)
    conn.execute(stmt.on_conflict_do_update(index_elements=["transport"], set_=values))


def record(conn: Connection, transport: str, outcome: SubmitOutcome, now: datetime,
           limits: ProviderLimits) -> ProviderStatus:
    """Fold one hand-over's outcome into ``transport``'s row, write it and log what ``record_outcome`` said.

    Call it in the transaction that records the hand-over, after every hand-over of every class. Two
    statements (the locked read and the upsert). Returns the status written.
    """
    current = read_status(conn, transport, for_update=True)
    recorded = record_outcome(current, outcome, now, limits)
    # Always written: a transport's first answer creates its row, so the API and the metrics list it.
    write_status(conn, recorded.status, now)
    emit(recorded.logs)
    return recorded.status


def decide(conn: Connection, transport: str, mail_class: str, now: datetime, limits: ProviderLimits, *,
           requests: int = 1) -> Decision:
    """``may_send`` for ``mail_class`` on ``transport``'s stored row at ``now``, its logs written. One statement.

    ``requests``: the provider requests the send will make (one per recipient); see ``provider.may_send``.
    """
    decision = may_send(read_status(conn, transport), mail_class, now, limits, requests=requests)
    emit(decision.logs)
    return decision


def clear_pause(conn: Connection, transport: str, now: datetime) -> None:
    """Remove a pause in force by hand (an operator who fixed the key); the reading is kept."""
    conn.execute(update(provider_status).where(provider_status.c.transport == transport)
                 .values(pause_kind=None, paused_at=None, unavailable_until=None, pause_error=None, updated_at=now))


def to_json(status: ProviderStatus, now: datetime, limits: ProviderLimits) -> dict[str, Any]:
    """The API shape of one transport's breaker at ``now`` (``GET /api/provider-status``).

    ``quota_percent`` is null, never 0, when there is no reading today (no reassuring zeros).
    """
    reading = reading_today(status, now, limits)
    return {
        "transport": status.transport,
        "state": breaker_state(status, now).value,
        "pause_kind": status.pause_kind.value if status.pause_kind is not None else None,
        "pause_error": status.pause_error,
        "paused_at": status.paused_at.isoformat() if status.paused_at else None,
        "unavailable_until": status.unavailable_until.isoformat() if status.unavailable_until else None,
        "last_success_at": status.last_success_at.isoformat() if status.last_success_at else None,
        "daily_used": reading.value,
        "daily_observed_at": status.daily_observed_at.isoformat() if status.daily_observed_at else None,
        "daily_limit": limits.daily_limit,
        "quota_percent": quota_percent(status, now, limits),
        "ceilings": {"realtime": limits.realtime_ceiling, "correspondence": limits.correspondence_ceiling,
                     "deferrable": limits.daily_limit},
    }
