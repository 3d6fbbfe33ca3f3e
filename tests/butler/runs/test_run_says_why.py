"""Issue 17 item 11: a failed run says why in its record: the node, the expression and the four-part error,
through ``GET /api/butler-runs/{id}`` and the inspection, not only in the server log."""

from __future__ import annotations

from tests.butler.runs.conftest import World, message, program


def test_a_failed_run_records_its_node_expression_and_four_part_error(world: World) -> None:
    # event.dmarc is a word, so the guard's path walks past a scalar at run time.
    doc = program([
        {"id": "strict", "type": "guard", "when": "${event.dmarc.policy}", "then": None, "otherwise": None},
    ], "strict")
    world.publish(doc)
    run = world.wait_run(world.deliver(message()))
    assert (run.state, run.outcome_reason) == ("failed", "E_BUTLER_EXPR_UNRESOLVED")
    shown = world.api.get(f"/api/butler-runs/{run.id}", headers=world.admin).json()["butler_run"]
    detail = shown["outcome_detail"]
    assert detail["code"] == "E_BUTLER_EXPR_UNRESOLVED"
    assert detail["node"] == "strict"
    assert detail["expression"] == "${event.dmarc.policy}"
    assert "does not resolve" in detail["what"] and detail["why"] and detail["fix"]
    inspected = world.api.get(f"/api/butler-runs/{run.id}/inspect", headers=world.admin).json()["inspection"]
    assert inspected["run"]["outcome_detail"] == detail


def test_a_fault_of_the_walk_itself_says_which_node_and_how_to_fix_it(world: World) -> None:
    # event.attachments is a count, so the loop has no list to walk.
    loop = [{"id": "each", "type": "foreach", "over": "${event.attachments}", "as": "a", "maxItems": 1,
             "body": "look", "next": None},
            {"id": "look", "type": "lookup", "entity": "message", "entityId": "${event.message_id}", "as": "m",
             "next": None}]
    bid, _ = world.publish(program(loop, "each", ["mailbox.content.read"]))
    world.grant(bid, "mailbox.content.read")
    run = world.wait_run(world.deliver(message()))
    assert (run.state, run.outcome_reason) == ("failed", "E_BUTLER_LOOP_OVER_NOT_A_LIST")
    detail = world.api.get(f"/api/butler-runs/{run.id}", headers=world.admin).json()["butler_run"]["outcome_detail"]
    assert detail == {"code": "E_BUTLER_LOOP_OVER_NOT_A_LIST", "node": "each", "what": "each.over is int, not a list.",
                      "why": "A loop's over must evaluate to a list.", "fix": "Point over at a list."}
