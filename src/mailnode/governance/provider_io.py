"""The provider breaker's I/O: read a transport's ``provider_status`` row, fold an outcome in, write it, log.

The decisions are ``governance.provider`` (pure). This module reads the row into ``ProviderStatus``, calls
``record_outcome`` after every hand-over (every class, every call site: dispatch, the sweeper, realtime
mail) and ``may_send`` before one, writes the result, and logs each returned ``LogEvent`` at its level with
its token first, so an alert rule can match it (spec/transactional.md §2). One row per configured
transport, created on first use. A transport that never answered has no row and reads as ``open``.

Writers serialise on the row: PostgreSQL locks it (``SELECT ... FOR UPDATE``); SQLite's write
transactions are already exclusive (``BEGIN IMMEDIATE``). So two workers' answers never lose each other,
and ``record_outcome`` itself never shortens a pause in force.

Requests in flight (issue 17 item 2): before each provider request a worker calls ``reserve``, which, on
the locked row, counts the unanswered requests (``provider_requests`` rows under a live lease), asks
``may_send`` with them counted against the class's ceiling, and when allowed issues the next ticket and
records the request. ``record`` folds the answer in with its ticket (so an answer to an older request
never overwrites a newer reading or reopens a pause set after the request was made) and deletes the
request row; ``release`` deletes one that was never made. A worker that dies leaves its row counted until
its lease (the claim's) lapses: it may have been spent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from ulid import ULID

from mailnode.authz import is_admin
from mailnode.config import Settings
from mailnode.errors import not_an_administrator
from mailnode.governance.provider import (
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
from mailnode.log_events import LogEvent, LogLevel
from mailnode.schema.governance_provider import provider_requests, provider_status
from mailnode.transports.base import SubmitOutcome

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
                          pause_error=row.pause_error, last_success_at=row.last_success_at,
                          requests_issued=int(row.requests_issued or 0), reading_ticket=row.reading_ticket,
                          pause_ticket=row.pause_ticket)


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
              "pause_error": status.pause_error, "last_success_at": status.last_success_at, "updated_at": now,
              "reading_ticket": status.reading_ticket, "pause_ticket": status.pause_ticket}
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = insert(provider_status).values(transport=status.transport, **values)
    conn.execute(stmt.on_conflict_do_update(index_elements=["transport"], set_=values))


def _in_flight_count(transport: str, now: datetime) -> Any:
    """The scalar subquery: requests made to ``transport`` and not yet answered (under a live lease)."""
    r = provider_requests.c
    return (select(func.count()).select_from(provider_requests)
            .where(r.transport == transport, r.lease_until > now).scalar_subquery())


def _with_in_flight(transport: str, now: datetime) -> Any:
    """``transport``'s status row with its requests in flight as ``in_flight``, in one statement."""
    return (select(provider_status, _in_flight_count(transport, now).label("in_flight"))
            .where(provider_status.c.transport == transport))


def in_flight(conn: Connection, transport: str, now: datetime) -> int:
    """Requests made to ``transport`` and not yet answered (rows under a live lease). One statement."""
    return int(conn.execute(select(_in_flight_count(transport, now))).scalar_one())


@dataclass(frozen=True)
class Reservation:
    """The answer of ``reserve``: ``decision`` (``may_send``'s, in-flight requests counted) and, when it
    allowed the request, its ``ticket`` and ``request_id`` (pass both to ``record``)."""

    decision: Decision
    ticket: int | None = None
    request_id: str | None = None


def _locked_with_in_flight(conn: Connection, transport: str, now: datetime) -> Any:
    """The transport's ``provider_status`` row locked, with its requests in flight counted; None only on its
    first request, when this transaction's insert created the row (held locked until commit). One statement,
    one more on a transport's first request (two when another worker's insert won: its row is read)."""
    row = conn.execute(_with_in_flight(transport, now).with_for_update()).first()
    if row is None:
        # A transport's first request: create its row. An insert that took holds its new row locked until
        # commit; one that lost to another worker's insert reads (and locks) that worker's row instead.
        insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
        made = conn.execute(insert(provider_status).values(transport=transport, updated_at=now)
                            .on_conflict_do_nothing(index_elements=["transport"]))
        if made.rowcount != 1:
            row = conn.execute(_with_in_flight(transport, now).with_for_update()).first()
    return row


def reserve(conn: Connection, transport: str, mail_class: str, now: datetime, limits: ProviderLimits, *,
            lease_seconds: float, manifest_id: str | None = None) -> Reservation:
    """Ask for one provider request of ``mail_class`` with the requests in flight counted, and reserve it.

    On the locked row (created when missing): ``may_send(..., in_flight=n)``; when allowed, the next
    ticket is issued and a ``provider_requests`` row written with a lease of ``lease_seconds`` (seconds;
    the dispatch claim's). Three statements (the locked read with the count, the ticket counter, the request
row), one more on a transport's first request. Commit it before making the request, so another
    worker's reservation counts it. spec/transactional.md §2 "Reserve"; issue 17 item 2.
    """
    row = _locked_with_in_flight(conn, transport, now)
    status = from_row(transport, row)
    decision = may_send(status, mail_class, now, limits, in_flight=int(row.in_flight) if row is not None else 0)
    emit(decision.logs)
    if not decision.allowed:
        return Reservation(decision)
    ticket = status.requests_issued + 1
    conn.execute(update(provider_status).where(provider_status.c.transport == transport)
                 .values(requests_issued=ticket))
    request_id = f"prq_{ULID()}"
    conn.execute(provider_requests.insert().values(
        id=request_id, transport=transport, ticket=ticket, mail_class=str(mail_class), manifest_id=manifest_id,
        started_at=now, lease_until=now + timedelta(seconds=lease_seconds)))
    return Reservation(decision, ticket, request_id)


