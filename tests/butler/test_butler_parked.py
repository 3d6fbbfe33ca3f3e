"""Issue 17 item 12: which send states end a run parked on the send's release (a table over every state)."""

from __future__ import annotations

import pytest

from mailnode.butler.parked import END_REASONS, PARKED_RUN_ENDS, parked_run_end
from mailnode.vocabulary.send_states import SendState

TABLE = {
    "held": None, "awaiting": None, "cancelled": "send_cancelled", "withheld": "send_withheld",
    "throttled": None, "refused": "send_refused", "suppressed": "send_suppressed", "handed_over": None,
    "outcome_unknown": None,
}


def test_the_table_is_total_over_send_states() -> None:
    assert set(PARKED_RUN_ENDS) == set(SendState)
    assert set(TABLE) == {s.value for s in SendState}


@pytest.mark.parametrize(("state", "reason"), sorted(TABLE.items()))
def test_a_parked_run_ends_only_when_its_send_can_never_be_released(state: str, reason: str | None) -> None:
    assert parked_run_end(state) == reason


def test_an_unknown_state_ends_nothing() -> None:
    assert parked_run_end("sent") is None
    assert END_REASONS == {"send_cancelled", "send_withheld", "send_refused", "send_suppressed"}
