"""The sweeper's rules (spec/transactional.md §3) as tables: three refusals, give-up, leases, the pass plan."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from mailnode import budgets
from mailnode.governance.provider import BreakerState, PauseKind, ProviderStatus, may_send
from mailnode.outbound.movable import movable_now
from mailnode.outbound.sweeper_rules import (
    DEFAULT_RULES,
    NOTIFY_AUTHOR,
    SEND_MODE_OF_BREAKER,
    WRITE_OF_VERDICT,
    SendMode,
    SweeperReason,
    SweepFacts,
    SweepRules,
    SweepVerdict,
    decide_row,
    first_attempt_at,
    idempotency_window_open,
    lease_live,
    lease_until_for,
    pass_plan,
)
from mailnode.vocabulary.send_states import STATE_OF_REASON, SendState, StateReason

T0 = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
OPEN = ProviderStatus("resend")
SHUT = ProviderStatus(
    "resend",
    pause_kind=PauseKind.DAILY_QUOTA,
    paused_at=T0,
    unavailable_until=datetime(2026, 3, 21, tzinfo=UTC),
    daily_used=100,
    daily_observed_at=T0,
)
H = timedelta(hours=1)


def row(**overrides: object) -> SweepFacts:
    base = SweepFacts(
        send_id="snd_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A", mail_class="deferrable", state="throttled", queued_at=T0
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


def verdict(
    facts: SweepFacts, at: datetime, status: ProviderStatus = OPEN, rules: SweepRules = DEFAULT_RULES
) -> SweepVerdict:
    return decide_row(facts, status, at, rules).verdict


def test_a_send_retried_at_20h_and_again_at_40h_under_a_24h_window_goes_to_a_person() -> None:
    rules = SweepRules(idempotency_window_seconds=24 * 3600)
    first = row(
        mail_class="correspondence",
        state="outcome_unknown",
        attempts=1,
        first_attempt_at=T0,
        may_have_reached_provider=True,
    )
    assert verdict(first, T0 + 20 * H, rules=rules) is SweepVerdict.SEND
    # The retry at +20 h is an attempt; the key's first use does not move.
    second = replace(
        first, attempts=2, first_attempt_at=first_attempt_at(first.first_attempt_at, T0 + 20 * H)
    )
    assert second.first_attempt_at == T0
    decision = decide_row(second, OPEN, T0 + 40 * H, rules)
    assert decision.verdict is SweepVerdict.TO_PERSON
    assert decision.write is not None
    assert (decision.write.state, decision.write.reason) == (
        SendState.OUTCOME_UNKNOWN,
        SweeperReason.DEDUP_WINDOW_CLOSED,
    )
    assert decision.notify_author
    # Measured from the latest attempt the window would still look open at +40 h: the defect this avoids.
    assert idempotency_window_open(T0 + 20 * H, T0 + 40 * H, rules)


@pytest.mark.parametrize(
    ("first", "at", "window", "margin", "open_"),
    [
        (T0, T0, 86_400, 300, True),
        (T0, T0 + 23 * H, 86_400, 300, True),
        (T0, T0 + 24 * H - timedelta(seconds=301), 86_400, 300, True),
        (T0, T0 + 24 * H - timedelta(seconds=300), 86_400, 300, False),
        (T0, T0 + 24 * H, 86_400, 0, False),
        (T0, T0 + 40 * H, 86_400, 0, False),
        (None, T0, 86_400, 0, False),
        (T0, T0, None, 0, False),
    ],
)
def test_idempotency_window(
    first: datetime | None, at: datetime, window: int | None, margin: int, open_: bool
) -> None:
    rules = SweepRules(idempotency_window_seconds=window, idempotency_margin_seconds=margin)
    assert idempotency_window_open(first, at, rules) is open_


@pytest.mark.parametrize(
    ("facts", "at", "status", "expected"),
    [
        # Refusal 1: realtime, ever.
        (row(mail_class="realtime"), T0 + timedelta(minutes=1), OPEN, SweepVerdict.REFUSE_REALTIME),
        (row(mail_class="realtime", state="outcome_unknown"), T0, OPEN, SweepVerdict.REFUSE_REALTIME),
        # Refusal 2: ambiguous outside the window; provably untaken mail sweeps at any age.
        (
            row(
                mail_class="correspondence",
                state="outcome_unknown",
                first_attempt_at=T0,
                may_have_reached_provider=True,
            ),
            T0 + 25 * H,
            OPEN,
            SweepVerdict.TO_PERSON,
        ),
        (
            row(
                mail_class="correspondence",
                state="outcome_unknown",
                first_attempt_at=T0,
                may_have_reached_provider=True,
            ),
            T0 + 2 * H,
            OPEN,
            SweepVerdict.SEND,
        ),
        (
            row(mail_class="correspondence", state="throttled", first_attempt_at=T0),
            T0 + 30 * 24 * H,
            OPEN,
            SweepVerdict.SEND,
        ),
        (
            row(
                mail_class="correspondence",
                state="outcome_unknown",
                first_attempt_at=None,
                may_have_reached_provider=True,
            ),
            T0,
            OPEN,
            SweepVerdict.TO_PERSON,
        ),
        # Refusal 3: nothing while the breaker is shut, and no attempt spent.
        (row(), T0 + H, SHUT, SweepVerdict.HOLD_FOR_PROVIDER),
        (
            row(
                mail_class="correspondence",
                state="outcome_unknown",
                first_attempt_at=T0,
                may_have_reached_provider=True,
            ),
            T0 + H,
            SHUT,
            SweepVerdict.HOLD_FOR_PROVIDER,
        ),
        # ... but age-outs and hand-offs to a person happen during an outage (they cost no quota).
        (row(), T0 + 3 * 24 * H, SHUT, SweepVerdict.GIVE_UP),
        (
            row(
                mail_class="correspondence",
                state="outcome_unknown",
                first_attempt_at=T0,
                may_have_reached_provider=True,
            ),
            T0 + 25 * H,
            SHUT,
            SweepVerdict.TO_PERSON,
        ),
        # The give-up age and the attempt budget, for deferrable mail only.
        (row(), T0 + 3 * 24 * H - timedelta(seconds=1), OPEN, SweepVerdict.SEND),
        (row(), T0 + 3 * 24 * H, OPEN, SweepVerdict.GIVE_UP),
        (row(attempts=3), T0 + H, OPEN, SweepVerdict.GIVE_UP),
        (row(attempts=2), T0 + H, OPEN, SweepVerdict.SEND),
        (row(mail_class="correspondence", attempts=9), T0 + 5 * 24 * H, OPEN, SweepVerdict.SEND),
        # Leases: a live one is the only skip; an expired one is recovered by the rules above.
        (row(lease_until=T0 + 2 * H), T0 + H, OPEN, SweepVerdict.SKIP_LEASED),
        (row(lease_until=T0 + 2 * H, mail_class="nonsense"), T0 + H, OPEN, SweepVerdict.SKIP_LEASED),
        (
            row(
                state="outcome_unknown", lease_until=T0, first_attempt_at=T0, may_have_reached_provider=False
            ),
            T0 + H,
            OPEN,
            SweepVerdict.SEND,
        ),
        (
            row(
                state="outcome_unknown",
                lease_until=T0,
                first_attempt_at=T0,
                may_have_reached_provider=True,
                mail_class="correspondence",
            ),
            T0 + 30 * H,
            OPEN,
            SweepVerdict.TO_PERSON,
        ),
        # Unknown values fail closed; settled rows are not the sweeper's.
        (row(mail_class="bulk"), T0 + H, OPEN, SweepVerdict.QUARANTINE),
        (row(mail_class=None), T0 + H, OPEN, SweepVerdict.QUARANTINE),
        (row(state="sent"), T0 + H, OPEN, SweepVerdict.QUARANTINE),
        (row(state="handed_over"), T0 + H, OPEN, SweepVerdict.NOT_SWEPT),
        (row(state="withheld"), T0 + 9 * 24 * H, OPEN, SweepVerdict.NOT_SWEPT),
    ],
)
def test_decide_row(facts: SweepFacts, at: datetime, status: ProviderStatus, expected: SweepVerdict) -> None:
    assert verdict(facts, at, status) is expected


def test_a_day_long_outage_spends_no_attempts_and_the_mail_goes_after_the_probe() -> None:
    queued = row(queued_at=T0, attempts=0)
    for minutes in range(0, 15 * 60, 10):
        at = T0 + timedelta(minutes=minutes)
        assert verdict(queued, at, SHUT) is SweepVerdict.HOLD_FOR_PROVIDER
    after = datetime(2026, 3, 21, 0, 10, tzinfo=UTC)
    decision = decide_row(queued, SHUT, after)
    assert decision.verdict is SweepVerdict.SEND and decision.probe


def test_a_ceiling_holds_deferrable_mail_only_at_the_limit() -> None:
    at_94 = ProviderStatus("resend", daily_used=94, daily_observed_at=T0)
    at_100 = replace(at_94, daily_used=100)
    assert verdict(row(), T0 + H, at_94) is SweepVerdict.SEND
    assert verdict(row(), T0 + H, at_100) is SweepVerdict.HOLD_FOR_PROVIDER


#: How each verdict leaves the sweep queries (spec/transactional.md §3, "every document the sweep finds
#: leaves by a door"). Total over ``SweepVerdict``; ``test_every_row_read_leaves_by_a_door`` checks each
#: door's promise, and tests/outbound/resend/test_sweep_doors.py checks the writes against the real queries.
DOORS: dict[SweepVerdict, str] = {
    # Dispatch claims it under a lease and hands it over, or, when a rate breaker still gates it, writes
    # its recheck time (release_at) so movable_now, and with it the re-drive query, stops matching it.
    SweepVerdict.SEND: "claimed, or written its breaker recheck time",
    # The only skip: another worker's live lease, which ends within the lease.
    SweepVerdict.SKIP_LEASED: "another worker holds it",
    # The provider refuses this class for every row the query can return: the pass stops sending there.
    SweepVerdict.HOLD_FOR_PROVIDER: "the pass ends",
    SweepVerdict.GIVE_UP: "written out",
    SweepVerdict.TO_PERSON: "written out",
    SweepVerdict.REFUSE_REALTIME: "written out",
    SweepVerdict.QUARANTINE: "written out",
    # Settled states, which no sweep query selects.
    SweepVerdict.NOT_SWEPT: "never selected",
}
#: States no sweep query selects (``sweeper._PENDING`` are the others).
SETTLED = ("cancelled", "withheld", "refused", "suppressed", "handed_over")


@pytest.mark.parametrize("v", list(SweepVerdict))
def test_every_verdict_has_a_door(v: SweepVerdict) -> None:
    assert v in DOORS
    assert (DOORS[v] == "written out") is (WRITE_OF_VERDICT[v] is not None)


@pytest.mark.parametrize("lease", [None, T0 + 2 * H])
@pytest.mark.parametrize("status", [OPEN, SHUT], ids=["open", "shut"])
@pytest.mark.parametrize("state", [s.value for s in SendState])
@pytest.mark.parametrize("mail_class", ["correspondence", "realtime", "deferrable"])
def test_every_row_read_leaves_by_a_door(state: str, mail_class: str, status: ProviderStatus,
                                         lease: datetime | None) -> None:
    at = T0 + H
    decision = decide_row(row(state=state, mail_class=mail_class, lease_until=lease), status, at)
    door = DOORS[decision.verdict]
    assert (door == "another worker holds it") is lease_live(lease, at)
    if door == "another worker holds it":
        assert decision.write is None
    elif door == "never selected":
        assert state in SETTLED
    elif door == "the pass ends":
        assert not may_send(status, mail_class, at).allowed
    elif door == "written out":
        write = decision.write
        assert write is not None
        # Out of the re-drive (movable_now, or an ambiguous send with no reason), of the age-out query
        # (a waiting state, or outcome_unknown with no reason) and of the stranded query (lease cleared).
        assert not movable_now(write.state.value, write.reason.value, T0, at + 30 * 24 * H)
        assert write.state in (SendState.WITHHELD, SendState.OUTCOME_UNKNOWN)
        assert STATE_OF_REASON[StateReason(write.reason.value)] is write.state
    else:
        assert decision.verdict is SweepVerdict.SEND and decision.write is None


@pytest.mark.parametrize("v", list(SweepVerdict))
def test_every_verdict_has_a_write_entry(v: SweepVerdict) -> None:
    assert v in WRITE_OF_VERDICT
    terminal = {
        SweepVerdict.GIVE_UP,
        SweepVerdict.TO_PERSON,
        SweepVerdict.REFUSE_REALTIME,
        SweepVerdict.QUARANTINE,
    }
    assert (WRITE_OF_VERDICT[v] is not None) is (v in terminal)


def test_give_up_is_withheld_gave_up_and_tells_the_author() -> None:
    decision = decide_row(row(), OPEN, T0 + 4 * 24 * H)
    assert decision.write is not None
    assert (decision.write.state, decision.write.reason.value) == (SendState.WITHHELD, "gave_up")
    assert decision.notify_author and SweepVerdict.GIVE_UP in NOTIFY_AUTHOR


@pytest.mark.parametrize("state", list(BreakerState))
def test_every_breaker_state_has_a_send_mode(state: BreakerState) -> None:
    assert state in SEND_MODE_OF_BREAKER


@pytest.mark.parametrize(
    ("status", "at", "mode"),
    [
        (OPEN, T0, SendMode.ALL),
        (SHUT, T0 + H, SendMode.NONE),
        (SHUT, datetime(2026, 3, 21, 0, 0, tzinfo=UTC), SendMode.PROBE_ONE),
    ],
)
def test_pass_plan(status: ProviderStatus, at: datetime, mode: SendMode) -> None:
    plan = pass_plan(status, at)
    assert plan.send_mode is mode
    # Retention and age-outs run whatever the breaker says: they cost no quota.
    assert plan.retention and plan.age_outs
    assert plan.batch_max == budgets.SWEEPER_BATCH_MAX


def test_leases() -> None:
    lease = lease_until_for(T0)
    assert lease == T0 + timedelta(seconds=budgets.DISPATCH_LEASE_SECONDS)
    assert lease_live(lease, T0)
    assert not lease_live(lease, lease)
    assert not lease_live(None, T0)


def test_first_attempt_is_set_once() -> None:
    assert first_attempt_at(None, T0) == T0
    assert first_attempt_at(T0, T0 + 40 * H) == T0


def test_seed_numbers() -> None:
    assert budgets.SWEEPER_GIVE_UP_AGE_SECONDS == 3 * 86_400
    assert budgets.SWEEPER_INTERVAL_SECONDS == 600
    assert budgets.SWEEPER_MAX_ATTEMPTS == 3
