"""The provider-availability breaker: what the provider told us, and whether a class may send now.

spec/transactional.md §2 (seed 002, "The breaker" and "Why sending stopped decides how long it stays
stopped"). One ``ProviderStatus`` per configured transport holds the facts: the day's quota reading and
when it was observed, and the pause in force (its kind, when it was set and when it ends). Two pure
functions move it: ``record_outcome`` folds one ``SubmitOutcome`` in (every hand-over of every class goes
through it), ``may_send`` answers for a class at a moment. Neither logs; both return ``LogEvent`` values
for the caller to write.

The rules, in one place:

- The quota reading comes from ``x-resend-daily-quota`` on a successful response (spec/resend.md §7). Its
  meaning is undocumented, so it is refused outside ``[0, daily_limit]`` when written and ignored outside
  it when read, each time logged at error as ``provider.quota_reading_out_of_range``; a refused reading
  never closes anything (it must not switch verification off). A success without the header clears the
  reading: no daily cap (a paid plan), and the logic turns itself off. A reading observed on an earlier
  UTC day says nothing about today (the daily quota resets at 00:00 UTC, spec/resend.md §7).
- A refusal pauses by ``pause_kind_for``: ``daily_quota`` until the next UTC midnight with the reading
  pinned at the limit, ``monthly_quota`` until the first of the next UTC month with the reading untouched,
  ``systemic`` for ``PROVIDER_SYSTEMIC_PAUSE_SECONDS``. ``validation_error`` is not in the table.
- Each class has a ceiling on the day's reading: realtime stops at the reserve (seed: 90 of 100),
  correspondence between, deferrable at the limit. ``may_send`` refuses when ``reading + requests >
  ceiling``, where ``requests`` is what the caller says it will spend. Realtime mail asks for all of its
  requests (one per recipient, ``outbound.realtime``; one for a code) before anything is sealed or sent.
  The seal (correspondence), dispatch and the sweeper ask for one request before a send, never for the whole send (one
  larger than its ceiling would then never go), and dispatch asks again after each recipient's answer is recorded,
  stopping the send where the ceiling is (``outbound.dispatch``): every class stops at its ceiling, not
  one request per recipient later. A realtime refusal made on the reserve alone is logged at error as
  ``provider.realtime_refused_on_reserve``, so a header whose meaning changed is alertable.
- Realtime only reads the breaker; nobody sends while a pause is in force. Once ``unavailable_until`` has
  passed the breaker is ``probe_due``: the sweeper probes with one send (``sweeper_rules.pass_plan``), and
  whoever sends first records the answer (a success reopens, a pausing refusal re-arms). Realtime is not
  held back in ``probe_due``: ``unavailable_until`` is a ceiling on the outage, and a node with nothing
  queued would otherwise never probe and never let a code out again. Its one request after a pause is
  bounded the same way a probe is: a refusal re-arms the pause for everybody.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from mailnode import budgets
from mailnode.clock import utc
from mailnode.errors import invalid
from mailnode.log_events import LogEvent, LogLevel
from mailnode.transports.base import SubmitOutcome, SubmitState
from mailnode.vocabulary.mail_classes import MailClass, parse_mail_class

#: The response header carrying the day's quota used so far (spec/resend.md §7), lower-cased as the
#: transport captures it (``SubmitOutcome.quota_headers``).
DAILY_QUOTA_HEADER = "x-resend-daily-quota"

#: Log token: a quota reading outside ``[0, daily_limit]`` was refused (write) or ignored (read). Error.
TOKEN_READING_OUT_OF_RANGE = "provider.quota_reading_out_of_range"
#: Log token: a quota header that is not a decimal integer was refused. Error.
TOKEN_READING_MALFORMED = "provider.quota_reading_malformed"
#: Log token: realtime mail refused on the reserve alone (the reading is under the limit). Error.
TOKEN_REALTIME_REFUSED_ON_RESERVE = "provider.realtime_refused_on_reserve"
#: Log token: a pause was set or re-armed. Error (alert rule: "a provider pause is set").
TOKEN_PAUSED = "provider.paused"
#: Log token: a success ended a pause. Info.
TOKEN_REOPENED = "provider.reopened"
#: Log token: a mail class string mailnode does not know asked to send; refused. Error.
TOKEN_CLASS_NOT_CLASSIFIED = "provider.mail_class_not_classified"


class PauseKind(StrEnum):
    """Why the provider stopped taking mail, which decides how long it stays stopped (spec §2).

    The values are ``transports.base.PauseKind``'s.
    """

    DAILY_QUOTA = "daily_quota"
    MONTHLY_QUOTA = "monthly_quota"
    SYSTEMIC = "systemic"


#: The one table from a provider error name to a pause kind (spec/transactional.md §2; spec/resend.md
#: §3, §5.2). ``validation_error`` is deliberately absent: Resend uses it for an unverified sending domain
#: and for one recipient's malformed address alike, and one typo must not stop everybody's mail.
#: ``rate_limit_exceeded`` is absent too: it describes the one-second window (§6), not availability.
PAUSE_KIND_BY_ERROR_NAME: dict[str, PauseKind] = {
    "daily_quota_exceeded": PauseKind.DAILY_QUOTA,
    "monthly_quota_exceeded": PauseKind.MONTHLY_QUOTA,
    "missing_api_key": PauseKind.SYSTEMIC,
    "invalid_api_key": PauseKind.SYSTEMIC,
    "restricted_api_key": PauseKind.SYSTEMIC,
    "suspended_api_key": PauseKind.SYSTEMIC,
    "invalid_permission": PauseKind.SYSTEMIC,
}

#: HTTP statuses that close the provider whatever name rides on them, used only when the name is not in
#: the table above. 401: authentication failed; Resend's newest revision says "API key is invalid" as a
#: 401 ``validation_error`` on sending endpoints (spec/resend.md §3), which is a revoked key, not a typo.
#: 404/405: the configured base URL is not Resend's API. Both agree with ``classify_resend``.
SYSTEMIC_STATUSES: frozenset[int] = frozenset({401, 404, 405})


def pause_kind_for(error_name: str | None, http_status: int | None = None) -> PauseKind | None:
    """The pause a provider refusal implies, or None when it pauses nothing.

    Args:
        error_name: the provider's error ``name`` (``daily_quota_exceeded``), or None.
        http_status: the HTTP status of the refusal, or None (no response, or not HTTP).

    The name decides first (``PAUSE_KIND_BY_ERROR_NAME``); a name outside the table pauses only when the
    status is one of ``SYSTEMIC_STATUSES``, or is a 403 without Resend's JSON (the edge refusing the
    client, spec/resend.md §3). So 400/403/422 ``validation_error`` pauses nothing; 401 does.
    """
    if error_name is not None and error_name in PAUSE_KIND_BY_ERROR_NAME:
        return PAUSE_KIND_BY_ERROR_NAME[error_name]
    if http_status in SYSTEMIC_STATUSES:
        return PauseKind.SYSTEMIC
    if http_status == 403 and error_name is None:
        return PauseKind.SYSTEMIC
    return None


def next_utc_midnight(now: datetime) -> datetime:
    """00:00 UTC of the day after ``now`` (aware): when a daily quota resets (spec/resend.md §7)."""
    day = utc(now).date() + timedelta(days=1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def first_of_next_utc_month(now: datetime) -> datetime:
    """00:00 UTC on the first day of the month after ``now`` (aware): the monthly pause's end."""
    t = utc(now)
    year, month = (t.year + 1, 1) if t.month == 12 else (t.year, t.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


def reopens_at(kind: PauseKind, now: datetime) -> datetime:
    """When a pause of ``kind`` set at ``now`` ends (spec §2 table). Total over ``PauseKind``."""
    if kind is PauseKind.DAILY_QUOTA:
        return next_utc_midnight(now)
    if kind is PauseKind.MONTHLY_QUOTA:
        return first_of_next_utc_month(now)
    return utc(now) + timedelta(seconds=budgets.PROVIDER_SYSTEMIC_PAUSE_SECONDS)


@dataclass(frozen=True)
class ProviderLimits:
    """The daily limit and the per-class ceilings on the day's reading (settings; defaults in budgets).

    Attributes:
        daily_limit: emails per UTC day the plan allows, or None for no daily cap (readings are ignored).
        realtime_ceiling: realtime mail stops when the reading reaches this (the reserve).
        correspondence_ceiling: correspondence stops when the reading reaches this.

    Deferrable mail stops at ``daily_limit``. ``0 <= realtime <= correspondence <= daily_limit`` or
    ``E_PROVIDER_LIMITS_INCOHERENT`` (422).
    """

    daily_limit: int | None = budgets.PROVIDER_DAILY_LIMIT_DEFAULT
    realtime_ceiling: int = budgets.PROVIDER_REALTIME_CEILING_DEFAULT
    correspondence_ceiling: int = budgets.PROVIDER_CORRESPONDENCE_CEILING_DEFAULT

    def __post_init__(self) -> None:
        top = self.correspondence_ceiling if self.daily_limit is None else self.daily_limit
        if not 0 <= self.realtime_ceiling <= self.correspondence_ceiling <= top:
            raise invalid(
                "E_PROVIDER_LIMITS_INCOHERENT",
                "The provider quota ceilings are not ordered.",
                "Realtime mail keeps a reserve below correspondence, which stays at or below the daily limit.",
                "Set 0 <= realtime ceiling <= correspondence ceiling <= daily limit in the transport's settings.",
                daily_limit=self.daily_limit,
                realtime_ceiling=self.realtime_ceiling,
                correspondence_ceiling=self.correspondence_ceiling,
            )

    def ceiling_for(self, mail_class: MailClass) -> int | None:
        """The reading at which ``mail_class`` stops; None when there is no daily cap. Total over classes."""
        if self.daily_limit is None:
            return None
        if mail_class is MailClass.REALTIME:
            return self.realtime_ceiling
        if mail_class is MailClass.CORRESPONDENCE:
            return self.correspondence_ceiling
        return self.daily_limit


DEFAULT_LIMITS = ProviderLimits()


@dataclass(frozen=True)
class ProviderStatus:
    """The stored facts of one transport's breaker (one ``provider_status`` row).

    Attributes:
        transport: the transport's settings name (``resend``).
        daily_used: the last usable daily reading (emails used today), or None (none, or no daily cap).
        daily_observed_at: when ``daily_used`` was observed (aware UTC), or None.
        pause_kind: the pause last set, or None when none has been set since the last success.
        paused_at: when it was set (aware UTC), or None.
        unavailable_until: when it ends (aware UTC); the breaker is shut before this, ``probe_due`` after.
        pause_error: the provider's error name that set it (for people and metrics), or None.
        last_success_at: the last hand-over the provider accepted, or None.
        requests_issued: the last request ticket issued (``provider_io.reserve``; a counter that only grows).
        reading_ticket: the ticket of the request whose answer gave ``daily_used`` (None: unknown, older
            than tickets); an answer to an older request never overwrites the reading.
        pause_ticket: ``requests_issued`` when the pause was set: every request with a ticket at or below
            it was made before the pause, so its success does not reopen it (only a later request, a probe,
            does).
    """

    transport: str
    daily_used: int | None = None
    daily_observed_at: datetime | None = None
    pause_kind: PauseKind | None = None
    paused_at: datetime | None = None
    unavailable_until: datetime | None = None
    pause_error: str | None = None
    last_success_at: datetime | None = None
    requests_issued: int = 0
    reading_ticket: int | None = None
    pause_ticket: int | None = None


def answers_newer(ticket: int | None, recorded: int | None) -> bool:
    """Whether an answer to the request ``ticket`` is newer than the one ``recorded`` came from (pure).

    Tickets are issued in order (``provider_io.reserve``); an answer without a ticket (a caller that did
    not reserve) or a recorded fact without one (written before tickets) counts as newer, as before.
    """
    return ticket is None or recorded is None or ticket > recorded


class BreakerState(StrEnum):
    """Where the breaker stands at a moment.

    - ``open``: no pause since the last success; the ceilings alone decide.
    - ``shut``: a pause is in force (``now < unavailable_until``); nothing sends.
    - ``probe_due``: the pause has ended but no success has been seen since; the sweeper probes.
    """

    OPEN = "open"
    SHUT = "shut"
    PROBE_DUE = "probe_due"


def breaker_state(status: ProviderStatus, now: datetime) -> BreakerState:
    """``open``, ``shut`` or ``probe_due`` for ``status`` at ``now``.

    A pause kind without an end (a damaged row) is ``shut``: fail closed until a success clears it.
    """
    if status.pause_kind is None:
        return BreakerState.OPEN
    if status.unavailable_until is None or utc(now) < utc(status.unavailable_until):
        return BreakerState.SHUT
    return BreakerState.PROBE_DUE


@dataclass(frozen=True)
class QuotaReading:
    """A parsed header value: the usable number (or None) and the log event a refusal needs.

    Attributes:
        value: emails used today in ``[0, daily_limit]``, or None (absent, refused, or no cap).
        present: whether the header was present at all (absent on a success = no daily cap).
        log: a ``LogEvent`` when the value was refused, else None.
    """

    value: int | None
    present: bool
    log: LogEvent | None = None


def bounded_reading(value: int | None, limits: ProviderLimits, *, at: str) -> QuotaReading:
    """Accept ``value`` only inside ``[0, daily_limit]``; used at the write and at the read.

    Args:
        value: a reading (or None).
        limits: the daily limit (None: no cap, so no reading is usable and none is logged).
        at: ``write`` or ``read``, carried into the log event.

    Returns a ``QuotaReading``; out of range gives value None and a ``provider.quota_reading_out_of_range``
    error event naming the value and the limit. It never closes anything.
    """
    if value is None or limits.daily_limit is None:
        return QuotaReading(None, value is not None)
    if 0 <= value <= limits.daily_limit:
        return QuotaReading(value, True)
    event = LogEvent(
        TOKEN_READING_OUT_OF_RANGE,
        LogLevel.ERROR,
        {"at": at, "value": value, "daily_limit": limits.daily_limit},
    )
    return QuotaReading(None, True, event)


def parse_quota_header(raw: str | None, limits: ProviderLimits) -> QuotaReading:
    """Parse a raw ``x-resend-daily-quota`` value and bound it at the write.

    ``raw`` None: absent (``present`` False, no event). Not a decimal integer: refused with
    ``provider.quota_reading_malformed`` (error). Otherwise ``bounded_reading(..., at="write")``.
    """
    if raw is None:
        return QuotaReading(None, False)
    text = raw.strip()
    if not text.isascii() or not text.isdigit():
        return QuotaReading(None, True, LogEvent(TOKEN_READING_MALFORMED, LogLevel.ERROR, {"raw": raw[:40]}))
    return bounded_reading(int(text), limits, at="write")


def _header(outcome: SubmitOutcome, name: str) -> str | None:
    for key, value in outcome.quota_headers:
        if key.lower() == name:
            return value
    return None


@dataclass(frozen=True)
class Recorded:
    """The result of ``record_outcome``: the status to write and the lines to log."""

    status: ProviderStatus
    logs: tuple[LogEvent, ...] = ()


def record_outcome(
    status: ProviderStatus, outcome: SubmitOutcome, now: datetime, limits: ProviderLimits = DEFAULT_LIMITS,
    *, ticket: int | None = None,
) -> Recorded:
    """Fold one hand-over's ``SubmitOutcome`` into the breaker (every class, every call site).

    - ``handed_over``: the pause (if any) ends (``provider.reopened`` when one did); the daily header,
      when usable, becomes the reading observed at ``now``; when absent, the reading is cleared (no cap);
      when refused, the previous reading stays and the refusal is logged.
    - a refusal whose ``pause_kind_for(error_name, error_code)`` is a kind: the pause is set (or re-armed)
      until ``reopens_at(kind, now)``, unless a pause already in force ends later (kept: two workers'
      answers arriving out of order never shorten a pause). ``daily_quota`` pins the reading at the limit
      observed at ``now``; the other kinds leave it alone. Logged as ``provider.paused`` (error).
    - ``ticket`` (the answered request's, ``provider_io.reserve``): a reading or a pause is never
      overwritten by an answer to an older request (issue 17 item 2): a success reopens a pause only when
      its request was made after the pause was set (``ticket > pause_ticket``), and its header replaces the
      reading only when its request is newer than the reading's (``answers_newer``). A pause records
      ``requests_issued`` as its ``pause_ticket``; ``daily_quota`` also stamps the pinned reading with it.
    - anything else (``validation_error``, a rate limit, a 5xx, a timeout): the status is unchanged.
      Headers on refusals are checked and logged when out of range but never stored: seed 002 reads the
      header from successful responses, and an error response has been seen carrying 0 (resend.md §7).
    """
    logs: list[LogEvent] = []
    parsed = parse_quota_header(_header(outcome, DAILY_QUOTA_HEADER), limits)
    if parsed.log is not None:
        logs.append(parsed.log)
    if outcome.state is SubmitState.HANDED_OVER:
        new = replace(status, last_success_at=now)
        if not answers_newer(ticket, status.reading_ticket):
            # An answer to a request older than the reading's: the reading stays (it is newer).
            parsed = QuotaReading(None, True, parsed.log)
        if status.pause_kind is not None and answers_newer(ticket, status.pause_ticket):
            logs.append(
                LogEvent(
                    TOKEN_REOPENED,
                    LogLevel.INFO,
                    {"transport": status.transport, "kind": status.pause_kind.value},
                )
            )
            new = replace(new, pause_kind=None, paused_at=None, unavailable_until=None, pause_error=None)
        if parsed.value is not None:
            new = replace(new, daily_used=parsed.value, daily_observed_at=now, reading_ticket=ticket)
        elif not parsed.present:
            new = replace(new, daily_used=None, daily_observed_at=None, reading_ticket=ticket)
        return Recorded(new, tuple(logs))
    kind = pause_kind_for(outcome.error_name, outcome.error_code)
    if kind is None:
        return Recorded(status, tuple(logs))
    until = reopens_at(kind, now)
    if (
        breaker_state(status, now) is BreakerState.SHUT
        and status.unavailable_until is not None
        and utc(status.unavailable_until) > until
    ):
        return Recorded(status, tuple(logs))
    new = replace(
        status, pause_kind=kind, paused_at=now, unavailable_until=until, pause_error=outcome.error_name,
        pause_ticket=status.requests_issued,
    )
    if kind is PauseKind.DAILY_QUOTA and limits.daily_limit is not None:
        new = replace(new, daily_used=limits.daily_limit, daily_observed_at=now,
                      reading_ticket=status.requests_issued)
    logs.append(
        LogEvent(
            TOKEN_PAUSED,
            LogLevel.ERROR,
            {
                "transport": status.transport,
                "kind": kind.value,
                "error_name": outcome.error_name,
                "http_status": outcome.error_code,
                "unavailable_until": until.isoformat(),
            },
        )
    )
    return Recorded(new, tuple(logs))


def reading_today(
    status: ProviderStatus, now: datetime, limits: ProviderLimits = DEFAULT_LIMITS
) -> QuotaReading:
    """The day's reading as ``may_send`` and the metrics see it at ``now``.

    None when there is none, when there is no daily cap, or when it was observed on an earlier UTC day
    (the counter has reset since). Bounded again at the read (``at="read"``): a stored value outside the
    range (written before a limit was lowered, or by hand) is ignored and logged, never obeyed.
    """
    if status.daily_used is None or status.daily_observed_at is None:
        return QuotaReading(None, False)
    if utc(status.daily_observed_at).date() != utc(now).date():
        return QuotaReading(None, True)
    return bounded_reading(status.daily_used, limits, at="read")


class Refusal(StrEnum):
    """Why ``may_send`` said no (or, for ``allowed``, None).

    - ``provider_paused``: a pause is in force.
    - ``quota_ceiling``: the day's reading reached this class's ceiling.
    - ``class_not_classified``: the class string is not one mailnode knows (fail closed).
    """

    PROVIDER_PAUSED = "provider_paused"
    QUOTA_CEILING = "quota_ceiling"
    CLASS_NOT_CLASSIFIED = "class_not_classified"


@dataclass(frozen=True)
class Decision:
    """The answer of ``may_send``.

    Attributes:
        allowed: whether the class may hand mail to the provider now.
        reason: a ``Refusal`` when not allowed, else None.
        reopens_at: when the answer may change (aware UTC): the pause's end, or the next UTC midnight for
            a ceiling; None when allowed or unknown.
        log_token: the token of ``logs``' error event, when the refusal must be alertable, else None.
        pause_kind: the kind of the pause in force, for ``provider_paused``.
        probe: True when the pause has ended but no success has been seen (``probe_due``).
        logs: every line to log (read-time reading refusals included).
    """

    allowed: bool
    reason: Refusal | None = None
    reopens_at: datetime | None = None
    log_token: str | None = None
    pause_kind: PauseKind | None = None
    probe: bool = False
    logs: tuple[LogEvent, ...] = ()


def may_send(
    status: ProviderStatus,
    mail_class: str | MailClass,
    now: datetime,
    limits: ProviderLimits = DEFAULT_LIMITS,
    *,
    requests: int = 1,
    in_flight: int = 0,
) -> Decision:
    """May mail of ``mail_class`` that makes ``requests`` provider requests go at ``now``? A read only.

    ``requests`` is how many provider requests the caller is about to make: a realtime call's recipients
    (each recipient is its own ``POST /emails``), 1 for one code, 1 before each recipient dispatch hands
    over (it asks again after every answer, ``outbound.dispatch``). The ceiling bounds the day's reading
    *after* those requests, so nobody spends past its class's ceiling into the reserve kept for deferrable
    notices (spec/transactional.md §2 "Reserve"): the refusal is ``reading + requests > ceiling``, which for
    one request is ``reading >= ceiling``. ``in_flight`` is the requests already made and not yet answered
    (``provider_io.reserve`` counts them): they count against the ceiling before their answers raise the
    reading, so concurrent workers never spend past it together (issue 17 item 2): the refusal is
    ``reading + in_flight + requests > ceiling``. Raises ``ValueError`` when ``requests < 1`` or
    ``in_flight < 0`` (a caller's defect).

    Order: unknown class (refused, ``class_not_classified``); a pause in force (``provider_paused`` until
    its end); the day's reading plus ``requests`` over the class's ceiling (``quota_ceiling`` until the
    next UTC midnight); else allowed (``probe`` True when the pause has ended without a success since).
    With no usable reading today (none yet, or no daily cap) the ceilings do not apply.

    A realtime refusal where the reading is below the daily limit (so deferrable mail still goes) is a
    refusal on the reserve alone and carries ``provider.realtime_refused_on_reserve`` at error level
    (its detail names ``requests``).
    """
    if requests < 1:
        raise ValueError(f"a send makes at least one provider request, not {requests}")
    if in_flight < 0:
        raise ValueError(f"requests in flight cannot be negative, not {in_flight}")
    cls = parse_mail_class(mail_class)
    if cls is None:
        event = LogEvent(TOKEN_CLASS_NOT_CLASSIFIED, LogLevel.ERROR, {"mail_class": str(mail_class)[:40]})
        return Decision(False, Refusal.CLASS_NOT_CLASSIFIED, None, event.token, logs=(event,))
    state = breaker_state(status, now)
    if state is BreakerState.SHUT:
        return Decision(
            False, Refusal.PROVIDER_PAUSED, status.unavailable_until, pause_kind=status.pause_kind
        )
    reading = reading_today(status, now, limits)
    logs: tuple[LogEvent, ...] = (reading.log,) if reading.log is not None else ()
    ceiling = limits.ceiling_for(cls)
    if reading.value is not None and ceiling is not None and reading.value + in_flight + requests > ceiling:
        token = None
        if (
            cls is MailClass.REALTIME
            and limits.daily_limit is not None
            and reading.value < limits.daily_limit
        ):
            event = LogEvent(
                TOKEN_REALTIME_REFUSED_ON_RESERVE,
                LogLevel.ERROR,
                {
                    "transport": status.transport,
                    "reading": reading.value,
                    "ceiling": ceiling,
                    "daily_limit": limits.daily_limit,
                    "requests": requests,
                    "in_flight": in_flight,
                },
            )
            logs = (*logs, event)
            token = event.token
        return Decision(False, Refusal.QUOTA_CEILING, next_utc_midnight(now), token, logs=logs)
    return Decision(True, probe=state is BreakerState.PROBE_DUE, logs=logs)


def quota_percent(
    status: ProviderStatus, now: datetime, limits: ProviderLimits = DEFAULT_LIMITS
) -> float | None:
    """The day's usable reading as a percent of the daily limit, for metrics and doctor; None when unknown.

    None (never 0) when there is no reading today or no cap: no reassuring zeros (ARCHITECTURE).
    """
    reading = reading_today(status, now, limits)
    if reading.value is None or not limits.daily_limit:
        return None
    return 100.0 * reading.value / limits.daily_limit


def quota_alert(status: ProviderStatus, now: datetime, limits: ProviderLimits = DEFAULT_LIMITS) -> bool:
    """Whether the day's reading has crossed ``PROVIDER_QUOTA_ALERT_PERCENT`` (the leading indicator)."""
    percent = quota_percent(status, now, limits)
    return percent is not None and percent >= budgets.PROVIDER_QUOTA_ALERT_PERCENT
