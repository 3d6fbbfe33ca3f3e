"""The three rate breakers and the domain pause, read in one SQL statement, and their reading (seed 000).

Breakers are derived, not maintained: each rate is a windowed ``COUNT`` over append-only rows that
already exist (``send_recipients`` handed over, ``send_recipient_events``), so there is no counter, no
timer and nothing to reset; a breaker clears when its rows age out of the window.

=================  ==========================================  ===============================  ========
breaker            numerator (``observed``)                    observations                     window
=================  ==========================================  ===============================  ========
``volume``         recipients handed over                      the same count                   1 h
``bounce_rate``    attributed ``bounced`` events               see *basis* below                6 h
``complaint_rate`` attributed ``complained`` events            attributed ``delivered`` events  24 h
=================  ==========================================  ===============================  ========

Every sub-select that counts ``send_recipient_events`` carries both predicates, added by the one helper
``_event_where``: the normalised ``event_type IN (...)`` and ``manifest_id IS NOT NULL``. Each excludes
a different foreign row: an inbound delivery report about another system's mail (stored unattributed as
``delivery_report``) and a provider event this node cannot tie to one of its sends (``manifest_id``
NULL). ``deferred``, ``failed`` and ``rejected`` are in neither half of the bounce rate; a success DSN
(2.x.x) is recorded as ``delivered`` and so is never a bounce (spec/outbound.md §3.1, Part A 18).

The bounce rate's *basis* (spec/outbound.md Part A 19): for a transport that reports deliveries
(``delivery_signals == "webhook"``) the observations are attributed ``delivered`` + ``bounced`` events
(basis ``events``); for one that reports only failures (``dsn``) they are the recipients handed over in
the window (basis ``handed_over``); for one that reports nothing (``none``, the ``file`` transport) the
events basis is kept, so the rate stays unarmed rather than reading a reassuring 0 %.

Limits and minimum observations default to ``budgets.BREAKER_*`` and may be overridden per organisation
in ``breaker_limits`` (read inside the same statement); the windows are node-wide budgets because each
is the bound of an index seek. ``statement`` also answers the domain pause for the sending domain, the
number of pauses in force, the organisation's volume over ``budgets.POLICY_DAILY_VOLUME_WINDOW_SECONDS``
(for the policy condition) and, when given recipient domains, how many of them are the organisation's.

``evaluate(conn, ...)`` runs exactly one statement (asserted by a test with the statement meter) and
returns a ``BreakerState``; ``read(counts, ...)`` is the pure reading, tested as a table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from sqlalchemy import Connection, and_, func, null, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ClauseElement, ColumnElement
from sqlalchemy.sql.expression import Executable

from mailnode import budgets
from mailnode.clock import utc
from mailnode.errors import MailnodeError
from mailnode.schema.directory import domains
from mailnode.schema.governance import breaker_limits, domain_pauses
from mailnode.schema.outbound import send_recipient_events, send_recipients

#: How a transport reports delivery (``transports.base.DeliverySignals``).
DeliverySignals = Literal["webhook", "dsn", "none"]
#: Which observations the bounce rate divides by (see the module docstring).
Basis = Literal["events", "handed_over"]

#: The normalised event types a breaker counts (``outbound.events``); nothing else is ever counted.
DELIVERED = "delivered"
BOUNCED = "bounced"
COMPLAINED = "complained"
#: ``send_recipients.submission_state`` of a recipient the transport accepted.
HANDED_OVER = "handed_over"


class Breaker(StrEnum):
    """The rate breakers, in evaluation and report order (the first tripped one gates)."""

    VOLUME = "volume"
    BOUNCE_RATE = "bounce_rate"
    COMPLAINT_RATE = "complaint_rate"


#: The ``state_reason`` a tripped breaker gates with (``awaiting`` + this). Total over ``Breaker``.
REASON_OF: dict[Breaker, str] = {
    Breaker.VOLUME: "breaker_volume",
    Breaker.BOUNCE_RATE: "breaker_bounce_rate",
    Breaker.COMPLAINT_RATE: "breaker_complaint_rate",
}

class UnarmedReason(StrEnum):
    """Why a rate breaker is unarmed (``Reading.unarmed_reason``; spec/outbound.md §3.2).

    ``no_observations``: nothing was observed in the window. ``too_few_observations``: something was, but
    fewer than the reading's ``min_observations``. Naming the shortfall keeps ``observations: 3`` from
    sitting next to a reason that says there were none.
    """

    NO_OBSERVATIONS = "no_observations"
    TOO_FEW_OBSERVATIONS = "too_few_observations"


#: The words each unarmed reason puts in a reading's sentence. Total over ``UnarmedReason``.
UNARMED_WORDS: dict[UnarmedReason, str] = {
    UnarmedReason.NO_OBSERVATIONS: "nothing observed",
    UnarmedReason.TOO_FEW_OBSERVATIONS: "too few observations",
}


def unarmed_reason(observations: int, min_observations: int) -> UnarmedReason | None:
    """Why a rate with ``observations`` in its window and a minimum of ``min_observations`` is unarmed (pure).

    None when it is armed (``observations >= min_observations`` and at least one observation). A negative
    count is a defect and reads as ``no_observations`` (unarmed: fail closed, never armed on a bad count).
    """
    if observations <= 0:
        return UnarmedReason.NO_OBSERVATIONS
    if observations < min_observations:
        return UnarmedReason.TOO_FEW_OBSERVATIONS
    return None


#: Window of each breaker, seconds (budgets; not overridable, see the module docstring). Total over ``Breaker``.
WINDOW_SECONDS: dict[Breaker, int] = {
    Breaker.VOLUME: budgets.BREAKER_VOLUME_WINDOW_SECONDS,
    Breaker.BOUNCE_RATE: budgets.BREAKER_BOUNCE_WINDOW_SECONDS,
    Breaker.COMPLAINT_RATE: budgets.BREAKER_COMPLAINT_WINDOW_SECONDS,
}

#: The bounce rate's basis for each kind of delivery signal. Total over ``DeliverySignals``.
BASIS_FOR_SIGNALS: dict[str, Basis] = {"webhook": "events", "dsn": "handed_over", "none": "events"}

#: The two predicates every event-counting sub-select carries; tests remove one to show it is load-bearing.
EVENT_PREDICATES: frozenset[str] = frozenset({"event_type", "attributed"})


@dataclass(frozen=True)
class Limits:
    """The limits in force for one organisation (budgets, or that organisation's override)."""

    volume_max_recipients: int = budgets.BREAKER_VOLUME_MAX_RECIPIENTS
    bounce_max_percent: int = budgets.BREAKER_BOUNCE_MAX_PERCENT
    bounce_min_observations: int = budgets.BREAKER_BOUNCE_MIN_OBSERVATIONS
    complaint_max_percent: int = budgets.BREAKER_COMPLAINT_MAX_PERCENT
    complaint_min_observations: int = budgets.BREAKER_COMPLAINT_MIN_OBSERVATIONS

    @classmethod
    def with_overrides(cls, **values: int | None) -> Limits:
        """The defaults with every non-None value replaced."""
        return cls(**{k: v for k, v in values.items() if v is not None})


@dataclass(frozen=True)
class Counts:
    """The statement's answer (zeros and Nones for an empty node). Times are aware UTC.

    Attributes:
        volume_n / volume_oldest: recipients handed over in the volume window, and the oldest of them.
        bounce_delivered / bounce_n / bounce_oldest: attributed delivered and bounced events in the bounce
            window, and the oldest bounced one.
        bounce_handed_over: recipients handed over in the bounce window (the ``handed_over`` basis).
        complaint_delivered / complaint_n / complaint_oldest: attributed delivered and complained events in
            the complaint window, and the oldest complained one.
        limits: the limits in force.
        pause_id / pause_placed_at / pause_reason: the pause in force on the sending domain, if any.
        pauses_in_force: pauses in force on any of the organisation's domains.
        day_volume: recipients handed over in ``budgets.POLICY_DAILY_VOLUME_WINDOW_SECONDS``.
        known_recipient_domains: how many of the given recipient domains are the organisation's (None
            when none were given).
    """

    volume_n: int = 0
    volume_oldest: datetime | None = None
    bounce_delivered: int = 0
    bounce_n: int = 0
    bounce_oldest: datetime | None = None
    bounce_handed_over: int = 0
    complaint_delivered: int = 0
    complaint_n: int = 0
    complaint_oldest: datetime | None = None
    limits: Limits = Limits()
    pause_id: str | None = None
    pause_placed_at: datetime | None = None
    pause_reason: str | None = None
    pauses_in_force: int = 0
    day_volume: int = 0
    known_recipient_domains: int | None = None


@dataclass(frozen=True)
class Reading:
    """One breaker's reading (spec/outbound.md §3.2; the shape ``GET /api/breakers`` serves).

    ``percent`` is None whenever the rate is unarmed, and always for ``volume`` (a count has no
    denominator): never a reassuring 0. ``retry_after_seconds`` is measured from the oldest numerator
    row still in the window; it is exact only for ``volume`` (for a rate the denominator moves too, so
    it is the earliest the answer can change).
    """

    breaker: Breaker
    observations: int
    observed: int
    limit: int
    min_observations: int | None
    window_seconds: int
    armed: bool
    unarmed_reason: str | None
    percent: int | None
    tripped: bool
    retry_after_seconds: int | None
    retry_after_exact: bool
    basis: Basis
    sentence: str

    @property
    def reason(self) -> str:
        """The ``state_reason`` this breaker gates with."""
        return REASON_OF[self.breaker]

    def to_json(self) -> dict[str, Any]:
        """The API shape (snake_case)."""
        return {
            "breaker": self.breaker.value, "observations": self.observations, "observed": self.observed,
            "limit": self.limit, "min_observations": self.min_observations,
            "window_seconds": self.window_seconds, "armed": self.armed, "unarmed_reason": self.unarmed_reason,
            "percent": self.percent, "tripped": self.tripped, "retry_after_seconds": self.retry_after_seconds,
            "retry_after_exact": self.retry_after_exact, "basis": self.basis, "sentence": self.sentence,
        }


@dataclass(frozen=True)
class PauseInForce:
    """The domain pause in force on a sending domain."""

    id: str
    domain: str
    placed_at: datetime
    reason: str


@dataclass(frozen=True)
class BreakerState:
    """Everything the one statement told: the three readings, the pause and the extras."""

    readings: tuple[Reading, ...]
    pause: PauseInForce | None
    pauses_in_force: int
    day_volume: int
    known_recipient_domains: int | None

    @property
    def gate(self) -> Reading | None:
        """The first tripped reading in ``Breaker`` order, or None."""
        return next((r for r in self.readings if r.tripped), None)

    def reading(self, breaker: Breaker) -> Reading:
        """The reading of ``breaker``."""
        return next(r for r in self.readings if r.breaker is breaker)


def _event_where(org_id: str, types: Sequence[str], start: datetime,
                 predicates: frozenset[str]) -> list[ColumnElement[bool]]:
    """The WHERE of every event-counting sub-select: the organisation, the window and both predicates."""
    e = send_recipient_events.c
    where: list[ColumnElement[bool]] = [e.org_id == org_id, e.received_at > start]
    if "event_type" in predicates:
        where.append(e.event_type.in_(list(types)))
    if "attributed" in predicates:
        where.append(e.manifest_id.is_not(None))
    return where


def _events(org_id: str, types: Sequence[str], start: datetime, predicates: frozenset[str],
            oldest: bool = False) -> Any:
    col = func.min(send_recipient_events.c.received_at) if oldest else func.count()
    return select(col).select_from(send_recipient_events).where(
        *_event_where(org_id, types, start, predicates)).scalar_subquery()


def _handed_over(org_id: str, start: datetime, oldest: bool = False) -> Any:
    r = send_recipients.c
    col = func.min(r.submission_state_at) if oldest else func.count()
    return select(col).select_from(send_recipients).where(
        r.org_id == org_id, r.submission_state == HANDED_OVER, r.submission_state_at > start).scalar_subquery()


def _limit(org_id: str, column: str) -> Any:
    return select(breaker_limits.c[column]).where(breaker_limits.c.org_id == org_id).scalar_subquery()


def _in_force() -> ColumnElement[bool]:
    return and_(domain_pauses.c.placed_at.is_not(None), domain_pauses.c.lifted_at.is_(None))


def _pause(org_id: str, domain: str | None, column: str) -> Any:
    if domain is None:
        return null()
    p = domain_pauses.c
    return select(p[column]).where(p.org_id == org_id, p.domain == domain, _in_force()).limit(1).scalar_subquery()


LIMIT_COLUMNS = ("volume_max_recipients", "bounce_max_percent", "bounce_min_observations",
                 "complaint_max_percent", "complaint_min_observations")


def statement(*, org_id: str, now: datetime, sending_domain: str | None = None,
              recipient_domains: Iterable[str] | None = None,
              event_predicates: frozenset[str] = EVENT_PREDICATES) -> Select[Any]:
    """The one SELECT of scalar sub-selects (no FROM) answering every breaker and the pause.

    ``sending_domain`` (IDNA, lower case) asks for the pause on that domain (None skips it: the doctor
    and ``GET /api/breakers``); ``recipient_domains`` asks how many of them are the organisation's.
    ``event_predicates`` exists so a test can remove one predicate and watch a corpus test fail; nothing
    else passes it.
    """
    vol_start = now - timedelta(seconds=WINDOW_SECONDS[Breaker.VOLUME])
    bounce_start = now - timedelta(seconds=WINDOW_SECONDS[Breaker.BOUNCE_RATE])
    complaint_start = now - timedelta(seconds=WINDOW_SECONDS[Breaker.COMPLAINT_RATE])
    day_start = now - timedelta(seconds=budgets.POLICY_DAILY_VOLUME_WINDOW_SECONDS)
    preds = event_predicates
    wanted = sorted(set(recipient_domains)) if recipient_domains is not None else None
    known: Any = null()
    if wanted:
        known = select(func.count()).select_from(domains).where(
            domains.c.org_id == org_id, domains.c.domain.in_(wanted)).scalar_subquery()
    p = domain_pauses.c
    columns = [
        _handed_over(org_id, vol_start).label("volume_n"),
        _handed_over(org_id, vol_start, oldest=True).label("volume_oldest"),
        _events(org_id, [DELIVERED], bounce_start, preds).label("bounce_delivered"),
        _events(org_id, [BOUNCED], bounce_start, preds).label("bounce_n"),
        _events(org_id, [BOUNCED], bounce_start, preds, oldest=True).label("bounce_oldest"),
        _handed_over(org_id, bounce_start).label("bounce_handed_over"),
        _events(org_id, [DELIVERED], complaint_start, preds).label("complaint_delivered"),
        _events(org_id, [COMPLAINED], complaint_start, preds).label("complaint_n"),
        _events(org_id, [COMPLAINED], complaint_start, preds, oldest=True).label("complaint_oldest"),
        *(_limit(org_id, c).label(f"limit_{c}") for c in LIMIT_COLUMNS),
        _pause(org_id, sending_domain, "id").label("pause_id"),
        _pause(org_id, sending_domain, "placed_at").label("pause_placed_at"),
        _pause(org_id, sending_domain, "reason").label("pause_reason"),
        select(func.count()).select_from(domain_pauses)
        .where(p.org_id == org_id, _in_force()).scalar_subquery().label("pauses_in_force"),
        _handed_over(org_id, day_start).label("day_volume"),
        known.label("known_recipient_domains"),
    ]
    return select(*columns)


def _when(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        # A MIN() over a timestamp column may come back as text on SQLite when the type is lost.
        return utc(datetime.fromisoformat(value))
    return utc(value)


def fetch(conn: Connection, *, org_id: str, now: datetime, sending_domain: str | None = None,
          recipient_domains: Iterable[str] | None = None,
          event_predicates: frozenset[str] = EVENT_PREDICATES) -> Counts:
    """Run ``statement`` (exactly one SQL statement) and return its ``Counts``."""
    row = conn.execute(statement(org_id=org_id, now=now, sending_domain=sending_domain,
                                 recipient_domains=recipient_domains, event_predicates=event_predicates)).one()
    limits = Limits.with_overrides(**{c: row._mapping[f"limit_{c}"] for c in LIMIT_COLUMNS})
    return Counts(
        volume_n=int(row.volume_n or 0), volume_oldest=_when(row.volume_oldest),
        bounce_delivered=int(row.bounce_delivered or 0), bounce_n=int(row.bounce_n or 0),
        bounce_oldest=_when(row.bounce_oldest), bounce_handed_over=int(row.bounce_handed_over or 0),
        complaint_delivered=int(row.complaint_delivered or 0), complaint_n=int(row.complaint_n or 0),
        complaint_oldest=_when(row.complaint_oldest), limits=limits, pause_id=row.pause_id,
        pause_placed_at=_when(row.pause_placed_at), pause_reason=row.pause_reason,
        pauses_in_force=int(row.pauses_in_force or 0), day_volume=int(row.day_volume or 0),
        known_recipient_domains=None if row.known_recipient_domains is None else int(row.known_recipient_domains),
    )


def _retry_after(oldest: datetime | None, window: int, now: datetime) -> int | None:
    if oldest is None:
        return None
    remaining = (utc(oldest) + timedelta(seconds=window) - utc(now)).total_seconds()
    return max(1, math.ceil(remaining))


def _minutes(seconds: int) -> str:
    return f"{seconds // 60} minutes"


def read_rate(breaker: Breaker, *, observed: int, observations: int, max_percent: int, min_observations: int,
              oldest: datetime | None, now: datetime, basis: Basis) -> Reading:
    """The reading of a rate breaker (pure).

    Armed when ``observations >= min_observations`` (and at least one); unarmed readings have ``percent``
    None, never trip, and say why in ``unarmed_reason`` (``unarmed_reason()``: ``no_observations`` or
    ``too_few_observations``). Tripped when ``100 * observed > max_percent * observations`` (strictly over, compared
    exactly; ``percent`` is the rounded figure shown).
    """
    window = WINDOW_SECONDS[breaker]
    why = unarmed_reason(observations, min_observations)
    retry = _retry_after(oldest, window, now)
    what = {Breaker.BOUNCE_RATE: "bounced", Breaker.COMPLAINT_RATE: "complained"}.get(breaker, "counted")
    if why is not None:
        sentence = (f"{breaker.value}: unarmed ({UNARMED_WORDS[why]}), {observations} observations ({basis}) in "
                    f"the last {_minutes(window)} where {min_observations} are needed; no percentage is given "
                    f"and it cannot trip.")
        return Reading(breaker, observations, observed, max_percent, min_observations, window, False,
                       why.value, None, False, retry, False, basis, sentence)
    percent = round(100 * observed / observations)
    tripped = 100 * observed > max_percent * observations
    sentence = (f"{breaker.value}: {percent}% ({observed} {what} of {observations} observations, {basis}) in the "
                f"last {_minutes(window)}; the limit is over {max_percent}%.")
    if tripped:
        sentence += (f" Tripped: sends wait (awaiting/{REASON_OF[breaker]}); the oldest {what} row leaves the "
                     f"window in {retry} s, the earliest the rate can fall.")
    return Reading(breaker, observations, observed, max_percent, min_observations, window, True, None, percent,
                   tripped, retry, False, basis, sentence)


def read_volume(*, observed: int, limit: int, oldest: datetime | None, now: datetime) -> Reading:
    """The volume reading (pure): always armed, never a percentage, tripped when ``observed > limit``."""
    window = WINDOW_SECONDS[Breaker.VOLUME]
    tripped = observed > limit
    retry = _retry_after(oldest, window, now)
    sentence = f"volume: {observed} of {limit} recipients handed over in the last {_minutes(window)}."
    if tripped:
        sentence += (f" Tripped: sends wait (awaiting/breaker_volume) and go when the oldest hand-over leaves "
                     f"the window in {retry} s.")
    return Reading(Breaker.VOLUME, observed, observed, limit, None, window, True, None, None, tripped, retry,
                   True, "handed_over", sentence)


def basis_for(delivery_signals: str) -> Basis:
    """The bounce basis for a transport's ``delivery_signals``; an unknown kind raises
    ``E_DELIVERY_SIGNALS_UNKNOWN`` (500) rather than guessing (fail closed)."""
    basis = BASIS_FOR_SIGNALS.get(delivery_signals)
    if basis is None:
        raise MailnodeError(code="E_DELIVERY_SIGNALS_UNKNOWN",
                            what=f"The transport reports delivery as {delivery_signals!r}.",
                            why="The bounce rate's observations depend on it: webhook, dsn or none.",
                            fix="This is a defect in the transport's capabilities; report it.", status=500,
                            detail={"delivery_signals": delivery_signals})
    return basis


def read(counts: Counts, *, now: datetime, delivery_signals: str, sending_domain: str | None = None
         ) -> BreakerState:
    """The pure reading of ``counts`` at ``now`` for a transport reporting ``delivery_signals``."""
    basis = basis_for(delivery_signals)
    lim = counts.limits
    bounce_obs = counts.bounce_handed_over if basis == "handed_over" else counts.bounce_delivered + counts.bounce_n
    readings = (
        read_volume(observed=counts.volume_n, limit=lim.volume_max_recipients, oldest=counts.volume_oldest, now=now),
        read_rate(Breaker.BOUNCE_RATE, observed=counts.bounce_n, observations=bounce_obs,
                  max_percent=lim.bounce_max_percent, min_observations=lim.bounce_min_observations,
                  oldest=counts.bounce_oldest, now=now, basis=basis),
        read_rate(Breaker.COMPLAINT_RATE, observed=counts.complaint_n, observations=counts.complaint_delivered,
                  max_percent=lim.complaint_max_percent, min_observations=lim.complaint_min_observations,
                  oldest=counts.complaint_oldest, now=now, basis="events"),
    )
    pause = None
    if counts.pause_id is not None and counts.pause_placed_at is not None:
        pause = PauseInForce(counts.pause_id, sending_domain or "", counts.pause_placed_at, counts.pause_reason or "")
    return BreakerState(readings, pause, counts.pauses_in_force, counts.day_volume, counts.known_recipient_domains)


def evaluate(conn: Connection, *, org_id: str, now: datetime, delivery_signals: str,
             sending_domain: str | None = None, recipient_domains: Iterable[str] | None = None) -> BreakerState:
    """Read and interpret every breaker and the pause on ``sending_domain`` in exactly one statement."""
    counts = fetch(conn, org_id=org_id, now=now, sending_domain=sending_domain, recipient_domains=recipient_domains)
    return read(counts, now=now, delivery_signals=delivery_signals, sending_domain=sending_domain)


def delivery_signals_of(transport: str) -> str:
    """The ``delivery_signals`` a configured transport name declares (its module's ``CAPABILITIES``).

    Raises ``E_TRANSPORT_UNKNOWN`` (500) for a name with no transport (an unknown name is never guessed).
    """
    from mailnode.transports import file, resend, smtp

    caps = {"file": file.CAPABILITIES, "smtp": smtp.CAPABILITIES, "resend": resend.CAPABILITIES}.get(transport)
    if caps is None:
        raise MailnodeError(code="E_TRANSPORT_UNKNOWN", what=f"No transport is named {transport!r}.",
                            why="Transports are a closed list: file, smtp, resend.",
                            fix="Set MAILNODE_TRANSPORT to file, smtp or resend.", status=500,
                            detail={"transport": transport})
    return str(caps.delivery_signals)


class _Explain(Executable, ClauseElement):
    """``EXPLAIN`` (PostgreSQL) / ``EXPLAIN QUERY PLAN`` (SQLite) of a statement, with its binds processed."""

    inherit_cache = False

    def __init__(self, inner: Select[Any]) -> None:
        self.inner = inner


@compiles(_Explain)
def _compile_explain(element: _Explain, compiler: Any, **kw: Any) -> str:
    prefix = "EXPLAIN QUERY PLAN " if compiler.dialect.name == "sqlite" else "EXPLAIN "
    return prefix + str(compiler.process(element.inner, **kw))


def query_plan(conn: Connection, stmt: Select[Any]) -> list[str]:
    """The database's plan for ``stmt``, one line per step (for tests, ``bench/breakers.py`` and reading)."""
    rows = conn.execute(_Explain(stmt)).all()
    if conn.dialect.name == "sqlite":
        return [str(r[-1]) for r in rows]
    return [str(r[0]) for r in rows]
