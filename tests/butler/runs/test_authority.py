"""Authority = pinned ceiling ∩ the Butler's live tuples ∩ the sponsor's live tuples, with its reasons,
checked through real runs (and the at-most-two-statements bound measured directly)."""

from __future__ import annotations

from mailnode.butler import authority
from mailnode.butler.authority import Ceiling, Principal
from tests.butler.runs.conftest import MAILBOX, World, ack_program, message, program

_TAKE = program([
    {"id": "take", "type": "case.assign", "caseId": "${event.case_id}", "assignee": "${butler.id}", "next": None},
], "take", ["send.propose"])


def test_a_butler_without_tuples_can_do_nothing(world: World) -> None:
    world.publish(ack_program())
    run = world.wait_run(world.deliver(message()))
    rows = world.effects(run.id)
    assert [(e.node_id, e.outcome, e.reason) for e in rows] == [("reply", "refused", "butler_not_granted")]
    # The refused draft bound nothing, so the proposal's expression faults: refusal first, then the fault.
    assert (run.state, run.outcome_reason) == ("failed", "E_BUTLER_EXPR_UNRESOLVED")


def test_a_butler_without_tuples_cannot_assign_a_case(world: World) -> None:
    world.publish(_TAKE)
    run = world.wait_run(world.deliver(message()))
    assert [(e.outcome, e.reason) for e in world.effects(run.id)] == [("refused", "case_not_actionable")]
    assert (run.state, run.refusals, run.effects) == ("finished", 1, 0)


def test_tuples_on_a_mailbox_the_ceiling_does_not_declare_are_not_enough(world: World) -> None:
    doc = ack_program()
    # The document declares send.propose on another mailbox: granting it here does not widen the ceiling.
    doc["capabilities"] = [{"action": "send.propose", "resource": "mailbox:elsewhere@example.test"}]
    bid, _ = world.publish(doc)
    world.grant(bid, "send.propose", "mailbox.content.read")
    run = world.wait_run(world.deliver(message()))
    assert [(e.node_id, e.outcome, e.reason) for e in world.effects(run.id)] == [
        ("reply", "refused", "capability_not_declared")]


def test_a_sponsor_who_lost_the_relation_caps_the_butler(world: World) -> None:
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    world.revoke(world.installed.user_id, "send.propose")
    run = world.wait_run(world.deliver(message()))
    assert [(e.node_id, e.outcome, e.reason) for e in world.effects(run.id)] == [
        ("reply", "refused", "sponsor_lacks_it")]


def test_a_sponsor_who_lost_the_relation_makes_a_case_not_actionable(world: World) -> None:
    bid, _ = world.publish(_TAKE)
    world.grant(bid, "send.propose")
    world.revoke(world.installed.user_id, "send.propose")
    run = world.wait_run(world.deliver(message()))
    assert [(e.outcome, e.reason) for e in world.effects(run.id)] == [("refused", "case_not_actionable")]


def test_lookup_of_something_not_readable_binds_nothing(world: World) -> None:
    doc = program([
        {"id": "read", "type": "lookup", "entity": "message", "entityId": "${event.message_id}", "as": "m",
         "next": None},
    ], "read", ["mailbox.content.read"])
    world.publish(doc)
    run = world.wait_run(world.deliver(message()))
    assert [(e.outcome, e.reason) for e in world.effects(run.id)] == [("refused", "not_readable")]


def test_each_check_costs_at_most_two_statements(world: World) -> None:
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose")
    who = Principal(org_id=world.installed.org_id, butler_id=bid, sponsor_id=world.installed.user_id,
                    ceiling=Ceiling.from_capabilities([{"action": "send.propose", "resource": f"mailbox:{MAILBOX}"}]))
    with world.node.read() as conn:
        with world.node.meter.measure() as m:
            assert authority.effective_on_mailbox(conn, who, world.installed.mailbox_id, "send.propose") is None
        assert m.count == 2
        with world.node.meter.measure() as m:
            assert authority.effective_on_mailbox(conn, who, world.installed.mailbox_id,
                                                  "mailbox.content.read") == "capability_not_declared"
        assert m.count == 0
