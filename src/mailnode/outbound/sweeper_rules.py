"""The sweeper's rules: what one pass does, and what it does with each row it reads.

spec/transactional.md §3 (seed 002, "The sweeper" and "Every document the sweep finds leaves by a door").
A pass first writes retention (always: it costs no quota and matters most during an outage), then ages out
what is past the give-up age, then, only when the provider breaker lets it, re-drives mail. For each row
``decide_row`` answers with one ``SweepVerdict``, and every verdict leaves by a door, so an unordered,
limited query never reads the same row forever: ``give_up``, ``to_person``, ``refuse_realtime`` and
``quarantine`` carry a write that takes the row out of every sweep query; ``send`` hands it to dispatch,
which claims it under a lease or, when a rate breaker still gates it, writes its recheck time
(``release_at``, out of ``movable_now`` until then); ``hold_for_provider`` ends the pass's sending (the
provider refuses that class for every row the query can return); ``skip_leased`` leaves a row another
worker holds under a live lease; ``not_swept`` is for settled states, which no sweep query selects.

The three refusals: realtime mail is never swept; an ambiguous failure (the provider may have taken it) is
re-driven only inside the transport's idempotency window measured from the first use of its key
(``first_attempt_at``, which never moves); nothing is sent while the provider breaker is shut. Pure: the
caller passes ``now``, the provider status and the transport's window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from mailnode import budgets
from mailnode.clock import utc
from mailnode.governance.provider import (
    DEFAULT_LIMITS,
    BreakerState,
    ProviderLimits,
    ProviderStatus,
    breaker_state,
    may_send,
)
from mailnode.vocabulary.mail_classes import MailClass, parse_mail_class
from mailnode.vocabulary.send_states import SendState, parse_state


class SweeperReason(StrEnum):
    """The ``state_reason`` a sweeper write leaves on a send (to join ``outbound.states.StateReason``).

    - ``gave_up``: deferrable mail nobody handed over within the give-up age or the attempt budget.
    - ``dedup_window_closed``: an ambiguous send whose key's window closed; a person decides (the retry
      offer is ``resend-may-duplicate``).
    - ``realtime_not_retried``: realtime mail found by a sweep query; it is never retried.
    - ``not_classified``: a class or state mailnode does not know; quarantined for a person.
    """

    GAVE_UP = "gave_up"
    DEDUP_WINDOW_CLOSED = "dedup_window_closed"
    REALTIME_NOT_RETRIED = "realtime_not_retried"
    NOT_CLASSIFIED = "not_classified"


class SweepVerdict(StrEnum):
    """What the sweeper does with one row.

    - ``send``: claim it under a lease and hand it over now.
    - ``skip_leased``: another worker holds an unexpired lease; the only skip that leaves the row in place.
    - ``hold_for_provider``: the breaker is shut, or this class's quota ceiling is reached: send nothing,
      spend no attempt, and end the pass's sending (the rest waits for the next pass).
    - ``give_up``: terminal, ``withheld/gave_up``; its author is told; what it holds becomes deletable.
    - ``to_person``: ambiguous and outside its window: left ``outcome_unknown`` with
      ``dedup_window_closed``, never re-driven automatically; its author is told.
    - ``refuse_realtime``: terminal, ``withheld/realtime_not_retried``.
    - ``quarantine``: unknown class or state: ``withheld/not_classified``, for a person.
    - ``not_swept``: already settled (handed over, refused, withheld ...): no write, not the sweeper's.
    """

    SEND = "send"
    SKIP_LEASED = "skip_leased"
    HOLD_FOR_PROVIDER = "hold_for_provider"
    GIVE_UP = "give_up"
    TO_PERSON = "to_person"
    REFUSE_REALTIME = "refuse_realtime"
    QUARANTINE = "quarantine"
    NOT_SWEPT = "not_swept"


@dataclass(frozen=True)
class SweepWrite:
    """The state and reason a verdict writes on the send (and its unsettled recipient rows)."""

    state: SendState
    reason: SweeperReason


#: The write each verdict makes; None for verdicts that write no state (``send`` claims instead).
#: Total over ``SweepVerdict``.
WRITE_OF_VERDICT: dict[SweepVerdict, SweepWrite | None] = {
    SweepVerdict.SEND: None,
    SweepVerdict.SKIP_LEASED: None,
    SweepVerdict.HOLD_FOR_PROVIDER: None,
    SweepVerdict.GIVE_UP: SweepWrite(SendState.WITHHELD, SweeperReason.GAVE_UP),
    SweepVerdict.TO_PERSON: SweepWrite(SendState.OUTCOME_UNKNOWN, SweeperReason.DEDUP_WINDOW_CLOSED),
    SweepVerdict.REFUSE_REALTIME: SweepWrite(SendState.WITHHELD, SweeperReason.REALTIME_NOT_RETRIED),
    SweepVerdict.QUARANTINE: SweepWrite(SendState.WITHHELD, SweeperReason.NOT_CLASSIFIED),
    SweepVerdict.NOT_SWEPT: None,
}

#: Verdicts after which the send's author gets a ``send_failed`` notice (``notices``).
NOTIFY_AUTHOR: frozenset[SweepVerdict] = frozenset(
    {SweepVerdict.GIVE_UP, SweepVerdict.TO_PERSON, SweepVerdict.QUARANTINE}
)

#: States the sweeper may still act on; every other known state is settled (``not_swept``).
_PENDING: frozenset[SendState] = frozenset(
    {SendState.HELD, SendState.AWAITING, SendState.THROTTLED, SendState.OUTCOME_UNKNOWN}
)


@dataclass(frozen=True)
class SweepFacts:
    """What the sweeper knows about one send when it decides.

    Attributes:
        send_id: the send (``snd_...``).
        mail_class: the stored class string (``MailClass`` value, or anything: unknown fails closed).
        state: the stored ``SendState`` string.
        queued_at: when it was sealed (aware UTC); the give-up age counts from here.
        attempts: hand-overs tried so far.
        first_attempt_at: the first use of its idempotency key (aware UTC), or None when never tried.
        lease_until: a claim's lease end (aware UTC), or None when unclaimed.
        may_have_reached_provider: some recipient was handed to the transport and no answer proves it
            was not taken (``outcome_unknown`` recipient rows). False for a stranded claim that never
            submitted: that is provably not taken and sweeps at any age.
    """

    send_id: str
    mail_class: str | None
    state: str | None
    queued_at: datetime
    attempts: int = 0
    first_attempt_at: datetime | None = None
    lease_until: datetime | None = None
    may_have_reached_provider: bool = False


@dataclass(frozen=True)
class SweepRules:
    """The sweeper's numbers (settings; defaults from budgets).

    Attributes:
        give_up_age_seconds: deferrable mail older than this is given up (seed 002: 3 days).
        max_attempts: deferrable mail that has tried this many times is given up (seed 002: 3).
        idempotency_window_seconds: the transport's dedup window from the first use of a key, or None when
            it does not deduplicate (then every ambiguous send goes to a person).
        idempotency_margin_seconds: the window must stay open at least this much longer at the decision.
    """

    give_up_age_seconds: int = budgets.SWEEPER_GIVE_UP_AGE_SECONDS
    max_attempts: int = budgets.SWEEPER_MAX_ATTEMPTS
    idempotency_window_seconds: int | None = budgets.RESEND_IDEMPOTENCY_WINDOW_SECONDS
    idempotency_margin_seconds: int = budgets.SWEEPER_IDEMPOTENCY_MARGIN_SECONDS


DEFAULT_RULES = SweepRules()


@dataclass(frozen=True)
class RowDecision:
    """The answer of ``decide_row``.

    Attributes:
        verdict: ``SweepVerdict``.
        write: the state and reason to write (``WRITE_OF_VERDICT``), or None.
        notify_author: whether the author gets a ``send_failed`` notice.
        probe: for ``send``, True when this hand-over is the probe after a pause ended.
        explanation: one sentence for audit and logs.
    """

    verdict: SweepVerdict
    write: SweepWrite | None
    notify_author: bool
    probe: bool
    explanation: str


def _decision(verdict: SweepVerdict, explanation: str, *, probe: bool = False) -> RowDecision:
    return RowDecision(verdict, WRITE_OF_VERDICT[verdict], verdict in NOTIFY_AUTHOR, probe, explanation)


def lease_live(lease_until: datetime | None, now: datetime) -> bool:
    """Whether a claim's lease is still held at ``now`` (its end strictly later than ``now``)."""
    return lease_until is not None and utc(lease_until) > utc(now)


