"""Pure decisions as tables: stage matching, policy folding and evaluation, breaker readings, the registries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.governance import approvals, breakers, gatefacts
from mailnode.governance.matching import shortfall
from mailnode.governance.policy import (
    RANK,
    Conditions,
    LiveVersion,
    Outcome,
    SendFacts,
    Stage,
    canonical_sha256,
    evaluate,
    fold_stages,
    stricter,
    validate,
)

T = {"t1": {"a", "b"}, "t2": {"c"}}


@pytest.mark.parametrize("stages, eligible, expected", [
    ([Stage(1, 1)], {"a"}, None),
    ([Stage(1, 2)], {"a"}, (1, 2, 1, 1)),
    ([Stage(1, 2)], {"a", "b"}, None),
    # One person fills one slot across stages.
    ([Stage(1, 1), Stage(2, 1)], {"a"}, (2, 1, 1, 1)),
    ([Stage(1, 1), Stage(2, 1)], {"a", "b"}, None),
    # Team stages: the matching must move "a" off stage 1 so that stage 2 (team t1) can be filled... and back.
    ([Stage(1, 1), Stage(2, 1, "t1")], {"a", "d"}, None),
    ([Stage(1, 2), Stage(2, 1, "t1")], {"a", "b", "d"}, None),
    ([Stage(1, 2), Stage(2, 2, "t1")], {"a", "b", "d"}, (2, 2, 2, 1)),
    ([Stage(1, 1, "t2")], {"a", "b"}, (1, 1, 0, 1)),
    ([Stage(1, 1, "missing")], {"a"}, (1, 1, 0, 1)),
    ([Stage(1, 0)], set(), None),
    ([Stage(1, 2), Stage(2, 1)], set(), (1, 2, 0, 2)),
])
def test_stage_matching(stages: list[Stage], eligible: set[str], expected: tuple[int, int, int, int] | None) -> None:
    got = shortfall(stages, eligible, T)
    assert (None if got is None else (got.ordinal, got.required, got.available, got.short)) == expected


def facts(**kw: object) -> SendFacts:
    base: dict[str, object] = {"mailbox_id": "mbx_1", "actor_id": "usr_1", "actor_kind": "user",
                               "any_external": True, "is_reply": False, "org_daily_volume": 10}
    base.update(kw)
    return SendFacts(**base)  # type: ignore[arg-type]


def v(outcome: str, stages: tuple[Stage, ...] = (), **cond: object) -> LiveVersion:
    return LiveVersion("pol_x", "p", f"plv_{outcome}_{len(cond)}", 1, outcome, Conditions(**cond), stages)  # type: ignore[arg-type]


@pytest.mark.parametrize("a", list(Outcome))
@pytest.mark.parametrize("b", list(Outcome))
def test_the_result_is_the_maximum_over_matching_versions(a: Outcome, b: Outcome) -> None:
    result = evaluate([v(a.value), v(b.value)], facts())
    assert RANK[result.outcome] == max(RANK[a], RANK[b])
    assert stricter(result.outcome, a.value) == (RANK[result.outcome] > RANK[a])


@pytest.mark.parametrize("cond, matched", [
    ({}, True),
    ({"mailbox_id": "mbx_1"}, True), ({"mailbox_id": "mbx_2"}, False),
    ({"actor_id": "usr_2"}, False), ({"actor_kind": "butler"}, False), ({"actor_kind": "user"}, True),
    ({"recipient_external": True}, True), ({"recipient_external": False}, False),
    ({"is_reply": True}, False), ({"is_reply": False}, True),
    ({"org_daily_volume_min": 10}, True), ({"org_daily_volume_min": 11}, False),
])
def test_each_condition(cond: dict[str, object], matched: bool) -> None:
    assert evaluate([v("deny", **cond)], facts()).outcome is (Outcome.DENY if matched else Outcome.ALLOW)


def test_no_policy_allows_and_an_unknown_stored_outcome_fails_closed() -> None:
    assert evaluate([], facts()).outcome is Outcome.ALLOW
    with pytest.raises(MailnodeError) as e:
        evaluate([v("maybe")], facts())
    assert e.value.code == "E_POLICY_OUTCOME_UNKNOWN"
    assert stricter(Outcome.HOLD, None) and stricter(Outcome.HOLD, "nonsense") and not stricter(Outcome.ALLOW, None)


def test_stage_fold() -> None:
    assert fold_stages([(), ()]) == (Stage(1, 1),)
    assert fold_stages([(Stage(1, 2),), (Stage(1, 1, "t1"), Stage(2, 3))]) == (Stage(1, 2, "t1"), Stage(2, 3))
    with pytest.raises(MailnodeError) as e:
        fold_stages([(Stage(1, 1, "t1"),), (Stage(1, 1, "t2"),)])
    assert e.value.code == "E_POLICY_STAGE_TEAM_CONFLICT"
    result = evaluate([v("require_approval", (Stage(1, 2),)), v("hold")], facts())
    assert result.outcome is Outcome.REQUIRE_APPROVAL and result.stages == (Stage(1, 2),)


def test_canonical_hash_and_validation() -> None:
    c = Conditions(is_reply=True)
    assert canonical_sha256(Outcome.HOLD, c, ()) == canonical_sha256(Outcome.HOLD, Conditions(is_reply=True), ())
    assert canonical_sha256(Outcome.HOLD, c, ()) != canonical_sha256(Outcome.HOLD, Conditions(is_reply=False), ())
    assert validate("require_approval", Conditions(), [{"count": 1}]) == (Outcome.REQUIRE_APPROVAL, ())
    for outcome, cond, stages, code in [
        ("maybe", Conditions(), [], "E_BAD_POLICY_OUTCOME"),
        ("deny", Conditions(org_daily_volume_min=0), [], "E_BAD_POLICY_VOLUME"),
        ("deny", Conditions(actor_kind="robot"), [], "E_BAD_ACTOR_KIND"),
        ("hold", Conditions(), [{"count": 1}], "E_STAGES_WITHOUT_APPROVAL"),
        ("require_approval", Conditions(), [{"count": 0}], "E_BAD_APPROVAL_STAGE"),
        ("require_approval", Conditions(), [{"count": 1, "team_id": " "}], "E_BAD_APPROVAL_STAGE_TEAM"),
    ]:
        with pytest.raises(MailnodeError) as e:
            validate(outcome, cond, stages)
        assert e.value.code == code


NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("observed, observations, armed, reason, percent, tripped", [
    (0, 0, False, "no_observations", None, False),
    (3, 3, False, "too_few_observations", None, False),   # some observed, fewer than the minimum
    (19, 19, False, "too_few_observations", None, False),  # below the minimum: never trips, never a percentage
    (6, 20, True, None, 30, False),       # exactly 30 %: not over
    (7, 20, True, None, 35, True),
    (0, 20, True, None, 0, False),        # armed: a real 0 %
])
def test_rate_reading(observed: int, observations: int, armed: bool, reason: str | None, percent: int | None,
                      tripped: bool) -> None:
    r = breakers.read_rate(breakers.Breaker.BOUNCE_RATE, observed=observed, observations=observations,
                           max_percent=30, min_observations=20, oldest=NOW - timedelta(seconds=100), now=NOW,
                           basis="events")
    assert (r.armed, r.unarmed_reason, r.percent, r.tripped) == (armed, reason, percent, tripped)
    if reason is not None:
        assert f"unarmed ({breakers.UNARMED_WORDS[breakers.UnarmedReason(reason)]}), {observations} observations" \
            in r.sentence
    assert r.retry_after_seconds == breakers.WINDOW_SECONDS[breakers.Breaker.BOUNCE_RATE] - 100
    assert r.retry_after_exact is False


@pytest.mark.parametrize("observations, min_observations, reason", [
    (0, 20, "no_observations"),
    (0, 0, "no_observations"),          # a minimum of 0 still needs one observation to be a rate
    (-1, 20, "no_observations"),        # a bad count fails closed: unarmed
    (1, 20, "too_few_observations"),
    (19, 20, "too_few_observations"),
    (20, 20, None),
    (1, 0, None),
])
def test_unarmed_reason_names_the_shortfall(observations: int, min_observations: int, reason: str | None) -> None:
    got = breakers.unarmed_reason(observations, min_observations)
    assert (None if got is None else got.value) == reason


def test_unarmed_words_are_total() -> None:
    assert set(breakers.UNARMED_WORDS) == set(breakers.UnarmedReason)


def test_volume_reading() -> None:
    at = breakers.read_volume(observed=500, limit=500, oldest=NOW, now=NOW)
    over = breakers.read_volume(observed=501, limit=500, oldest=NOW - timedelta(seconds=0.5), now=NOW)
    assert (at.tripped, over.tripped, over.percent, over.retry_after_exact) == (False, True, None, True)
    assert over.retry_after_seconds == breakers.WINDOW_SECONDS[breakers.Breaker.VOLUME]


def test_registries_are_total() -> None:
    assert set(breakers.REASON_OF) == set(breakers.Breaker) == set(breakers.WINDOW_SECONDS)
    assert set(breakers.BASIS_FOR_SIGNALS) == {"webhook", "dsn", "none"}
    assert set(approvals.SUBJECTS) == set(approvals.SubjectKind)
    assert set(RANK) == set(Outcome)
    with pytest.raises(MailnodeError):
        breakers.basis_for("pigeon")
    with pytest.raises(MailnodeError):
        approvals.spec_of("teleport")


def test_breaker_reasons_are_send_reasons() -> None:
    states = pytest.importorskip("mailnode.vocabulary.send_states")
    from mailnode.governance import effects

    for reason in breakers.REASON_OF.values():
        assert states.StateReason(reason) in states.TIME_DRAINED_REASONS
    for token in (effects.POLICY_APPROVAL_REQUIRED, effects.APPROVAL_DENIED, effects.APPROVAL_UNSATISFIABLE):
        states.StateReason(token)
    for state in (effects.AWAITING, effects.HELD, effects.WITHHELD):
        states.SendState(state)


NOW = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
MIN_S = budgets.BREAKER_RECHECK_MIN_SECONDS
MAX_S = budgets.BREAKER_RECHECK_SECONDS


def _volume(oldest_age: int | None) -> breakers.Reading:
    oldest = None if oldest_age is None else NOW - timedelta(seconds=oldest_age)
    return breakers.read_volume(observed=2, limit=1, oldest=oldest, now=NOW)


def _bounce(oldest_age: int) -> breakers.Reading:
    return breakers.read_rate(breakers.Breaker.BOUNCE_RATE, observed=10, observations=20, max_percent=30,
                              min_observations=20, oldest=NOW - timedelta(seconds=oldest_age), now=NOW,
                              basis="events")


@pytest.mark.parametrize("reading, seconds", [
    # The oldest hand-over leaves the window in 2 minutes: asked again exactly then.
    (_volume(3600 - 120), 120),
    # Within a few seconds: the floor, so a breaker far over its limit does not come back every sweep.
    (_volume(3600 - 5), MIN_S),
    (_volume(3600 - MIN_S), MIN_S),
    # The window clears in an hour: the ceiling, for a clearing no reading foresees (a limit raised).
    (_volume(0), MAX_S),
    (_volume(3600 - MAX_S), MAX_S),
    # A rate: the earliest it can fall is hours away, and deliveries can lower it sooner: the ceiling.
    (_bounce(60), MAX_S),
    (_bounce(breakers.WINDOW_SECONDS[breakers.Breaker.BOUNCE_RATE] - 90), 90),
    # No counted row at all (cannot trip, but fail closed): the ceiling.
    (_volume(None), MAX_S),
])
def test_a_gated_send_is_asked_again_after_the_reading_within_the_bounds(reading: breakers.Reading,
                                                                         seconds: int) -> None:
    assert gatefacts.recheck_after_seconds(reading) == seconds
    assert MIN_S <= seconds <= MAX_S
    # Never before the next dispatch sweep, never later than a small part of the shortest window.
    assert budgets.DISPATCH_SWEEP_INTERVAL_SECONDS < MIN_S <= MAX_S < budgets.BREAKER_VOLUME_WINDOW_SECONDS
