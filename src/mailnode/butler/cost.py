"""The price of a Butler program in SQL statements, computed before publication.

Seed 003 "The budget, and where the checker and a real run disagree"; spec/butler.md §3. The
currency is the SQL statement (what ``db.meter.StatementMeter`` counts). Each effect node type has a
publication price (``PUBLICATION_PRICES``) and a runtime reservation (``RUNTIME_RESERVATIONS``), both
from ``budgets.py``; pure nodes cost 0. A loop multiplies its body by ``maxItems``; a node inside
nested loops is multiplied by every enclosing bound. Sums and products saturate at
``JSON_SAFE_INTEGER_MAX`` (the price is then "at least" that). A program whose total exceeds the pot
(``Settings.butler_run_pot``, the checker's ``pot``) is refused by the checker with the dearest loop named and the
largest ``maxItems`` that would fit (``largest_fitting_max_items``).

``price`` is pure and expects an acyclic graph of shipped nodes (the checker prices only such).
A loop's body is every node reachable from its ``body`` edge, so a node also reachable from the main
flow is priced at the loop's multiplier: deliberately over-priced, never under-priced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mailnode import budgets
from mailnode.butler.ast import ForeachNode, MapNode, Node

#: What publication charges per effect node type (spec/butler.md §3, ``butler.step_cost_max_*``).
PUBLICATION_PRICES: dict[str, int] = {
    "lookup": budgets.BUTLER_PRICE_LOOKUP_STATEMENTS,
    "case.assign": budgets.BUTLER_PRICE_CASE_ASSIGN_STATEMENTS,
    "case.close": budgets.BUTLER_PRICE_CASE_CLOSE_STATEMENTS,
    "draft": budgets.BUTLER_PRICE_DRAFT_STATEMENTS,
    "mail.send.propose": budgets.BUTLER_PRICE_SEND_PROPOSE_STATEMENTS,
}

#: What the runtime guard reserves before performing each effect (spec/butler.md §3, ``butler.run_cost_max_*``).
RUNTIME_RESERVATIONS: dict[str, int] = {
    "lookup": budgets.BUTLER_RESERVE_LOOKUP_STATEMENTS,
    "case.assign": budgets.BUTLER_RESERVE_CASE_ASSIGN_STATEMENTS,
    "case.close": budgets.BUTLER_RESERVE_CASE_CLOSE_STATEMENTS,
    "draft": budgets.BUTLER_RESERVE_DRAFT_STATEMENTS,
    "mail.send.propose": budgets.BUTLER_RESERVE_SEND_PROPOSE_STATEMENTS,
}

_CAP = budgets.JSON_SAFE_INTEGER_MAX


def _mul(a: int, b: int) -> int:
    return min(a * b, _CAP)


def _add(a: int, b: int) -> int:
    return min(a + b, _CAP)


def affordable(spent: int, node_type: str, pot: int) -> bool:
    """The runtime guard before one effect, shared by the engine and the dry run (seed 003 "The budget").

    ``spent`` is every statement the run has spent or is known to spend before this effect (the live
    engine: stored spend + this invocation's unstored and fresh statements; the dry run: the engine's
    fixed cost before the walk + the reservations so far). True when the node type's reservation and
    the close (``BUTLER_RUN_CLOSE_STATEMENTS``) still fit in ``pot``, so a run never spends past it.
    """
    return spent + RUNTIME_RESERVATIONS[node_type] + budgets.BUTLER_RUN_CLOSE_STATEMENTS <= pot


def node_price(node_type: str) -> int:
    """The publication price of one visit to a node of ``node_type`` (0 for pure nodes)."""
    return PUBLICATION_PRICES.get(node_type, 0)


@dataclass(frozen=True)
class NodePrice:
    """One node's share: its own price, the product of enclosing loop bounds, and their product."""

    id: str
    type: str
    price: int
    multiplier: int
    total: int


@dataclass(frozen=True)
class LoopPrice:
    """One loop's share of the total.

    ``per_item`` is what one unit of this loop's ``maxItems`` adds to the program's total (the
    body's cost for one item, already multiplied by enclosing loops and by loops nested inside);
    ``total`` is the sum over the body's nodes; ``nested`` is true when another loop encloses this
    one; ``dearest`` is the costliest body node (None when the body has no effect).
    """

    id: str
    kind: str
    max_items: int
    per_item: int
    total: int
    nested: bool
    dearest: str | None