def lease_until_for(now: datetime, lease_seconds: int = budgets.DISPATCH_LEASE_SECONDS) -> datetime:
    """The lease end a claim taken at ``now`` writes (``DISPATCH_LEASE_SECONDS`` by default)."""
    return utc(now) + timedelta(seconds=lease_seconds)


def first_attempt_at(previous: datetime | None, now: datetime) -> datetime:
    """The ``first_attempt_at`` to write when a hand-over is tried at ``now``: set once, never moved."""
    return utc(previous) if previous is not None else utc(now)


def idempotency_window_open(
    first_attempt: datetime | None, now: datetime, rules: SweepRules = DEFAULT_RULES
) -> bool:
    """Whether a retry under the same key at ``now`` is still deduplicated by the transport.

    True only when the transport deduplicates, the key's first use is known, and ``now`` plus the margin
    is before ``first_attempt + window``. Measured from the first use, never from the latest attempt:
    measured from the latest, a send retried at +20 h and +40 h under a 24 h window would go out at +40 h
    on an expired key and the provider would take it as new mail (seed 002, third commit).
    """
    if rules.idempotency_window_seconds is None or first_attempt is None:
        return False
    closes = utc(first_attempt) + timedelta(seconds=rules.idempotency_window_seconds)
    return utc(now) + timedelta(seconds=rules.idempotency_margin_seconds) < closes


