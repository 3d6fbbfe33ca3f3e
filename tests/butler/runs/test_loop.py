"""Loop detection and the latched pause, in this process on the real database: self-provoked runs are counted
at trigger time and the Butler is paused before the run over the limit; republishing does not clear it; a
resume with a reason does; the pause costs no statement where it is checked; a run waking into a pause
ends ``refused/butler_paused``; a loop through two Butlers is caught by the chain of replies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from mailnode import budgets
from mailnode.butler import pause, record, trigger
from mailnode.butler.pause import Provocation
from mailnode.ids import new_id
from mailnode.schema.butler_runs import butler_run_effects, butler_runs
from mailnode.schema.mail_messages import message_ids
from tests.butler.runs.builders import (
    World,
    message,
    pauses,
    person,
    release,
    reply_to_send,
    settled,
    wait_for,
)
from tests.butler.runs.conftest import ack_program, program

LIMIT = budgets.BUTLER_LOOP_MAX_SELF_PROVOKED_RUNS


def _audit(world: World, action: str) -> list[dict[str, Any]]:
    r = world.api.get("/api/audit", params={"action": action}, headers=world.admin)
    assert r.status_code == 200, r.text
    return list(r.json()["entries"])


def _answer_and_release(world: World, mid: str) -> tuple[Any, str]:
    """Wait for the run of ``mid`` to park on its send, release it, wait for it to finish."""
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    send_id = world.effects(run.id)[-1].subject
    release(world, send_id)
    done = world.wait_run(mid)
    assert (done.state, done.outcome_reason) == ("finished", None)
    return run, send_id


def test_self_provoked_runs_past_the_limit_pause_the_butler_and_only_a_resume_clears_it(world: World) -> None:
    bid, _vid = world.publish(ack_program(), name="acknowledge")
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(subject="Order 42"))
    runs = []
    for _ in range(LIMIT + 1):
        run, send_id = _answer_and_release(world, mid)
        runs.append(run)
        mid = reply_to_send(world, send_id)
    # The first run answered a person; each later one answered a reply to the Butler's own send.
    assert [bool(r.self_provoked) for r in runs] == [False] + [True] * LIMIT
    assert runs[2].provoked_by == runs[1].id, (runs[2].provoked_by, runs[1].id, runs[0].id)
    # The chain names the Butler of every hop, nearest first: here the same Butler each time.
    assert runs[2].reply_chain == [bid, bid]
    # The next self-provoked delivery would be one over the limit: no run, a pause instead.
    assert world.runs(mid) == []
    [placed] = pauses(world)
    assert (placed.butler_id, placed.reason, placed.tripped_by, placed.resumed_at) == (bid, "loop_detected", mid, None)
    assert placed.figure == {"self_provoked": LIMIT + 1, "limit": LIMIT,
                             "window_seconds": budgets.BUTLER_LOOP_WINDOW_SECONDS, "chain": [bid] * (LIMIT + 1)}
    assert placed.detail.startswith("E_BUTLER_LOOP")
    [paused] = _audit(world, "butler.paused")
    assert (paused["actor_kind"], paused["actor_id"], paused["subject"]) == ("node", None, bid)

    # No more runs start, whatever arrives.
    fresh = settled(world, message(subject="Another question"))
    assert world.runs(fresh) == []
    # Republishing does not clear it: the pause is keyed on the Butler, not the version.
    changed = ack_program()
    changed["nodes"][1]["body"] = "Thanks; we are on it."
    r = world.api.put(f"/api/butlers/{bid}/draft", json={"source": json.dumps(changed)}, headers=world.admin)
    assert r.status_code == 200, r.text
    assert world.api.post(f"/api/butlers/{bid}/publish", headers=world.admin).status_code == 200
    after_publish = settled(world, message(subject="Still there?"))
    assert world.runs(after_publish) == []
    listed = world.api.get("/api/butlers", headers=world.admin).json()["butlers"]
    assert [b["pause"]["id"] for b in listed if b["id"] == bid] == [placed.id]

    # The list shows it with its figure and the route that resumes it; nobody else sees it.
    shown = world.api.get("/api/butler-pauses", headers=world.admin).json()["butler_pauses"]
    assert [(p["id"], p["resume"]) for p in shown] == [(placed.id, f"POST /api/butler-pauses/{placed.id}/resume")]
    stranger = person(world, "sam@example.test", ("mailbox.content.read", world.installed.mailbox_id))
    assert world.api.get("/api/butler-pauses", headers=stranger).status_code == 404
    assert world.api.post(f"/api/butler-pauses/{placed.id}/resume", json={"reason": "fixed"},
                          headers=stranger).json()["error"] == "E_BUTLER_NO_SUCH_PAUSE"
    blank = world.api.post(f"/api/butler-pauses/{placed.id}/resume", json={"reason": "  "}, headers=world.admin)
    assert (blank.status_code, blank.json()["error"]) == (422, "E_BUTLER_PAUSE_REASON_REQUIRED")
    # There is no route that places a pause.
    assert world.api.post("/api/butler-pauses", json={"butler_id": bid}, headers=world.admin).status_code == 405

    resumed = world.api.post(f"/api/butler-pauses/{placed.id}/resume",
                             json={"reason": "the correspondent's responder was switched off"}, headers=world.admin)
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["butler_pause"]["resumed_reason"] == "the correspondent's responder was switched off"
    again = world.api.post(f"/api/butler-pauses/{placed.id}/resume", json={"reason": "x"}, headers=world.admin)
    assert (again.status_code, again.json()["error"]) == (409, "E_BUTLER_PAUSE_ALREADY_RESUMED")
    [entry] = _audit(world, "butler.resumed")
    assert (entry["actor_kind"], entry["subject"]) == ("user", bid)
    # The count starts again at the resume: even a self-provoked delivery runs now.
    last_send = world.effects(runs[-1].id)[-1].subject
    again_mid = reply_to_send(world, last_send, subject="Re: again")
    run = world.wait_run(again_mid, until=lambda r: r.state == "awaiting_release")
    assert run.self_provoked


def _measure_trigger(world: World, mid: str) -> tuple[int, list[str]]:
    """The statements of the trigger's work for ``mid``, in a transaction rolled back afterwards."""
    node = world.node
    with node.engine.connect() as conn:
        tx = conn.begin()
        with node.meter.measure() as m:
            opened = trigger.open_runs_in(conn, mid, node.clock.now())
        tx.rollback()
    return m.count, opened