@dataclass(frozen=True)
class Price:
    """A program's price in SQL statements.

    ``total`` saturates at ``JSON_SAFE_INTEGER_MAX`` (``saturated`` is then true and the figure is a
    floor); ``outside_loops`` is the part in no loop body; ``loops`` is sorted dearest first (ties in
    document order); ``nodes`` is per node, in document order.
    """

    total: int
    outside_loops: int
    saturated: bool
    loops: tuple[LoopPrice, ...]
    nodes: tuple[NodePrice, ...]

    @property
    def dearest_loop(self) -> LoopPrice | None:
        """The loop with the largest total, if any loop costs anything."""
        return self.loops[0] if self.loops and self.loops[0].total > 0 else None


def _reachable(start: str, succ: dict[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        n = stack.pop()
        if n in seen or n not in succ:
            continue
        seen.add(n)
        stack.extend(succ[n])
    return seen


def loop_bodies(nodes: Sequence[Node]) -> dict[str, set[str]]:
    """For each loop node id, the ids reachable from its ``body`` edge (nested loops' bodies included)."""
    succ = {n.id: n.successors() for n in nodes}
    return {
        n.id: _reachable(n.body, succ)
        for n in nodes
        if isinstance(n, (MapNode, ForeachNode))
    }


def price(nodes: Sequence[Node]) -> Price:
    """Price a program's nodes (unique ids, no cycles) in SQL statements. See the module docstring."""
    bodies = loop_bodies(nodes)
    bound = {n.id: n.max_items for n in nodes if isinstance(n, (MapNode, ForeachNode))}
    kind = {n.id: n.type for n in nodes}
    enclosing: dict[str, list[str]] = {n.id: [] for n in nodes}
    for loop_id, body in bodies.items():
        for member in body:
            enclosing[member].append(loop_id)

    node_prices: list[NodePrice] = []
    total = 0
    outside = 0
    for n in nodes:
        mult = 1
        for loop_id in enclosing[n.id]:
            mult = _mul(mult, bound[loop_id])
        own = node_price(n.type)
        t = _mul(own, mult)
        node_prices.append(NodePrice(n.id, n.type, own, mult, t))
        total = _add(total, t)
        if not enclosing[n.id]:
            outside = _add(outside, t)
    by_id = {p.id: p for p in node_prices}

    order = {n.id: i for i, n in enumerate(nodes)}
    loops: list[LoopPrice] = []
    for loop_id, body in bodies.items():
        loop_total = 0
        per_item = 0
        dearest: NodePrice | None = None
        for member in sorted(body, key=order.__getitem__):
            p = by_id[member]
            loop_total = _add(loop_total, p.total)
            per_item = _add(per_item, _mul(p.price, _product_except(enclosing[member], loop_id, bound)))
            if p.total > (dearest.total if dearest else 0):
                dearest = p
        loops.append(
            LoopPrice(
                id=loop_id,
                kind=kind[loop_id],
                max_items=bound[loop_id],
                per_item=per_item,
                total=loop_total,
                nested=bool(enclosing[loop_id]),
                dearest=dearest.id if dearest else None,
            )
        )
    loops.sort(key=lambda lp: (-lp.total, order[lp.id]))
    return Price(
        total=total,
        outside_loops=outside,
        saturated=total >= _CAP,
        loops=tuple(loops),
        nodes=tuple(node_prices),
    )


def _product_except(loop_ids: list[str], skip: str, bound: dict[str, int]) -> int:
    out = 1
    for loop_id in loop_ids:
        if loop_id != skip:
            out = _mul(out, bound[loop_id])
    return out


def largest_fitting_max_items(p: Price, loop_id: str, pot: int) -> int | None:
    """The largest ``maxItems`` for ``loop_id`` that brings the whole program within ``pot``.

    The total is linear in one loop's bound: ``total(m) = (total - loop.total) + m * loop.per_item``.
    So the answer is ``floor((pot - rest) / per_item)``; None when the loop body costs nothing (its
    bound does not matter) or when even ``maxItems = 1`` does not fit. A saturated price has no exact
    answer and also gives None.
    """
    loop = next((lp for lp in p.loops if lp.id == loop_id), None)
    if loop is None or loop.per_item == 0 or p.saturated:
        return None
    rest = p.total - loop.total
    room = pot - rest
    if room < loop.per_item:
        return None
    return room // loop.per_item
