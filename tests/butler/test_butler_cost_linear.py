"""The price is linear in the program (issue 17 item 9) and still means what spec/butler.md §3 says.

A program of 997 nested ``foreach`` took 92 s to check: a reachability search per loop, then for each
body node a product over every other enclosing loop. The price is now one topological pass; these tests
hold it to the spec's definition (a direct, quadratic reference implementation below) on random acyclic
programs, and count its work on nested programs so a return to super-linear work fails deterministically.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from mailnode import budgets
from mailnode.butler import cost
from mailnode.butler.ast import NODE_MODELS, ForeachNode, MapNode, Node
from mailnode.butler.stuck import wait_bound_seconds

CAP = budgets.JSON_SAFE_INTEGER_MAX


def _reference(nodes: Sequence[Node]) -> dict[str, Any]:
    """spec/butler.md §3 read literally: body(L) = everything reachable from L.body; multiplier = product
    of the bounds of the loops whose body holds the node; saturating at 2^53 - 1."""
    succ = {n.id: n.successors() for n in nodes}
    kind = {n.id: n.type for n in nodes}

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        stack = [start]
        while stack:
            x = stack.pop()
            if x in seen or x not in succ:
                continue
            seen.add(x)
            stack.extend(succ[x])
        return seen

    bodies = {n.id: reach(n.body) for n in nodes if isinstance(n, (MapNode, ForeachNode))}
    bound = {n.id: n.max_items for n in nodes if isinstance(n, (MapNode, ForeachNode))}
    enclosing = {n.id: [lid for lid, body in bodies.items() if n.id in body] for n in nodes}

    def prod(ids: list[str]) -> int:
        out = 1
        for i in ids:
            out *= bound[i]
        return out

    totals = {n.id: cost.node_price(n.type) * prod(enclosing[n.id]) for n in nodes}
    loops = {}
    for lid, body in bodies.items():
        loops[lid] = (min(sum(totals[m] for m in body), CAP),
                      min(sum(cost.node_price(kind[m]) * prod([x for x in enclosing[m] if x != lid])
                              for m in body), CAP),
                      bool(enclosing[lid]))
    return {"total": min(sum(totals.values()), CAP), "nodes": {k: min(v, CAP) for k, v in totals.items()},
            "multipliers": {n.id: min(prod(enclosing[n.id]), CAP) for n in nodes}, "loops": loops,
            "outside": min(sum(t for k, t in totals.items() if not enclosing[k]), CAP)}


def _random_program(rng: random.Random, size: int) -> list[Node]:
    """A random acyclic program: edges only go forward in document order."""
    types = ["foreach", "map", "guard", "join", "lookup", "draft", "mail.send.propose", "case.close", "wait"]
    raw: list[dict[str, Any]] = []
    for i in range(size):
        t = rng.choice(types)

        def later(i: int = i) -> str | None:
            return f"n{rng.randrange(i + 1, size)}" if i + 1 < size and rng.random() < 0.8 else None

        node: dict[str, Any] = {"id": f"n{i}", "type": t}
        if t in ("foreach", "map"):
            if i + 1 >= size:
                t = node["type"] = "join"
            else:
                node.update(over="${event.x}", maxItems=rng.choice([1, 2, 3, 50, 2**40]), body=later() or f"n{i + 1}",
                            next=later(), **{"as": f"a{i}"})
                if t == "map":
                    node["collectAs"] = f"c{i}"
        if node["type"] == "guard":
            node.update(when="event.x", then=later(), otherwise=later())
        elif node["type"] == "join":
            node["next"] = later()
        elif t == "wait":
            node.update(seconds=rng.choice([1, 60, 86400]), next=later())
        elif t == "lookup":
            node.update(entity="case", entityId="${event.case_id}", next=later(), **{"as": f"l{i}"})
        elif t == "draft":
            node.update(mailboxId="${event.mailbox_id}", subject="s", body="b", next=later(), **{"as": f"d{i}"})
        elif t == "mail.send.propose":
            node.update(draft="${steps.d}", next=later())
        elif t == "case.close":
            node.update(caseId="${event.case_id}", next=later())
        raw.append(node)
    return [NODE_MODELS[n["type"]].model_validate(n) for n in raw]


@pytest.mark.parametrize("seed", range(60))
def test_the_linear_price_equals_the_spec_on_random_acyclic_programs(seed: int) -> None:
    rng = random.Random(seed)
    nodes = _random_program(rng, rng.randrange(1, 40))
    want = _reference(nodes)
    got = cost.price(nodes)
    assert got.total == want["total"] and got.saturated == (want["total"] >= CAP)
    assert got.outside_loops == want["outside"]
    assert {p.id: p.total for p in got.nodes} == want["nodes"]
    assert {p.id: p.multiplier for p in got.nodes} == want["multipliers"] == cost.multipliers(nodes)
    assert {lp.id: (lp.total, lp.per_item, lp.nested) for lp in got.loops} == want["loops"]
    waits = sum(min(int(n.seconds) * m, CAP) for n in nodes if n.type == "wait"
                for m in [want["multipliers"][n.id]])
    assert wait_bound_seconds(nodes) == min(waits, CAP)


def _nested(depth: int) -> list[Node]:
    raw = [{"id": f"l{i}", "type": "foreach", "over": "${event.x}", "as": f"x{i}", "maxItems": 2,
            "body": f"l{i + 1}" if i + 1 < depth else "d"} for i in range(depth)]
    raw.append({"id": "d", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "s", "body": "b",
                "as": "dr"})
    return [NODE_MODELS[n["type"]].model_validate(n) for n in raw]


def test_pricing_nested_loops_does_work_linear_in_their_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    # Count the set bits walked (the only per-pair work): the old price did depth^3 products.
    calls = {"bits": 0}
    real = cost._set_bits

    def counted(bits: int) -> list[int]:
        out = real(bits)
        calls["bits"] += len(out) + 1
        return out

    monkeypatch.setattr(cost, "_set_bits", counted)
    work = {}
    for depth in (100, 200, 400):
        calls["bits"] = 0
        p = cost.price(_nested(depth))
        assert p.saturated and p.loops[0].max_items == 2
        work[depth] = calls["bits"]
    assert work[400] <= 2 * work[200] + 8 and work[200] <= 2 * work[100] + 8, work
    assert work[400] <= 3 * 400, work