def test_the_pause_is_checked_where_reads_already_happen_and_adds_no_statement(world: World) -> None:
    bid, vid = world.publish(program([{"id": "done", "type": "stop", "reason": "seen"}], "done"))
    mid = world.deliver(message(), start=False)
    # The delivery's facts, the published versions (with the pause riding on them), one run opened.
    count, opened = _measure_trigger(world, mid)
    assert (count, opened) == (3, [f"{vid}-{mid}"])
    with world.node.begin() as conn:
        placed = pause.place(conn, org_id=world.installed.org_id, butler_id=bid, name="b",
                             figure=pause.reading(3, [bid]), message_id=mid, at=world.node.clock.now())
    assert placed is not None
    count, opened = _measure_trigger(world, mid)
    assert (count, opened) == (2 + budgets.BUTLER_PAUSE_CHECK_ADDED_STATEMENTS, [])
    # The per-invocation read and an effect step's first read carry the pause in the same statements.
    run_id = f"{vid}-{new_id('msg')}"
    with world.node.begin() as conn:
        record.open_run(conn, run_id=run_id, org_id=world.installed.org_id, butler_id=bid, version_id=vid,
                        trigger_event="mail.received", trigger_key=mid, facts={}, at=world.node.clock.now())
    with world.node.read() as conn, world.node.meter.measure() as m:
        inv = record.invocation(conn, run_id)
        row, paused = record.effect_or_pause(conn, run_id, 1)
    assert inv is not None and inv.paused == placed and (row, paused) == (None, placed)
    assert m.count == 3 + budgets.BUTLER_PAUSE_CHECK_ADDED_STATEMENTS


def test_a_threaded_reply_to_a_butler_send_costs_the_detector_its_budget(world: World) -> None:
    bid, vid = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(subject="Order 42"))
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    reply = reply_to_send(world, world.effects(run.id)[-1].subject)
    wait_for(lambda: world.runs(reply))
    count, opened = _measure_trigger(world, reply)
    # facts + versions + the provoking run's read + the window count of the one Butler + the (existing) open.
    assert count == 2 + 1 + budgets.BUTLER_LOOP_DETECTION_STATEMENTS_PER_BUTLER + 1
    assert opened == [f"{vid}-{reply}"]
    # Called again (the pipeline is at least once), the run does not count itself: no pause.
    assert pauses(world) == []


def test_a_run_waking_from_a_wait_into_a_pause_ends_refused_butler_paused(world: World) -> None:
    bid, _ = world.publish(program([
        {"id": "read", "type": "lookup", "entity": "case", "entityId": "${event.case_id}", "as": "c", "next": "nap"},
        {"id": "nap", "type": "wait", "seconds": 2, "next": "take"},
        {"id": "take", "type": "case.assign", "caseId": "${steps.c.id}", "assignee": "${butler.id}", "next": None},
    ], "read", ["mailbox.metadata.read", "send.propose"]))
    world.grant(bid, "send.propose", "mailbox.metadata.read")
    mid = world.deliver(message())
    run = world.wait_run(mid, until=lambda r: len(world.effects(r.id)) == 1)
    with world.node.begin() as conn:
        pause.place(conn, org_id=world.installed.org_id, butler_id=bid, name="waits", figure=pause.reading(3, [bid]),
                    message_id=mid, at=world.node.clock.now())
    done = world.wait_run(mid)
    assert (done.id, done.state, done.outcome_reason) == (run.id, "refused", "butler_paused")
    assert [(e.node_id, e.outcome) for e in world.effects(run.id)] == [("read", "ok")]
    assert _audit(world, "case.claimed") == []


