"""The gate outcome in words (``outbound.outcome.gate_outcome``) as a table, total over the vocabularies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailnode.outbound.outcome import AWAITING_SENTENCE, OutcomeKind, gate_outcome
from mailnode.vocabulary.send_states import STATE_OF_REASON, SendState, StateReason

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("state", "reason", "release_in", "approvers", "kind", "sentence", "cancel", "left"), [
    ("held", None, 125, (), OutcomeKind.HELD, "Held: it leaves in 2 min 05 s unless you cancel it.", True, 125),
    ("held", None, 1, (), OutcomeKind.HELD, "Held: it leaves in 1 second unless you cancel it.", True, 1),
    ("held", None, 0.2, (), OutcomeKind.HELD, "Held: it leaves in 1 second unless you cancel it.", True, 1),
    ("held", None, -5, (), OutcomeKind.HELD, "Held: its hold window is over; it leaves at the next hand-over.",
     True, 0),
    ("held", None, None, (), OutcomeKind.UNKNOWN,
     "This send is held but its release time is missing; treat it as stopped.", False, None),
    ("awaiting", "policy_approval_required", None, ("Dana", "Lee"), OutcomeKind.AWAITING,
     "Awaiting approval from Dana or Lee.", True, None),
    ("awaiting", "policy_approval_required", None, ("Dana",), OutcomeKind.AWAITING,
     "Awaiting approval from Dana.", True, None),
    ("awaiting", "policy_approval_required", None, ("Ana", "Bo", "Cy"), OutcomeKind.AWAITING,
     "Awaiting approval from Ana, Bo or Cy.", True, None),
    ("awaiting", "policy_approval_required", None, (), OutcomeKind.AWAITING,
     "Awaiting approval from an eligible approver.", True, None),
    ("awaiting", "butler_release_required", None, (), OutcomeKind.AWAITING,
     "Awaiting release: a person who may send from the mailbox must release this Butler's send.", True, None),
    ("awaiting", None, None, (), OutcomeKind.UNKNOWN,
     "This send is awaiting a gate it does not name; treat it as stopped.", False, None),
    ("withheld", "domain_paused", None, (), OutcomeKind.WITHHELD,
     "Withheld: Sending from this domain is paused by the administrators; it will not leave.", False, None),
    ("withheld", None, None, (), OutcomeKind.UNKNOWN,
     "This send was withheld without a reason; treat it as stopped.", False, None),
    ("handed_over", None, None, (), OutcomeKind.LEFT,
     "Handed over: The transport accepted it; arrival is not yet known.", False, None),
    ("cancelled", None, None, (), OutcomeKind.SETTLED, "Cancelled: Stopped by a person before it left.", False, None),
    # Fails closed: a state, a reason, or a pairing never seen.
    ("sent", None, None, (), OutcomeKind.UNKNOWN,
     "This send's state ('sent', reason None) is not one mailnode knows; treat it as stopped.", False, None),
    ("awaiting", "moon_phase", None, (), OutcomeKind.UNKNOWN,
     "This send's state ('awaiting', reason 'moon_phase') is not one mailnode knows; treat it as stopped.",
     False, None),
    ("awaiting", "domain_paused", None, (), OutcomeKind.UNKNOWN,
     "This send's state ('awaiting', reason 'domain_paused') is not one mailnode knows; treat it as stopped.",
     False, None),
    (None, None, None, (), OutcomeKind.UNKNOWN,
     "This send's state (None, reason None) is not one mailnode knows; treat it as stopped.", False, None),
])
def test_the_sentence_a_person_reads(state: str | None, reason: str | None, release_in: float | None,
                                     approvers: tuple[str, ...], kind: OutcomeKind, sentence: str, cancel: bool,
                                     left: int | None) -> None:
    release_at = NOW + timedelta(seconds=release_in) if release_in is not None else None
    o = gate_outcome(state, reason, send_id="snd_1", now=NOW, release_at=release_at, approvers=approvers,
                     approval_id="apr_1")
    assert (o.kind, o.sentence, o.may_cancel, o.seconds_left) == (kind, sentence, cancel, left)


def test_a_withheld_send_says_the_fix_and_an_awaiting_approval_names_the_decide_route() -> None:
    withheld = gate_outcome("withheld", "domain_paused", send_id="snd_1", now=NOW)
    assert withheld.fix is not None and "lifts the pause" in withheld.fix
    awaiting = gate_outcome("awaiting", "policy_approval_required", send_id="snd_1", now=NOW, approval_id="apr_9")
    assert awaiting.fix is not None and "/api/approvals/apr_9/decide" in awaiting.fix


def test_every_awaiting_reason_has_its_sentence() -> None:
    awaiting = {r for r, s in STATE_OF_REASON.items() if s is SendState.AWAITING}
    assert set(AWAITING_SENTENCE) == awaiting


@pytest.mark.parametrize("reason", list(StateReason))
def test_total_over_every_reason_in_its_own_state(reason: StateReason) -> None:
    state = STATE_OF_REASON[reason]
    o = gate_outcome(state.value, reason.value, send_id="snd_1", now=NOW)
    assert o.kind is not OutcomeKind.UNKNOWN and o.sentence and o.fix


@pytest.mark.parametrize("state", list(SendState))
def test_total_over_every_state(state: SendState) -> None:
    o = gate_outcome(state.value, None, send_id="snd_1", now=NOW, release_at=NOW + timedelta(seconds=9))
    assert o.sentence
    assert o.may_cancel == (state in (SendState.HELD,))
