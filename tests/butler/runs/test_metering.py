"""Metering: every effect node's measured statements fit its reservation in budgets.py, the engine's
fixed cost fits its figure, and a pot just below what a program needs refuses the effect that would
pass it, having performed the ones before."""

from __future__ import annotations

from typing import Any

from mailnode import budgets
from mailnode.butler import record
from mailnode.butler.cost import RUNTIME_RESERVATIONS
from tests.butler.runs.conftest import World, ack_program, message, program

_EVERY_EFFECT = program([
    {"id": "msg", "type": "lookup", "entity": "message", "entityId": "${event.message_id}", "as": "m",
     "next": "cas"},
    {"id": "cas", "type": "lookup", "entity": "case", "entityId": "${event.case_id}", "as": "c", "next": "cnv"},
    {"id": "cnv", "type": "lookup", "entity": "conversation", "entityId": "${event.conversation_id}", "as": "v",
     "next": "mbx"},
    {"id": "mbx", "type": "lookup", "entity": "mailbox", "entityId": "${event.mailbox_id}", "as": "b",
     "next": "take"},
    {"id": "take", "type": "case.assign", "caseId": "${event.case_id}", "assignee": "${butler.id}", "next": "reply"},
    {"id": "reply", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "Re: ${steps.m.subject}",
     "body": "Thanks.", "inReplyTo": "${event.message_id}", "as": "ack", "next": "dft"},
    {"id": "dft", "type": "lookup", "entity": "draft", "entityId": "${steps.ack.id}", "as": "d", "next": "propose"},
    {"id": "propose", "type": "mail.send.propose", "draft": "${steps.d}", "next": "close"},
    {"id": "close", "type": "case.close", "caseId": "${event.case_id}", "next": None},
], "msg", ["mailbox.content.read", "send.propose"])


def test_each_effect_node_fits_its_reservation_and_the_engine_its_fixed_cost(world: World) -> None:
    bid, _ = world.publish(_EVERY_EFFECT)
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(subject="Order 42"))
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    send_id = world.effects(run.id)[-1].subject
    assert world.api.post(f"/api/sends/{send_id}/release", headers=world.admin).status_code == 200
    run = world.wait_run(mid)
    rows = world.effects(run.id)
    assert [(e.node_id, e.outcome) for e in rows] == [
        ("msg", "ok"), ("cas", "ok"), ("cnv", "ok"), ("mbx", "ok"), ("take", "ok"), ("reply", "ok"), ("dft", "ok"),
        ("propose", "ok"), ("close", "ok")]
    measured: dict[str, int] = {}
    for e in rows:
        measured[e.node_type] = max(measured.get(e.node_type, 0), e.statements)
    print("measured statements per effect node:", measured)
    for node_type, count in measured.items():
        assert count <= RUNTIME_RESERVATIONS[node_type], (node_type, count)
    assert (run.state, run.effects) == ("finished", 9)
    assert run.statements_spent >= sum(e.statements for e in rows)



def test_the_engine_fixed_cost_fits_its_figure(world: World) -> None:
    world.publish(program([{"id": "done", "type": "stop", "reason": "nothing"}], "done"))
    run = world.wait_run(world.deliver(message()))
    print("engine fixed statements:", run.statements_spent)
    assert (run.state, run.outcome_reason) == ("stopped", "nothing")
    assert 0 < run.statements_spent <= budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS


def _guard_spend(world: World, parked: Any) -> int:
    """What the guard before ``propose`` saw in a run like ``parked``: everything stored before the
    send, plus the per-invocation read (measured here with the same meter)."""
    propose = world.effects(parked.id)[-1]
    with world.node.meter.measure() as m, world.node.read() as conn:
        record.invocation(conn, parked.id)
    return int(parked.statements_spent) - int(propose.statements) + m.count


def test_a_pot_just_below_need_refuses_the_effect_that_would_pass_it(world: World) -> None:
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    first = world.wait_run(world.deliver(message(subject="one")), until=lambda r: r.state == "awaiting_release")
    need = (_guard_spend(world, first) + RUNTIME_RESERVATIONS["mail.send.propose"]
            + budgets.BUTLER_RUN_CLOSE_STATEMENTS)

    world.node.settings.butler_run_pot = need - 1
    below = world.wait_run(world.deliver(message(subject="two")))
    assert (below.state, below.outcome_reason) == ("refused", "budget_exhausted")
    assert [(e.node_id, e.outcome) for e in world.effects(below.id)] == [("reply", "ok")]

    world.node.settings.butler_run_pot = need
    enough = world.wait_run(world.deliver(message(subject="three")), until=lambda r: r.state == "awaiting_release")
    assert [(e.node_id, e.outcome) for e in world.effects(enough.id)] == [("reply", "ok"), ("propose", "ok")]


def test_a_pot_below_the_forecast_refuses_before_any_effect(world: World) -> None:
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    price = budgets.BUTLER_PRICE_DRAFT_STATEMENTS + budgets.BUTLER_PRICE_SEND_PROPOSE_STATEMENTS
    world.node.settings.butler_run_pot = price + budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS - 1
    run = world.wait_run(world.deliver(message()))
    assert (run.state, run.outcome_reason) == ("refused", "unaffordable_with_engine")
    assert world.effects(run.id) == []
