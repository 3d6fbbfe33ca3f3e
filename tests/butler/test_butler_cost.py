"""Pricing arithmetic on worked examples, with the prices in budgets.py."""

from __future__ import annotations

from typing import Any

from mailnode import budgets
from mailnode.butler.ast import NODE_MODELS, Node
from mailnode.butler.cost import PUBLICATION_PRICES, RUNTIME_RESERVATIONS, largest_fitting_max_items, price

from .conftest import SEND_CAP, codes, program, run_check

LOOKUP = budgets.BUTLER_PRICE_LOOKUP_STATEMENTS
ASSIGN = budgets.BUTLER_PRICE_CASE_ASSIGN_STATEMENTS
DRAFT = budgets.BUTLER_PRICE_DRAFT_STATEMENTS
SEND = budgets.BUTLER_PRICE_SEND_PROPOSE_STATEMENTS
POT = budgets.BUTLER_RUN_POT_STATEMENTS


def nodes(*raw: dict[str, Any]) -> list[Node]:
    return [NODE_MODELS[r["type"]].model_validate(r) for r in raw]


def loop(node_id: str, bound: int, body: str, nxt: str | None = None) -> dict[str, Any]:
    return {"id": node_id, "type": "foreach", "over": "${event.x}", "as": f"{node_id}_item", "maxItems": bound,
            "body": body, "next": nxt}


def send(node_id: str, nxt: str | None = None) -> dict[str, Any]:
    return {"id": node_id, "type": "mail.send.propose", "draft": "${steps.d.id}", "next": nxt}


def lookup(node_id: str, nxt: str | None = None) -> dict[str, Any]:
    return {"id": node_id, "type": "lookup", "entity": "case", "entityId": "${event.case_id}", "as": "row", "next": nxt}


def test_every_effect_node_has_a_price_and_a_reservation_and_pure_nodes_cost_nothing() -> None:
    effects = {"lookup", "case.assign", "case.close", "draft", "mail.send.propose"}
    assert set(PUBLICATION_PRICES) == set(RUNTIME_RESERVATIONS) == effects
    assert all(RUNTIME_RESERVATIONS[t] >= PUBLICATION_PRICES[t] for t in effects)
    for node_type in set(NODE_MODELS) - effects:
        assert PUBLICATION_PRICES.get(node_type, 0) == 0


# The reference's worked case (spec/butler.md §3): effects outside loops 8 + 10 + 20 = 38, then a
# foreach of 499 sends at 20 each: 38 + 9980 = 10018 > 10000, so "lower to 498".
WORKED = (
    {"id": "start", "type": "guard", "when": "event.reply_refusal == null", "then": "take", "otherwise": "skip"},
    {"id": "take", "type": "case.assign", "caseId": "${event.case_id}", "assignee": "${butler.id}", "next": "d"},
    {"id": "d", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "s", "body": "b", "as": "d",
     "next": "p"},
    send("p", "each"),
    loop("each", 499, "again", "end"),
    send("again"),
    {"id": "end", "type": "join", "next": None},
    {"id": "skip", "type": "stop", "reason": "refused"},
)


def test_the_worked_example_prices_and_suggests_the_bound() -> None:
    p = price(nodes(*WORKED))
    assert p.outside_loops == ASSIGN + DRAFT + SEND == 38
    assert p.total == 38 + 499 * SEND == 10018
    (each,) = p.loops
    assert (each.id, each.max_items, each.per_item, each.total, each.nested, each.dearest) == (
        "each", 499, SEND, 499 * SEND, False, "again")
    assert largest_fitting_max_items(p, "each", POT) == (POT - 38) // SEND == 498


