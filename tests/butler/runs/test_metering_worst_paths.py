"""Metering over every node type's dearest paths (issue 17 item 10): the statements each effect really
took, as the statement meter counted them into its effect row, never exceed the node type's reservation,
and a run never spends past its pot whatever the pot is."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mailnode import budgets
from mailnode.butler import cost
from mailnode.butler.walk import EFFECT_TYPES
from tests.butler.runs.conftest import World, ack_program, message, program


def _run_of(world: World, butler_id: str, message_id: str) -> Any:
    """The run of ``butler_id`` on ``message_id`` once it stops moving (ended, or parked on a release)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        runs = [r for r in world.runs(message_id) if r.butler_id == butler_id]
        if runs and runs[0].state not in ("pending", "running"):
            return runs[0]
        time.sleep(0.05)
    raise AssertionError(f"the run of {butler_id} on {message_id} did not stop moving")


def _paths(user_id: str) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """Programs that drive each effect node down its dearest paths, with the relations to grant."""
    lookups = [
        {"id": f"l_{entity}", "type": "lookup", "entity": entity, "entityId": f"${{event.{entity}_id}}",
         "as": f"v_{entity}", "next": nxt}
        for entity, nxt in (("message", "l_case"), ("case", "l_conversation"), ("conversation", "l_mailbox"),
                            ("mailbox", "give"))]
    people_and_cases = program([
        *lookups,
        # The claim for someone else asks whether they may work the case, then the Butler is refused it.
        {"id": "give", "type": "case.assign", "caseId": "${event.case_id}", "assignee": user_id, "next": "take"},
        {"id": "take", "type": "case.assign", "caseId": "${event.case_id}", "assignee": "${butler.id}",
         "next": "shut"},
        {"id": "shut", "type": "case.close", "caseId": "${event.case_id}", "next": None},
    ], "l_message", ["mailbox.content.read", "send.propose"])
    butler_cases = program([
        {"id": "take", "type": "case.assign", "caseId": "${event.case_id}", "assignee": "${butler.id}",
         "next": "shut"},
        {"id": "shut", "type": "case.close", "caseId": "${event.case_id}", "next": "again"},
        {"id": "again", "type": "case.close", "caseId": "${event.case_id}", "next": None},
    ], "take", ["send.propose"])
    # Only send.propose: the reply to the triggering message takes the trigger exemption (two more reads).
    reply_without_content = ack_program()
    refused_reply = program([
        {"id": "one", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "a", "body": "b",
         "inReplyTo": "${event.message_id}", "as": "first", "next": "two"},
        {"id": "two", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "a", "body": "b",
         "inReplyTo": "${event.message_id}", "as": "second", "next": "send"},
        {"id": "send", "type": "mail.send.propose", "draft": "${steps.first.id}", "next": None},
    ], "one", ["send.propose"])
    return [(people_and_cases, ("mailbox.content.read", "send.propose")), (butler_cases, ("send.propose",)),
            (reply_without_content, ("send.propose",)), (refused_reply, ("send.propose",))]


def test_every_node_types_dearest_measured_path_fits_its_reservation(world: World) -> None:
    world.grant(world.installed.user_id, "send.propose")
    measured: dict[str, int] = {}
    for doc, relations in _paths(world.installed.user_id):
        bid, _ = world.publish(doc)
        world.grant(bid, *relations)
        mid = world.deliver(message(subject=f"for {doc['metadata']['name']}"))
        run = _run_of(world, bid, mid)
        rows = world.effects(run.id)
        assert rows, run
        for e in rows:
            measured[e.node_type] = max(measured.get(e.node_type, 0), int(e.statements))
        print(doc["entry"], [(e.node_id, e.outcome, e.reason, e.statements) for e in rows])
        world.node.settings.butler_run_pot = budgets.BUTLER_RUN_POT_STATEMENTS
    print("dearest measured statements per effect node:", measured)
    assert set(measured) == set(EFFECT_TYPES)
    over = {t: (n, cost.RUNTIME_RESERVATIONS[t]) for t, n in measured.items() if n > cost.RUNTIME_RESERVATIONS[t]}
    assert over == {}, f"measured > reserved: {over}"


@pytest.mark.parametrize("headroom", range(-4, 3))
def test_a_run_never_spends_past_its_pot(world: World, headroom: int) -> None:
    # A draft-only Butler (the trigger exemption, its dearest path) under pots around what it needs.
    doc = ack_program()
    doc["nodes"] = [n for n in doc["nodes"] if n["type"] == "draft"]
    doc["nodes"][0]["next"] = None
    doc["entry"] = doc["nodes"][0]["id"]
    bid, _ = world.publish(doc)
    world.grant(bid, "send.propose")
    need = budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS + cost.RUNTIME_RESERVATIONS["draft"]
    world.node.settings.butler_run_pot = need + headroom
    run = _run_of(world, bid, world.deliver(message()))
    assert run.statements_spent <= need + headroom, (run.state, run.outcome_reason, run.statements_spent)
    if headroom >= 0:
        assert (run.state, run.outcome_reason, run.effects) == ("finished", None, 1)
    else:
        assert run.state == "refused" and world.effects(run.id) == []
