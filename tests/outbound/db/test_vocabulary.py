"""The send vocabulary and the gate order as tables generated from their enums (no database)."""

from __future__ import annotations

import itertools

import pytest

from mailnode.outbound.gates import OUTCOME_OF_GATE, Gate, GateFacts, decide
from mailnode.vocabulary.send_states import (
    REASON_WORDS,
    STATE_OF_REASON,
    STATE_WORDS,
    TIME_DRAINED_REASONS,
    SendState,
    StateReason,
    aggregate,
    recipient_submittable,
    retry_offer,
    words_for,
)


def test_maps_over_the_vocabularies_are_total() -> None:
    assert set(REASON_WORDS) == set(StateReason) and set(STATE_OF_REASON) == set(StateReason)
    assert set(STATE_WORDS) == set(SendState) and set(OUTCOME_OF_GATE) == set(Gate)
    assert all(STATE_OF_REASON[r] is SendState.AWAITING for r in TIME_DRAINED_REASONS)
    assert len(SendState) == 9 and "sent" not in {s.value for s in SendState}


@pytest.mark.parametrize("state", [*SendState, "sent", "", None])
@pytest.mark.parametrize("ambiguous", [0, 1])
def test_the_retry_offer_covers_every_state_and_fails_closed(state: object, ambiguous: int) -> None:
    offer = retry_offer(state if state is None else str(state), ambiguous_recipients=ambiguous)
    if not isinstance(state, SendState):
        assert (offer.mode, offer.basis) == ("none", "state_not_classified")
        return
    expected = {
        SendState.HELD: "none", SendState.AWAITING: "none", SendState.CANCELLED: "none", SendState.WITHHELD: "none",
        SendState.HANDED_OVER: "none", SendState.REFUSED: "retry-effect", SendState.THROTTLED: "retry-effect",
        SendState.SUPPRESSED: "retry-effect",
        SendState.OUTCOME_UNKNOWN: "resend-may-duplicate" if ambiguous else "retry-effect",
    }[state]
    assert offer.mode == expected
    assert offer.duplicate_possible is (offer.mode == "resend-may-duplicate")


@pytest.mark.parametrize("state", [*SendState, "sent"])
def test_only_never_left_recipients_are_submitted_and_ambiguous_ones_only_under_dedup(state: object) -> None:
    never_left = state in (SendState.HELD, SendState.AWAITING, SendState.THROTTLED)
    for dedup in (False, True):
        expected = never_left or (state is SendState.OUTCOME_UNKNOWN and dedup)
        assert recipient_submittable(str(state), dedup_window_open=dedup) is expected


def test_words_fail_closed_on_unknown_values() -> None:
    assert "not one mailnode knows" in words_for("sent", None)
    assert "not one mailnode knows" in words_for("withheld", "gremlins")
    assert words_for("withheld", "authority_lost") == REASON_WORDS[StateReason.AUTHORITY_LOST]


def test_aggregate_prefers_retry_then_ambiguity_then_hand_over() -> None:
    assert aggregate(["handed_over", "throttled"]) is SendState.THROTTLED
    assert aggregate(["handed_over", "outcome_unknown", "refused"]) is SendState.OUTCOME_UNKNOWN
    assert aggregate(["handed_over", "refused"]) is SendState.HANDED_OVER
    assert aggregate(["refused", "suppressed"]) is SendState.REFUSED
    assert aggregate(["handed_over", "gremlin"]) is SendState.OUTCOME_UNKNOWN


def _facts_for(gate: Gate) -> dict[str, object]:
    return {
        Gate.POLICY_DENY: {"policy_outcome": "deny"},
        Gate.DOMAIN_PAUSE: {"domain_paused": True},
        Gate.REQUIRE_APPROVAL: {"policy_outcome": "require_approval"},
        Gate.POLICY_HOLD: {"policy_outcome": "hold"},
        Gate.BUTLER_RELEASE: {"butler_release_required": True},
        Gate.PROVIDER_UNAVAILABLE: {"provider_unavailable": True},
        Gate.RATE_GATE: {"rate_gate": StateReason.BREAKER_BOUNCE_RATE},
        Gate.ALLOW: {},
    }[gate]


PAIRS = [(a, b) for a, b in itertools.product(Gate, Gate)
         # Three policy outcomes share one fact; a policy cannot be two of them at once.
         if not ({a, b} <= {Gate.POLICY_DENY, Gate.REQUIRE_APPROVAL, Gate.POLICY_HOLD} and a != b)]


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a.name}+{b.name}" for a, b in PAIRS])
def test_every_pair_of_gates_resolves_to_the_stronger(a: Gate, b: Gate) -> None:
    facts = GateFacts(**{**_facts_for(a), **_facts_for(b)})  # type: ignore[arg-type]
    decision = decide(facts)
    assert decision.gate is min(a, b)
    state, reason = OUTCOME_OF_GATE[decision.gate]
    if decision.gate is Gate.RATE_GATE:
        reason = StateReason.BREAKER_BOUNCE_RATE
    assert (decision.state, decision.reason) == (state, reason)


def test_the_order_is_the_architecture_order_and_unknown_outcomes_deny() -> None:
    assert [g.name for g in sorted(Gate)] == ["POLICY_DENY", "DOMAIN_PAUSE", "REQUIRE_APPROVAL", "POLICY_HOLD",
                                              "BUTLER_RELEASE", "PROVIDER_UNAVAILABLE", "RATE_GATE", "ALLOW"]
    assert decide(GateFacts(policy_outcome="maybe")).reason is StateReason.POLICY_DENIED
    unsatisfiable = decide(GateFacts(policy_outcome="require_approval", approval_satisfiable=False))
    assert (unsatisfiable.state, unsatisfiable.reason) == (SendState.WITHHELD, StateReason.APPROVAL_UNSATISFIABLE)
    assert decide(GateFacts()).state is SendState.HELD