def test_the_checker_refuses_the_worked_example_with_that_bound() -> None:
    result = run_check(program(*WORKED, capabilities=[SEND_CAP]))
    assert codes(result) == ["E_BUTLER_UNAFFORDABLE"]
    assert result.findings[0].node == "each" and "from 499 to 498" in result.findings[0].fix
    fixed = [dict(n, maxItems=498) if n["id"] == "each" else n for n in WORKED]
    assert run_check(program(*fixed, capabilities=[SEND_CAP])).ok


def test_nested_loops_multiply() -> None:
    p = price(nodes(loop("outer", 10, "inner"), loop("inner", 5, "read"), lookup("read")))
    by_id = {n.id: n for n in p.nodes}
    assert by_id["read"].multiplier == 50 and by_id["read"].total == 50 * LOOKUP
    assert by_id["inner"].multiplier == 10 and by_id["inner"].total == 0
    assert p.total == 200 and p.outside_loops == 0
    outer, inner = p.loops
    assert (outer.id, outer.total, outer.per_item, outer.nested) == ("outer", 200, 5 * LOOKUP, False)
    assert (inner.id, inner.total, inner.per_item, inner.nested) == ("inner", 200, 10 * LOOKUP, True)


def test_the_suggested_bound_is_the_largest_that_fits_for_nested_loops_too() -> None:
    raw = [loop("outer", 100, "inner"), loop("inner", 50, "write"), send("write"), lookup("before", "outer")]
    p = price(nodes(*raw))
    assert p.total == LOOKUP + 100 * 50 * SEND
    for loop_id in ("outer", "inner"):
        k = largest_fitting_max_items(p, loop_id, POT)
        assert k is not None
        at = [dict(n, maxItems=k) if n["id"] == loop_id else n for n in raw]
        over = [dict(n, maxItems=k + 1) if n["id"] == loop_id else n for n in raw]
        assert price(nodes(*at)).total <= POT < price(nodes(*over)).total


def test_a_node_reachable_from_a_body_and_the_main_flow_is_priced_at_the_loop_multiplier() -> None:
    p = price(nodes(loop("each", 3, "shared", "shared"), lookup("shared")))
    assert p.total == 3 * LOOKUP


def test_a_loop_of_pure_nodes_costs_nothing_at_any_bound() -> None:
    raw = [loop("each", budgets.JSON_SAFE_INTEGER_MAX, "t"), {"id": "t", "type": "transform", "as": "x", "value": "v"}]
    p = price(nodes(*raw))
    assert p.total == 0 and largest_fitting_max_items(p, "each", POT) is None


def test_prices_saturate_and_say_at_least() -> None:
    big = budgets.JSON_SAFE_INTEGER_MAX
    raw = [loop("outer", big, "inner"), loop("inner", big, "write"), send("write")]
    p = price(nodes(*raw))
    assert p.saturated and p.total == budgets.JSON_SAFE_INTEGER_MAX
    assert largest_fitting_max_items(p, "outer", POT) is None
    result = run_check(program(*raw, capabilities=[SEND_CAP]))
    assert codes(result) == ["E_BUTLER_UNAFFORDABLE"] and "at least" in result.findings[0].what


def test_a_program_over_the_pot_with_no_loop_is_refused_without_a_loop() -> None:
    count = POT // SEND + 1
    raw = [send(f"s{i}", f"s{i + 1}" if i + 1 < count else None) for i in range(count)]
    result = run_check(program(*raw, capabilities=[SEND_CAP]))
    assert codes(result) == ["E_BUTLER_UNAFFORDABLE"] and result.findings[0].node is None


def test_when_even_one_item_does_not_fit_there_is_no_bound_to_suggest() -> None:
    count = POT // SEND
    raw = [send(f"s{i}", f"s{i + 1}" if i + 1 < count else "each") for i in range(count)]
    raw += [loop("each", 2, "more"), send("more")]
    p = price(nodes(*raw))
    assert p.total > POT and largest_fitting_max_items(p, "each", POT) is None
    assert "even maxItems 1" in run_check(program(*raw, capabilities=[SEND_CAP])).findings[0].fix
