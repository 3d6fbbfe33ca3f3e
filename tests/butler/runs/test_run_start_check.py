"""The run-start re-check is skipped for a version this checker already checked (issue 17 item 9): every
delivery used to re-check the stored program, ~70 s for a deep one, delaying other Butlers' runs."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from mailnode.butler import check as check_mod
from tests.butler.runs.conftest import World, message, program


def test_a_published_version_is_checked_at_the_first_run_start_only(world: World,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = check_mod.check

    def counting(source: Any, *, pot: int) -> check_mod.CheckResult:
        calls.append(pot)
        return real(source, pot=pot)

    monkeypatch.setattr(check_mod, "check", counting)
    # A name no other test uses, so no other run has checked these exact bytes in this process.
    world.publish(program([{"id": "done", "type": "stop", "reason": "seen"}], "done", name=uuid.uuid4().hex))
    for subject in ("one", "two", "three"):
        run = world.wait_run(world.deliver(message(subject=subject)))
        assert (run.state, run.outcome_reason) == ("stopped", "seen")
    assert calls == [world.node.settings.butler_run_pot]
