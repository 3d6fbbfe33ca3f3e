"""The one ordered decision at seal: which gate (if any) a new send meets, as a pure function.

The total order (ARCHITECTURE; spec/outbound.md Part A 9), strongest first:
policy deny > domain pause > require_approval > policy hold > Butler release > provider unavailable >
rate gate > allow. A refusal latches (``withheld``); a gate drains (``awaiting``); ``allow`` seals
``held``. Callers fetch the facts into ``GateFacts`` and call ``decide``; today only the Butler release
fact has a source (the author is a Butler), the governance and transactional issues fill the others
without changing this order. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from mailnode.vocabulary.send_states import SendState, StateReason


class Gate(IntEnum):
    """The gates in rank order: a lower value outranks a higher one."""

    POLICY_DENY = 1
    DOMAIN_PAUSE = 2
    REQUIRE_APPROVAL = 3
    POLICY_HOLD = 4
    BUTLER_RELEASE = 5
    PROVIDER_UNAVAILABLE = 6
    RATE_GATE = 7
    ALLOW = 8


@dataclass(frozen=True)
class GateFacts:
    """What the seal knows when it decides.

    Attributes:
        policy_outcome: ``allow`` | ``hold`` | ``require_approval`` | ``deny`` from the policy plane, or
            None when no policy is evaluated (treated as ``allow``). Any other string is a deny (fail closed).
        approval_satisfiable: for ``require_approval``: can the stages be filled? False withholds.
        domain_paused: a domain pause is in force for the sending domain.
        butler_release_required: the author is a Butler, so a person must release the send.
        provider_unavailable: the provider breaker is shut for this send's class.
        rate_gate: the first tripped rate breaker's reason (``breaker_volume`` ...), or None.
    """

    policy_outcome: str | None = None
    approval_satisfiable: bool = True
    domain_paused: bool = False
    butler_release_required: bool = False
    provider_unavailable: bool = False
    rate_gate: StateReason | None = None


@dataclass(frozen=True)
class Decision:
    """The outcome of ``decide``: the gate met, the state to seal in, and its reason (None for ``held``)."""

    gate: Gate
    state: SendState
    reason: StateReason | None


_POLICY_OUTCOMES = ("allow", "hold", "require_approval", "deny")


def triggered(facts: GateFacts) -> set[Gate]:
    """Every gate the facts trigger (``ALLOW`` always)."""
    gates = {Gate.ALLOW}
    outcome = facts.policy_outcome or "allow"
    if outcome not in _POLICY_OUTCOMES or outcome == "deny":
        gates.add(Gate.POLICY_DENY)
    if outcome == "require_approval":
        gates.add(Gate.REQUIRE_APPROVAL)
    if outcome == "hold":
        gates.add(Gate.POLICY_HOLD)
    if facts.domain_paused:
        gates.add(Gate.DOMAIN_PAUSE)
    if facts.butler_release_required:
        gates.add(Gate.BUTLER_RELEASE)
    if facts.provider_unavailable:
        gates.add(Gate.PROVIDER_UNAVAILABLE)
    if facts.rate_gate is not None:
        gates.add(Gate.RATE_GATE)
    return gates


def decide(facts: GateFacts) -> Decision:
    """The decision for ``facts``: the strongest triggered gate (``min`` by rank) and its state and reason.

    ``RATE_GATE`` keeps the breaker's own reason; an unsatisfiable approval refuses
    (``withheld/approval_unsatisfiable``) rather than waiting for nobody.
    """
    gate = min(triggered(facts))
    if gate is Gate.REQUIRE_APPROVAL and not facts.approval_satisfiable:
        return Decision(gate, SendState.WITHHELD, StateReason.APPROVAL_UNSATISFIABLE)
    if gate is Gate.RATE_GATE:
        return Decision(gate, SendState.AWAITING, facts.rate_gate)
    state, reason = OUTCOME_OF_GATE[gate]
    return Decision(gate, state, reason)


#: State and reason of each gate (``RATE_GATE``'s reason comes from the facts). Total over ``Gate``.
OUTCOME_OF_GATE: dict[Gate, tuple[SendState, StateReason | None]] = {
    Gate.POLICY_DENY: (SendState.WITHHELD, StateReason.POLICY_DENIED),
    Gate.DOMAIN_PAUSE: (SendState.WITHHELD, StateReason.DOMAIN_PAUSED),
    Gate.REQUIRE_APPROVAL: (SendState.AWAITING, StateReason.POLICY_APPROVAL_REQUIRED),
    Gate.POLICY_HOLD: (SendState.AWAITING, StateReason.POLICY_HOLD),
    Gate.BUTLER_RELEASE: (SendState.AWAITING, StateReason.BUTLER_RELEASE_REQUIRED),
    Gate.PROVIDER_UNAVAILABLE: (SendState.AWAITING, StateReason.PROVIDER_UNAVAILABLE),
    Gate.RATE_GATE: (SendState.AWAITING, StateReason.BREAKER_VOLUME),
    Gate.ALLOW: (SendState.HELD, None),
}
