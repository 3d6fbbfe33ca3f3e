"""The one decision at hand-over: what dispatch does with a movable send, as a pure function of class × facts.

``gates.decide`` is the seal's decision; this is its twin at hand-over (spec/outbound.md §1.7,
spec/transactional.md §1). ``outbound.dispatch.dispatch_batch`` reads the facts (the author's authority,
governance's ``recheck_facts``, the provider breaker) into ``HandoverFacts``, calls ``decide`` and writes
what it returns; nothing else in dispatch chooses. In order, first match wins:

1. a class mailnode does not know: ``withhold/not_classified`` (fail closed);
2. the author no longer holds ``send.propose`` (not asked of system mail): ``withhold/authority_lost``;
3. a governance refusal: correspondence is withheld for any of them; other classes only for the ones in
   ``EVERY_CLASS_WITHHOLDS`` (the domain pause). Policy and approvals are correspondence's gates;
4. the provider breaker refuses the class: correspondence is gated ``awaiting/provider_unavailable``;
   deferrable and realtime mail is left untouched (``leave``: the sweeper and the realtime request decide);
5. a tripped rate breaker: **every class** is gated ``awaiting/breaker_*`` (seed 000: the breakers govern
   every class at hand-over). A refusal that does not apply to the class never hides the breaker;
6. otherwise ``proceed`` (dispatch then checks the sealed bytes and claims).

Refusals come before gates (a refusal says never, a gate says wait). No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mailnode.vocabulary.mail_classes import MailClass, parse_mail_class
from mailnode.vocabulary.send_states import StateReason


class Step(StrEnum):
    """What dispatch does with the send.

    - ``withhold``: ``withheld`` with the decision's reason (a refusal; recipients that never left follow).
    - ``gate_provider``: ``awaiting/provider_unavailable`` (correspondence; drains when the breaker reopens).
    - ``leave``: nothing written, no attempt spent (another class's provider refusal).
    - ``gate_rate``: ``awaiting/<breaker reason>`` with a recheck time.
    - ``proceed``: check the sealed bytes, claim, submit.
    """

    WITHHOLD = "withhold"
    GATE_PROVIDER = "gate_provider"
    LEAVE = "leave"
    GATE_RATE = "gate_rate"
    PROCEED = "proceed"


#: Governance refusals that withhold a send of any class; the rest (policy, approvals) are correspondence's.
EVERY_CLASS_WITHHOLDS: frozenset[StateReason] = frozenset({StateReason.DOMAIN_PAUSED})


@dataclass(frozen=True)
class HandoverFacts:
    """What dispatch knows about a movable send before its claim.

    Attributes:
        mail_class: the stored ``mail_class`` string (an unknown one withholds).
        system_mail: the node's own mail (``dispatch.is_system_mail``); its authority is not asked.
        authority_held: the author still holds ``send.propose`` on the mailbox.
        withhold_reason: governance's refusal (``RecheckFacts.withhold_reason``) or None.
        provider_allowed: the provider breaker lets this class make one request now.
        rate_gate: the first tripped rate breaker's reason (``breaker_volume`` ...), or None. Read whether
            or not governance refuses: whether the refusal applies depends on the class.
    """

    mail_class: str
    system_mail: bool = False
    authority_held: bool = True
    withhold_reason: StateReason | None = None
    provider_allowed: bool = True
    rate_gate: StateReason | None = None


@dataclass(frozen=True)
class HandoverDecision:
    """The answer of ``decide``: the step, and the reason written with it (None for ``leave``/``proceed``)."""

    step: Step
    reason: StateReason | None = None


def decide(facts: HandoverFacts) -> HandoverDecision:
    """The hand-over decision for ``facts`` (total over every class string and every recheck outcome).

    See the module docstring for the order; ``tests/outbound/test_handover.py`` is the table over every
    class (and an unknown one) and every recheck outcome.
    """
    cls = parse_mail_class(facts.mail_class)
    if cls is None:
        return HandoverDecision(Step.WITHHOLD, StateReason.NOT_CLASSIFIED)
    correspondence = cls is MailClass.CORRESPONDENCE
    if not facts.system_mail and not facts.authority_held:
        return HandoverDecision(Step.WITHHOLD, StateReason.AUTHORITY_LOST)
    reason = facts.withhold_reason
    if reason is not None and (correspondence or reason in EVERY_CLASS_WITHHOLDS):
        return HandoverDecision(Step.WITHHOLD, reason)
    if not facts.provider_allowed:
        if correspondence:
            return HandoverDecision(Step.GATE_PROVIDER, StateReason.PROVIDER_UNAVAILABLE)
        return HandoverDecision(Step.LEAVE)
    if facts.rate_gate is not None:
        return HandoverDecision(Step.GATE_RATE, facts.rate_gate)
    return HandoverDecision(Step.PROCEED)