def reserve_many(conn: Connection, transport: str, requests: list[tuple[str, str | None]], now: datetime,
                 limits: ProviderLimits, *, lease_seconds: float) -> list[Reservation]:
    """``reserve`` for several requests at once, in order: ``requests`` is ``[(mail_class, manifest_id)]``.

    Each request is asked for on its own, exactly as that many ``reserve`` calls in one transaction would:
    ``may_send`` on the locked row with the requests in flight counted, those reserved before it in this
    call included; each allowed one gets its own ticket and request row. Three statements whatever the
    number (the locked read with the count, the ticket counter, one multi-row insert), one more on a
    transport's first request; one for an empty list of allowed requests. Issue 19: the dispatch batch
    reserves a window of its sends' requests together.
    """
    if not requests:
        return []
    row = _locked_with_in_flight(conn, transport, now)
    status = from_row(transport, row)
    flying = int(row.in_flight) if row is not None else 0
    ticket = status.requests_issued
    out: list[Reservation] = []
    rows: list[dict[str, Any]] = []
    for mail_class, manifest_id in requests:
        decision = may_send(status, mail_class, now, limits, in_flight=flying)
        emit(decision.logs)
        if not decision.allowed:
            out.append(Reservation(decision))
            continue
        ticket += 1
        flying += 1
        request_id = f"prq_{ULID()}"
        rows.append({"id": request_id, "transport": transport, "ticket": ticket, "mail_class": str(mail_class),
                     "manifest_id": manifest_id, "started_at": now,
                     "lease_until": now + timedelta(seconds=lease_seconds)})
        out.append(Reservation(decision, ticket, request_id))
    if rows:
        conn.execute(update(provider_status).where(provider_status.c.transport == transport)
                     .values(requests_issued=ticket))
        conn.execute(provider_requests.insert(), rows)
    return out


def release_many(conn: Connection, request_ids: Iterable[str | None]) -> None:
    """Delete reserved requests that were never made or whose answers are recorded. One statement (none
    for an empty list)."""
    ids = [r for r in request_ids if r is not None]
    if ids:
        conn.execute(delete(provider_requests).where(provider_requests.c.id.in_(ids)))


def record_many(conn: Connection, transport: str, answers: list[tuple[SubmitOutcome, datetime, int | None]],
                limits: ProviderLimits, *, request_ids: Iterable[str | None], now: datetime) -> ProviderStatus:
    """``record`` for several answers at once: ``answers`` is ``[(outcome, answered_at, ticket)]``.

    The request rows are deleted, the row is read locked once, every answer folded in with its ticket in
    the order given (``record_outcome``, as that many ``record`` calls would), and the row written once:
    three statements whatever the number. Returns the status written.
    """
    release_many(conn, request_ids)
    status = read_status(conn, transport, for_update=True)
    for outcome, answered_at, ticket in answers:
        recorded = record_outcome(status, outcome, answered_at, limits, ticket=ticket)
        emit(recorded.logs)
        status = recorded.status
    write_status(conn, status, now)
    return status


def release(conn: Connection, request_id: str | None) -> None:
    """Delete a reserved request that was never made (or whose answer is recorded). One statement."""
    if request_id is not None:
        conn.execute(delete(provider_requests).where(provider_requests.c.id == request_id))


def record(conn: Connection, transport: str, outcome: SubmitOutcome, now: datetime,
           limits: ProviderLimits, *, ticket: int | None = None, request_id: str | None = None) -> ProviderStatus:
    """Fold one hand-over's outcome into ``transport``'s row, write it and log what ``record_outcome`` said.

    Call it in the transaction that records the hand-over, after every hand-over of every class, with the
    ``ticket`` and ``request_id`` of its ``reserve`` (the request row is deleted: it is answered). Three
    statements (the request row, the locked read and the upsert). Returns the status written.
    """
    release(conn, request_id)
    current = read_status(conn, transport, for_update=True)
    recorded = record_outcome(current, outcome, now, limits, ticket=ticket)
    # Always written: a transport's first answer creates its row, so the API and the metrics list it.
    write_status(conn, recorded.status, now)
    emit(recorded.logs)
    return recorded.status


def decide(conn: Connection, transport: str, mail_class: str, now: datetime, limits: ProviderLimits, *,
           requests: int = 1) -> Decision:
    """``may_send`` for ``mail_class`` on ``transport``'s stored row at ``now``, the requests in flight
    counted, its logs written. One statement. A read: the request itself is reserved by ``reserve``.

    ``requests``: the provider requests the send will make (one per recipient); see ``provider.may_send``.
    """
    row = conn.execute(_with_in_flight(transport, now)).first()
    decision = may_send(from_row(transport, row), mail_class, now, limits, requests=requests,
                        in_flight=int(row.in_flight) if row is not None else 0)
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


def status_of(conn: Connection, *, org_id: str, actor_id: str, settings: Settings, now: datetime
              ) -> list[dict[str, Any]]:
    """Every stored transport's breaker (``to_json``) and the configured one even before its first answer;
    what ``GET /api/provider-status`` and the Limits and health page show. Administrators only: raises
    ``E_NOT_AN_ADMINISTRATOR`` (403) otherwise (operational posture is default-denied, seed 002), and
    ``E_PROVIDER_LIMITS_INCOHERENT`` (422) when the settings' ceilings are out of order."""
    limits = limits_of(settings)
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("read the provider status")
    rows = read_all(conn)
    if settings.transport not in {r.transport for r in rows}:
        rows.append(ProviderStatus(transport=settings.transport))
    return [to_json(r, now, limits) for r in rows]
