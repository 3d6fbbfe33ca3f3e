"""Doctor's three Butler findings: a pause in force, a Butler that should have run and did not, and whether
the loop detector can see threaded replies at all."""

from __future__ import annotations

from mailnode.butler import pause
from mailnode.doctor.checks import CHECKS, run_checks
from mailnode.doctor.findings import Severity
from tests.butler.runs.builders import World, message, release, reply_to_send
from tests.butler.runs.conftest import ack_program, program

NAMES = ("butler_paused", "butler_run_silence", "butler_loop_detection")


def _findings(world: World) -> dict[str, object]:
    return {f.name: f for f in run_checks(world.node, world.installed.org_id, list(NAMES))}


def test_the_butler_checks_are_registered() -> None:
    assert set(NAMES) <= set(CHECKS)


def test_a_quiet_node_reports_and_does_not_warn(world: World) -> None:
    found = _findings(world)
    paused, silence, loops = (found[n] for n in NAMES)
    assert (paused.ok, paused.severity) == (True, Severity.DEGRADED)  # type: ignore[attr-defined]
    assert silence.ok is True  # type: ignore[attr-defined]
    assert (loops.ok, loops.severity, loops.data["armed"], loops.data["reason"]) == (  # type: ignore[attr-defined]
        False, Severity.REPORT, False, "no_threaded_replies")


def test_the_findings_turn_when_there_is_something_to_say(world: World) -> None:
    bid, _ = world.publish(ack_program(), name="acknowledge")
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(subject="Order 42"))
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    # A Butler proposed a send and nothing inbound is threaded: the detector is blind, and says so.
    loops = _findings(world)["butler_loop_detection"]
    assert (loops.ok, loops.severity) == (False, Severity.DEGRADED)  # type: ignore[attr-defined]
    send_id = world.effects(run.id)[-1].subject
    release(world, send_id)
    reply_to_send(world, send_id)
    loops = _findings(world)["butler_loop_detection"]
    assert loops.ok is True and loops.data["armed"] is True  # type: ignore[attr-defined]

    # A second Butler on the same address, and mail that reached it without its trigger ever running:
    # silence with mail arriving is degraded.
    world.node.clock.advance(1)  # type: ignore[attr-defined]
    quiet, _ = world.publish(program([{"id": "s", "type": "stop", "reason": "x"}], "s"), name="quiet")
    assert _findings(world)["butler_run_silence"].ok is True
    world.deliver(message(subject="lost"), start=False)
    silence = _findings(world)["butler_run_silence"]
    assert (silence.ok, silence.severity) == (False, Severity.DEGRADED)  # type: ignore[attr-defined]
    assert "'quiet'" in silence.detail and "never ran" in silence.detail  # type: ignore[attr-defined]

    with world.node.begin() as conn:
        placed = pause.place(conn, org_id=world.installed.org_id, butler_id=quiet, name="quiet",
                             figure=pause.reading(3, [quiet]), message_id=mid, at=world.node.clock.now())
    found = _findings(world)
    paused = found["butler_paused"]
    assert (paused.ok, paused.severity) == (False, Severity.DEGRADED)  # type: ignore[attr-defined]
    assert f"POST /api/butler-pauses/{placed}/resume" in paused.fix  # type: ignore[attr-defined]
    assert "loop_detected" in paused.detail and mid in paused.detail  # type: ignore[attr-defined]
    # A paused Butler's silence is explained by its pause, not reported twice.
    assert found["butler_run_silence"].ok is True  # type: ignore[attr-defined]
