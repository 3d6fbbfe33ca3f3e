"""The dry run: the same walk as the engine over a real run's facts, on a connection that cannot write."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from sqlalchemy import insert, text
from sqlalchemy.exc import DBAPIError

from mailnode.butler.engine import run_butler
from mailnode.butler.simulate import WOULD, WRITING_TYPES
from mailnode.butler.trigger import open_runs_in
from mailnode.node import Node
from mailnode.schema.directory import organisations
from tests.butler.runs.builders import World, message, person, release, row_counts
from tests.butler.runs.conftest import program

#: Reads a case, answers unless refused, takes the case, replies, proposes the reply, closes the case.
TRIAGE = program([
    {"id": "read", "type": "lookup", "entity": "case", "entityId": "${event.case_id}", "as": "c", "next": "may"},
    {"id": "may", "type": "guard", "when": "event.reply_refusal == null", "then": "take", "otherwise": "quiet"},
    {"id": "take", "type": "case.assign", "caseId": "${steps.c.id}", "assignee": "${butler.id}", "next": "note"},
    {"id": "note", "type": "transform", "value": "Re: ${event.subject}", "as": "subject", "next": "reply"},
    {"id": "reply", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "${steps.subject}",
     "body": "We have your message.", "inReplyTo": "${event.message_id}", "as": "ack", "next": "propose"},
    {"id": "propose", "type": "mail.send.propose", "draft": "${steps.ack.id}", "next": "close"},
    {"id": "close", "type": "case.close", "caseId": "${steps.c.id}", "next": None},
    {"id": "quiet", "type": "stop", "reason": "no automatic reply"},
], "read", ["send.propose", "mailbox.metadata.read"], name="triage")


def _simulate(world: World, butler_id: str, run_id: str, headers: dict[str, str] | None = None) -> Any:
    return world.api.post(f"/api/butlers/{butler_id}/simulate", json={"run_id": run_id},
                          headers=headers or world.admin)


def test_a_dry_run_and_a_live_run_over_one_delivery_reach_the_same_nodes_with_the_same_verdicts(world: World) -> None:
    bid, _ = world.publish(TRIAGE, name="triage")
    world.grant(bid, "send.propose", "mailbox.content.read", "mailbox.metadata.read")
    # The dry run walks the run before the live run writes anything, so both see the same world (a dry
    # run after the live run's claim would rightly find the case held).
    mid = world.deliver(message(subject="Order 42"), start=False)
    with world.node.begin() as conn:
        [run_id] = open_runs_in(conn, mid, world.node.clock.now())

    before = row_counts(world)
    r = _simulate(world, bid, run_id)
    assert r.status_code == 200, r.text
    dry = r.json()["simulation"]
    assert row_counts(world) == before

    with SetWorkflowID(run_id):
        DBOS.start_workflow(run_butler, run_id)
    parked = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    release(world, world.effects(parked.id)[-1].subject)
    live = world.wait_run(mid)
    assert (live.state, live.outcome_reason) == ("finished", None)
    rows = world.effects(live.id)

    assert dry["version_state"] == "published" and dry["checks"] is True
    assert dry["outcome"] == {"state": "finished", "reason": None, "detail": {}}
    # Every node the live run visited, in order: the effect rows are the visits that touched the world.
    assert len(dry["nodes"]) == live.nodes_executed
    assert [n["node_id"] for n in dry["nodes"]] == ["read", "may", "take", "note", "reply", "propose", "close"]
    dry_effects = [(n["seq"], n["step"], n["node_id"], n["verdict"]) for n in dry["nodes"] if "seq" in n]
    expected = [(e.seq, e.step, e.node_id, WOULD if e.node_type in WRITING_TYPES and e.outcome == "ok" else e.outcome)
                for e in rows]
    assert dry_effects == expected
    assert [v for *_, v in dry_effects] == ["ok", WOULD, WOULD, WOULD, WOULD]
    draft = next(n for n in dry["nodes"] if n["node_id"] == "reply")
    assert draft["recipient"] == "customer@remote.test"
    assert dry["price"]["reserved_by_walk"] > 0 and dry["price"]["checker"] > 0
    assert any("decide at the seal" in line for line in dry["limits"])
    assert any("claim" in line for line in dry["limits"]) and any("asker" in line for line in dry["limits"])


def test_a_dry_run_walks_the_draft_and_never_changes_a_row_count(world: World) -> None:
    bid, _ = world.publish(TRIAGE, name="triage")
    world.grant(bid, "send.propose", "mailbox.content.read", "mailbox.metadata.read")
    mid = world.deliver(message(subject="Refund"))
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    draft = json.loads(json.dumps(TRIAGE))
    draft["nodes"][1]["when"] = "event.subject == \"never\""
    assert world.api.put(f"/api/butlers/{bid}/draft", json={"source": json.dumps(draft)},
                         headers=world.admin).status_code == 200
    before = row_counts(world)
    dry = _simulate(world, bid, run.id).json()["simulation"]
    assert row_counts(world) == before
    assert dry["version_state"] == "draft"
    assert [n["node_id"] for n in dry["nodes"]] == ["read", "may", "quiet"]
    assert dry["outcome"]["state"] == "stopped"
    # Someone without the mailbox's metadata sees the walk, not the mail it read.
    other = person(world, "olga@example.test", ("org.admin", world.installed.org_id))
    reader = person(world, "rita@example.test", ("mailbox.content.read", world.installed.mailbox_id))
    before = row_counts(world)
    theirs = _simulate(world, bid, run.id, other).json()["simulation"]
    assert theirs["trigger_facts_redacted"] == ["from", "parse_error", "return_path", "subject"]
    # Not an administrator: no such Butler.
    assert _simulate(world, bid, run.id, reader).status_code == 404
    assert row_counts(world) == before


def test_a_dry_run_reports_a_refusal_it_can_decide(world: World) -> None:
    bid, _ = world.publish(TRIAGE, name="triage")
    world.grant(bid, "send.propose", "mailbox.content.read", "mailbox.metadata.read")
    mid = world.deliver(message(subject="Refund"))
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    world.revoke(bid, "send.propose")
    dry = _simulate(world, bid, run.id).json()["simulation"]
    take = next(n for n in dry["nodes"] if n["node_id"] == "take")
    assert (take["verdict"], take["reason"]) == ("refused", "case_not_actionable")
    reply = next(n for n in dry["nodes"] if n["node_id"] == "reply")
    assert (reply["verdict"], reply["reason"]) == ("refused", "butler_not_granted")


@pytest.mark.parametrize("statement", ["insert", "raw"])
def test_a_write_on_a_read_connection_fails_on_either_database(node: Node, installed: Any, statement: str) -> None:
    with pytest.raises(DBAPIError) as caught, node.read() as conn:
        if statement == "insert":
            conn.execute(insert(organisations).values(id="org_01M8N5K0G0153NJB0SFPKGPG83", name="x",
                                                      created_at=node.clock.now()))
        else:
            conn.execute(text("UPDATE organisations SET name = 'changed'"))
    assert "read" in str(caught.value).lower()
    # The connection went back to the pool writable: an ordinary write still works, and reads see it.
    with node.begin() as conn:
        conn.execute(text("UPDATE organisations SET name = name"))
    with node.read() as conn:
        assert conn.execute(text("SELECT count(*) FROM organisations")).scalar_one() == 1
