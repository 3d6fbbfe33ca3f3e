"""The hand-over decision as a table: every mail class (and an unknown one) × every recheck outcome.

``outbound.handover.decide`` is the only thing dispatch asks; issue 17 item 1: the rate breakers gate every
class at hand-over, whatever refusal does not apply to the class (seed 000, spec/transactional.md §1).
"""

from __future__ import annotations

import itertools

import pytest

from mailnode.governance import breakers
from mailnode.outbound.handover import EVERY_CLASS_WITHHOLDS, HandoverDecision, HandoverFacts, Step, decide
from mailnode.vocabulary.mail_classes import MailClass
from mailnode.vocabulary.send_states import StateReason

C, D, R = MailClass.CORRESPONDENCE.value, MailClass.DEFERRABLE.value, MailClass.REALTIME.value
#: Every refusal governance's recheck can answer (``gatefacts.recheck_facts``), and none.
GOVERNANCE = [None, StateReason.DOMAIN_PAUSED, StateReason.APPROVAL_REVOKED, StateReason.APPROVAL_EXPIRED,
              StateReason.APPROVER_INELIGIBLE, StateReason.POLICY_STRICTER]
RATES = [None, *(StateReason(r) for r in breakers.REASON_OF.values())]
CLASSES = [C, D, R, "bulk"]


def expected(cls: str, system: bool, authority: bool, refusal: StateReason | None, provider: bool,
             rate: StateReason | None) -> HandoverDecision:
    """The rule in words, independently of the implementation's branches."""
    if cls not in (C, D, R):
        return HandoverDecision(Step.WITHHOLD, StateReason.NOT_CLASSIFIED)
    if not system and not authority:
        return HandoverDecision(Step.WITHHOLD, StateReason.AUTHORITY_LOST)
    if refusal is not None and (cls == C or refusal is StateReason.DOMAIN_PAUSED):
        return HandoverDecision(Step.WITHHOLD, refusal)
    if not provider:
        return (HandoverDecision(Step.GATE_PROVIDER, StateReason.PROVIDER_UNAVAILABLE) if cls == C
                else HandoverDecision(Step.LEAVE))
    if rate is not None:
        return HandoverDecision(Step.GATE_RATE, rate)
    return HandoverDecision(Step.PROCEED)


CASES = list(itertools.product(CLASSES, [False, True], [True, False], GOVERNANCE, [True, False], RATES))


@pytest.mark.parametrize(("cls", "system", "authority", "refusal", "provider", "rate"), CASES)
def test_the_hand_over_table(cls: str, system: bool, authority: bool, refusal: StateReason | None,
                             provider: bool, rate: StateReason | None) -> None:
    facts = HandoverFacts(mail_class=cls, system_mail=system, authority_held=authority, withhold_reason=refusal,
                          provider_allowed=provider, rate_gate=rate)
    assert decide(facts) == expected(cls, system, authority, refusal, provider, rate)


@pytest.mark.parametrize("cls", [C, D, R])
@pytest.mark.parametrize("refusal", [r for r in GOVERNANCE if r is not None and r not in EVERY_CLASS_WITHHOLDS])
def test_a_tripped_breaker_gates_every_class_whatever_policy_says(cls: str, refusal: StateReason) -> None:
    # The defect: a policy stricter than the bound outcome hid the breaker from deferrable mail.
    d = decide(HandoverFacts(mail_class=cls, withhold_reason=refusal, rate_gate=StateReason.BREAKER_BOUNCE_RATE))
    assert d.step is (Step.WITHHOLD if cls == C else Step.GATE_RATE)
    assert d.step is not Step.PROCEED


def test_every_step_is_reachable() -> None:
    steps = {decide(HandoverFacts(mail_class=c, system_mail=s, authority_held=a, withhold_reason=g,
                                  provider_allowed=p, rate_gate=r)).step for c, s, a, g, p, r in CASES}
    assert steps == set(Step)
