"""Doctor's ``butler_runs_stuck`` over a real DBOS (issue 14 item 4): the failure of item 3 made by hand (a
parked run's workflow marked ERROR in DBOS's system database, cancelled, or deleted) and a run past its
deadline are each named with their id and age; a release then answers what it did; and with DBOS's
statuses unreadable the finding says it did not observe, never ok."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import create_engine, text

from mailnode import runtime
from mailnode.doctor.checks import CHECKS, run_checks
from mailnode.doctor.findings import Severity
from tests.butler.runs.builders import World, message, release
from tests.butler.runs.conftest import ack_program

NAME = "butler_runs_stuck"


def _finding(world: World) -> Any:
    [found] = run_checks(world.node, world.installed.org_id, [NAME])
    return found


def _parked(world: World) -> Any:
    bid, _ = world.publish(ack_program(), name="acknowledge")
    world.grant(bid, "send.propose", "mailbox.content.read")
    return world.wait_run(world.deliver(message(subject="Order 42")), until=lambda r: r.state == "awaiting_release")


def _mark_error(world: World, run_id: str) -> None:
    """What a graceful stop did before issue 14: DBOS recorded the parked run's workflow as ERROR."""
    url = runtime.system_database_url(world.node).replace("postgresql://", "postgresql+psycopg://", 1)
    table = "dbos.workflow_status" if url.startswith("postgresql") else "workflow_status"
    engine = create_engine(url)
    with engine.begin() as c:
        done = c.execute(text(f"UPDATE {table} SET status = 'ERROR' WHERE workflow_uuid = :id"), {"id": run_id})
        assert done.rowcount == 1
    engine.dispose()


def test_the_check_is_registered_and_a_quiet_node_has_nothing_stuck(world: World) -> None:
    assert NAME in CHECKS
    found = _finding(world)
    assert (found.ok, found.severity, found.data["live"]) == (True, Severity.DEGRADED, 0)


def test_a_healthy_parked_run_is_not_stuck(world: World) -> None:
    run = _parked(world)
    found = _finding(world)
    assert (found.ok, found.data["live"], found.data["stuck"]) == (True, 1, [])
    assert run.id not in found.detail


@pytest.mark.parametrize("how", ["error", "cancelled", "deleted"])
def test_a_parked_run_whose_workflow_ended_or_went_is_named_with_its_age(world: World, how: str) -> None:
    from dbos import DBOS

    run = _parked(world)
    if how == "error":
        _mark_error(world, run.id)
    else:
        DBOS.cancel_workflow(run.id)
        if how == "deleted":
            DBOS.delete_workflow(run.id)
    world.node.clock.advance(125)  # type: ignore[attr-defined]
    found = _finding(world)
    assert (found.ok, found.severity) == (False, Severity.DEGRADED)
    [stuck] = found.data["stuck"]
    status = {"error": "ERROR", "cancelled": "CANCELLED", "deleted": None}[how]
    why = "workflow_missing" if how == "deleted" else "workflow_ended"
    assert (stuck["run_id"], stuck["state"], stuck["why"], stuck["workflow_status"], stuck["age_seconds"]) == (
        run.id, "awaiting_release", why, status, 125)
    assert f"run {run.id} (awaiting_release for 125 s)" in found.detail
    assert "releasable" in found.fix

    # A release still releases the send, and says truthfully what became of the run.
    send_id = world.effects(run.id)[-1].subject
    answer = release(world, send_id)
    if how == "deleted":
        assert (answer["resumed"], answer["resumption"]) == (False, "workflow_gone")
        assert world.wait_run(run.trigger_key).outcome_reason == "released_after_run_expired"
        assert _finding(world).ok is True
    else:
        assert (answer["resumed"], answer["resumption"]) == (False, "workflow_ended")
        assert world.runs(run.trigger_key)[0].state == "awaiting_release"
        assert _finding(world).data["stuck"][0]["run_id"] == run.id


def test_a_live_workflow_past_its_deadline_is_named(world: World) -> None:
    from mailnode import budgets

    run = _parked(world)
    timeout = world.node.settings.butler_release_timeout_seconds
    world.node.clock.advance(timeout + budgets.BUTLER_RUN_STUCK_GRACE_SECONDS)  # type: ignore[attr-defined]
    assert _finding(world).ok is True
    world.node.clock.advance(1)  # type: ignore[attr-defined]
    found = _finding(world)
    [stuck] = found.data["stuck"]
    assert (stuck["run_id"], stuck["why"], stuck["workflow_status"]) == (run.id, "past_deadline", "PENDING")
    assert stuck["age_seconds"] == int(timeout) + budgets.BUTLER_RUN_STUCK_GRACE_SECONDS + 1
    assert "MAILNODE_EXECUTOR_ID" in found.fix


def test_unreadable_statuses_are_not_observed_never_ok(world: World, tmp_path: Any) -> None:
    run = _parked(world)
    runtime.shutdown()  # doctor from the CLI: no executor in this process
    world.node.settings.dbos_system_database_url = f"sqlite:///{tmp_path / 'absent' / 'dbos.sqlite'}"
    found = _finding(world)
    assert (found.ok, found.severity, found.data["observed"], found.data["statuses_read"]) == (
        False, Severity.REPORT, False, False)
    assert found.detail.startswith("not observed") and "does not exist" in found.detail
    assert not (tmp_path / "absent").exists()
    assert run.id not in str(found.data["stuck"])


def test_doctor_without_an_executor_reads_the_system_database_itself(world: World) -> None:
    run = _parked(world)
    runtime.shutdown()  # as `mailnode doctor` runs: the graceful stop leaves the parked workflow PENDING
    found = _finding(world)
    assert (found.ok, found.data["live"], found.data["statuses_read"]) == (True, 1, True)
    _mark_error(world, run.id)
    [stuck] = _finding(world).data["stuck"]
    assert (stuck["run_id"], stuck["why"], stuck["workflow_status"]) == (run.id, "workflow_ended", "ERROR")
