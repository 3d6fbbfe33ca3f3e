"""Issue 17 item 12: a run parked on its send's release ends at once when the send is decided against
(cancelled by a person, withheld by retention), ``stopped`` with the reason, and its DBOS workflow ends too
rather than sleeping out the release timeout (four days by default)."""

from __future__ import annotations

import json
import time
from datetime import timedelta

from dbos import DBOS
from sqlalchemy import select

from mailnode.audit import audit_entries
from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests
from tests.butler.runs.conftest import World, ack_program, message


def _parked(world: World) -> tuple[str, str, str]:
    """A run of the acknowledgement Butler parked on its send: ``(message id, run id, send id)``."""
    world.node.settings.butler_release_timeout_seconds = 4 * 24 * 3600
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message())
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    return mid, run.id, world.effects(run.id)[-1].subject


def _workflow_ends(run_id: str, seconds: float = 20) -> str:
    deadline = time.monotonic() + seconds
    status = None
    while time.monotonic() < deadline:
        found = DBOS.get_workflow_status(run_id)
        status = None if found is None else str(found.status)
        if status == "SUCCESS":
            return status
        time.sleep(0.05)
    raise AssertionError(f"the run's workflow is still {status}")


def test_cancelling_the_send_a_run_is_parked_on_stops_the_run_and_its_workflow(world: World) -> None:
    mid, run_id, send_id = _parked(world)
    r = world.api.post(f"/api/sends/{send_id}/cancel", headers=world.admin)
    assert r.status_code == 200, r.text
    # The record says so at once, with the reason, in the cancel's own transaction.
    run = world.runs(mid)[0]
    assert (run.state, run.outcome_reason) == ("stopped", "send_cancelled")
    assert run.finished_at is not None
    # And the workflow that waited on the release ends now, not in four days.
    assert _workflow_ends(run_id) == "SUCCESS"
    assert (world.runs(mid)[0].state, world.runs(mid)[0].outcome_reason) == ("stopped", "send_cancelled")
    with world.node.read() as conn:
        detail = conn.execute(select(audit_entries.c.detail).where(audit_entries.c.action == "send.cancelled",
                                                                   audit_entries.c.subject == send_id)).scalar_one()
    assert json.loads(detail)["run_stopped"] == run_id
    # The run answers as stopped through the read route too.
    got = world.api.get(f"/api/butler-runs/{run_id}", headers=world.admin).json()["butler_run"]
    assert (got["state"], got["outcome_reason"]) == ("stopped", "send_cancelled")


def test_retention_withholding_the_send_a_run_is_parked_on_stops_the_run_and_its_workflow(world: World) -> None:
    mid, run_id, send_id = _parked(world)
    # Far past every retention ceiling: the pending send's body is deleted and the send withheld.
    later = world.node.clock.now() + timedelta(days=4000)
    report = retention_io.run_pass(world.node, later)
    assert send_id in report.sweeps[world.installed.org_id].withheld
    with world.node.read() as conn:
        state = conn.execute(select(send_manifests.c.state).where(send_manifests.c.id == send_id)).scalar_one()
    assert state == "withheld"
    run = world.runs(mid)[0]
    assert (run.state, run.outcome_reason) == ("stopped", "send_withheld")
    assert _workflow_ends(run_id) == "SUCCESS"


def test_cancelling_a_send_no_run_waits_on_ends_no_run(world: World) -> None:
    world.node.settings.butler_release_timeout_seconds = 0.5
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message())
    run = world.wait_run(mid)
    assert (run.state, run.outcome_reason) == ("stopped", "release_timed_out")
    send_id = world.effects(run.id)[-1].subject
    assert world.api.post(f"/api/sends/{send_id}/cancel", headers=world.admin).status_code == 200
    assert world.runs(mid)[0].outcome_reason == "release_timed_out"
