"""``release.decide_resumption``: what telling a released send's run does, as a table (issue 14 item 3: a
release answers ``resumed: true`` only when a live workflow of this process received it)."""

from __future__ import annotations

import pytest

from mailnode.butler.release import SENDS, Resumption, decide_resumption

OWN = "serve-host"
R = Resumption


@pytest.mark.parametrize(("run_id", "run_state", "launched", "status", "executor", "expected"), [
    (None, None, True, None, None, R.NO_RUN),
    ("run", "stopped", True, "SUCCESS", OWN, R.RUN_NOT_PARKED),
    ("run", "running", True, "PENDING", OWN, R.RUN_NOT_PARKED),
    ("run", "awaiting_release", False, None, None, R.NO_EXECUTOR),
    ("run", "awaiting_release", True, None, None, R.WORKFLOW_GONE),
    ("run", "awaiting_release", True, "ERROR", OWN, R.WORKFLOW_ENDED),
    ("run", "awaiting_release", True, "CANCELLED", OWN, R.WORKFLOW_ENDED),
    ("run", "awaiting_release", True, "MAX_RECOVERY_ATTEMPTS_EXCEEDED", OWN, R.WORKFLOW_ENDED),
    ("run", "awaiting_release", True, "SUCCESS", OWN, R.WORKFLOW_ENDED),
    ("run", "awaiting_release", True, "SOMETHING_NEW", OWN, R.WORKFLOW_ENDED),
    ("run", "awaiting_release", True, "ENQUEUED", OWN, R.AWAITING_RECOVERY),
    ("run", "awaiting_release", True, "DELAYED", "other", R.AWAITING_RECOVERY),
    ("run", "awaiting_release", True, "PENDING", "other", R.DELIVERED_ELSEWHERE),
    ("run", "awaiting_release", True, "PENDING", OWN, R.DELIVERED),
])
def test_decide_resumption(run_id: str | None, run_state: str | None, launched: bool, status: str | None,
                           executor: str | None, expected: Resumption) -> None:
    assert decide_resumption(run_id, run_state, launched, status, executor, OWN) is expected
    assert decide_resumption(run_id, run_state, launched, status, executor, OWN, "1.0", "1.0") is expected


@pytest.mark.parametrize(("status", "expected"), [
    # A workflow another version started is run by no process of this one, whatever its executor id.
    ("PENDING", R.OTHER_VERSION), ("ENQUEUED", R.OTHER_VERSION), ("ERROR", R.WORKFLOW_ENDED),
])
def test_a_workflow_of_another_version_is_not_claimed_delivered(status: str, expected: Resumption) -> None:
    assert decide_resumption("run", "awaiting_release", True, status, OWN, OWN, "0.9", "1.0") is expected


def test_only_a_live_workflow_is_sent_the_release() -> None:
    assert SENDS == {R.DELIVERED, R.DELIVERED_ELSEWHERE, R.AWAITING_RECOVERY, R.OTHER_VERSION}