def decide_row(
    facts: SweepFacts,
    status: ProviderStatus,
    now: datetime,
    rules: SweepRules = DEFAULT_RULES,
    limits: ProviderLimits = DEFAULT_LIMITS,
) -> RowDecision:
    """What the sweeper does with one row at ``now`` (spec/transactional.md §3).

    In order: a live lease is skipped; an unknown class or state is quarantined; a settled state is not
    swept; realtime is refused; deferrable mail past the give-up age or the attempt budget is given up;
    an ambiguous send outside its idempotency window goes to a person; then, only if
    ``provider.may_send`` allows this class, it is sent (else ``hold_for_provider``, spending nothing).
    Age-outs and hand-offs to a person come before the breaker: they cost no quota and must happen during
    an outage too.
    """
    if lease_live(facts.lease_until, now):
        return _decision(SweepVerdict.SKIP_LEASED, "Another worker holds this send under a live lease.")
    mail_class = parse_mail_class(facts.mail_class)
    state = parse_state(facts.state)
    if mail_class is None or state is None:
        return _decision(
            SweepVerdict.QUARANTINE,
            f"Class {facts.mail_class!r} or state {facts.state!r} is not one mailnode knows.",
        )
    if state not in _PENDING:
        return _decision(SweepVerdict.NOT_SWEPT, f"The send is {state.value}; nothing is left to sweep.")
    if mail_class is MailClass.REALTIME:
        return _decision(
            SweepVerdict.REFUSE_REALTIME, "Realtime mail is never retried; a late code may be void."
        )
    if mail_class is MailClass.DEFERRABLE:
        if utc(now) - utc(facts.queued_at) >= timedelta(seconds=rules.give_up_age_seconds):
            return _decision(
                SweepVerdict.GIVE_UP,
                f"Nobody handed it over within {rules.give_up_age_seconds} seconds of sealing.",
            )
        if facts.attempts >= rules.max_attempts:
            return _decision(SweepVerdict.GIVE_UP, f"It used all {rules.max_attempts} attempts.")
    if facts.may_have_reached_provider and not idempotency_window_open(facts.first_attempt_at, now, rules):
        return _decision(
            SweepVerdict.TO_PERSON,
            "It may have reached the provider and its key's window has closed; a retry could "
            "deliver it twice, so a person decides.",
        )
    decision = may_send(status, mail_class, now, limits)
    if not decision.allowed:
        return _decision(
            SweepVerdict.HOLD_FOR_PROVIDER,
            f"The provider breaker refuses {mail_class.value} mail ({decision.reason}).",
        )
    return _decision(SweepVerdict.SEND, "Re-driven by the sweeper.", probe=decision.probe)


class SendMode(StrEnum):
    """How much a pass may send.

    - ``none``: the breaker is shut: re-drive nothing (age-outs and retention still run).
    - ``probe_one``: the pause has ended without a success: send one row; continue only if it was accepted.
    - ``all``: send what ``decide_row`` allows, up to the batch.
    """

    NONE = "none"
    PROBE_ONE = "probe_one"
    ALL = "all"


#: The send mode for each breaker state. Total over ``BreakerState``.
SEND_MODE_OF_BREAKER: dict[BreakerState, SendMode] = {
    BreakerState.OPEN: SendMode.ALL,
    BreakerState.SHUT: SendMode.NONE,
    BreakerState.PROBE_DUE: SendMode.PROBE_ONE,
}


@dataclass(frozen=True)
class PassPlan:
    """What one sweeper pass runs, in this order.

    Attributes:
        retention: write ``retain_until`` for content pending notices are about (always True: it runs
            before the breaker check, so it works while sending is paused).
        age_outs: read rows past the give-up age and give them up (always True; costs no quota).
        send_mode: ``SendMode`` for re-driving.
        batch_max: rows read per query.
    """

    retention: bool
    age_outs: bool
    send_mode: SendMode
    batch_max: int


def pass_plan(status: ProviderStatus, now: datetime, batch_max: int = budgets.SWEEPER_BATCH_MAX) -> PassPlan:
    """The plan of a pass starting at ``now`` under ``status`` (spec/transactional.md §3 refusal 3)."""
    return PassPlan(
        retention=True,
        age_outs=True,
        send_mode=SEND_MODE_OF_BREAKER[breaker_state(status, now)],
        batch_max=batch_max,
    )