@pytest.mark.parametrize(("nearest", "chain", "butler", "expected"), [
    ("btl_B", (), "btl_A", False),
    ("btl_A", (), "btl_A", True),
    ("btl_B", ("btl_A",), "btl_A", True),
    ("btl_B", ("btl_C", "btl_D"), "btl_A", False),
])
def test_self_provocation_reads_the_chain_of_replies(nearest: str, chain: tuple[str, ...], butler: str,
                                                     expected: bool) -> None:
    assert pause.is_self_provoked(butler, [Provocation("run", nearest, chain)]) is expected


def test_the_chain_is_bounded_in_depth() -> None:
    long = tuple(f"btl_{i}" for i in range(budgets.BUTLER_LOOP_CHAIN_DEPTH + 5))
    chain = pause.reply_chain([Provocation("run", "btl_X", long)])
    assert len(chain) == budgets.BUTLER_LOOP_CHAIN_DEPTH and chain[0] == "btl_X"
    assert not pause.is_self_provoked(long[-1], [Provocation("run", "btl_X", long)])


def test_a_loop_through_two_butlers_is_caught_by_walking_the_chain(world: World) -> None:
    """A answers B answers A: A's second run replies to B's send, whose run replied to A's."""
    org = world.installed.org_id
    a, va = world.publish(program([{"id": "s", "type": "stop", "reason": "x"}], "s"), name="A")
    b, vb = world.publish(program([{"id": "s", "type": "stop", "reason": "x"}], "s"), name="B")
    now = world.node.clock.now()
    conversation = _any_conversation(world)

    def proposed(run_id: str, butler: str, version: str, chain: list[str] | None) -> str:
        send_id, rfc = new_id("snd"), f"{new_id('msg')}@example.test"
        with world.node.begin() as conn:
            record.open_run(conn, run_id=run_id, org_id=org, butler_id=butler, version_id=version,
                            trigger_event="mail.received", trigger_key=new_id("msg"), facts={}, at=now,
                            reply_chain=chain)
            conn.execute(butler_run_effects.insert().values(
                id=new_id("bre"), org_id=org, run_id=run_id, seq=1, node_id="p", node_type="mail.send.propose",
                step="p#1", outcome="ok", reason="butler_release_required", subject=send_id, statements=1, at=now))
            conn.execute(message_ids.insert().values(org_id=org, rfc_message_id=rfc,
                                                     conversation_id=conversation, source_id=send_id,
                                                     created_at=now))
        return rfc

    first_a = proposed(f"{va}-1", a, va, None)
    with world.node.read() as conn:
        provoked = pause.provocations(conn, org, [first_a])
    assert not pause.is_self_provoked(b, provoked)
    b_answer = proposed(f"{vb}-1", b, vb, list(pause.reply_chain(provoked)))
    with world.node.read() as conn, world.node.meter.measure() as m:
        provoked = pause.provocations(conn, org, [b_answer, "unknown@remote.test"])
    assert m.count == 1
    assert [(p.run_id, p.butler_id, p.chain) for p in provoked] == [(f"{vb}-1", b, (a,))]
    assert pause.is_self_provoked(a, provoked)
    assert pause.reply_chain(provoked) == (b, a)
    with world.node.read() as conn:
        rows = conn.execute(select(butler_runs.c.id, butler_runs.c.reply_chain)).all()
    assert {r.id: r.reply_chain for r in rows} == {f"{va}-1": None, f"{vb}-1": [a]}


def _any_conversation(world: World) -> str:
    from mailnode.mail.threading import start_conversation

    with world.node.begin() as conn:
        return start_conversation(conn, world.installed.org_id, "x", world.node.clock.now())


def test_an_unthreaded_delivery_names_no_candidates() -> None:
    assert pause.candidate_ids(None, []) == []
    assert pause.candidate_ids("<a@x>", ["<b@x>", "<a@x>", "<c@x>"]) == ["a@x", "c@x", "b@x"]
    many = [f"<{i}@x>" for i in range(50)]
    assert len(pause.candidate_ids(None, many)) == budgets.BUTLER_LOOP_CANDIDATE_IDS_MAX
