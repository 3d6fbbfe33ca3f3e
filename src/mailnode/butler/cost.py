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


@dataclass(frozen=True)
class _Enclosure:
    """Which loops' bodies reach each node, and the exact (unsaturated) product of their bounds.

    ``loops`` are the loop ids in document order; ``bits[n]`` has bit ``i`` set when ``loops[i]``'s body
    reaches node ``n``; ``product[n]`` is the product of those loops' ``maxItems`` (1 when none).
    """

    loops: tuple[str, ...]
    bound: tuple[int, ...]
    bits: dict[str, int]
    product: dict[str, int]


def _set_bits(bits: int) -> list[int]:
    out: list[int] = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


def _enclosure(nodes: Sequence[Node]) -> _Enclosure:
    """One pass in topological order over an acyclic graph: O(nodes + edges) big-integer ORs.

    A node's set of enclosing loops is the union over its predecessors of theirs, plus the loop itself
    along a loop's ``body`` edge: exactly "every loop whose body reaches it" (spec/butler.md §3), without
    a reachability search per loop (which made a program of 997 nested loops cost 92 s to check).
    Edges to ids that are not among ``nodes`` are ignored. The product is carried along a node's
    predecessors while they agree, and recomputed from the bits only where differing sets join.
    """
    ids = {n.id for n in nodes}
    loop_ids = tuple(n.id for n in nodes if isinstance(n, (MapNode, ForeachNode)))
    loop_index = {loop_id: i for i, loop_id in enumerate(loop_ids)}
    bit_of = {loop_id: 1 << i for i, loop_id in enumerate(loop_ids)}
    bound = tuple(int(n.max_items) for n in nodes if isinstance(n, (MapNode, ForeachNode)))
    succ: dict[str, list[tuple[str, bool]]] = {}
    indegree = {n.id: 0 for n in nodes}
    for n in nodes:
        body = n.body if isinstance(n, (MapNode, ForeachNode)) else None
        out = [(t, label == "body" and t == body) for label, t in n.edges() if t in ids]
        succ[n.id] = out
        for t, _ in out:
            indegree[t] += 1
    # Every contribution a node receives: (bits, product) from each incoming edge.
    incoming: dict[str, list[tuple[int, int]]] = {n.id: [] for n in nodes}
    bits: dict[str, int] = {}
    product: dict[str, int] = {}
    ready = [n.id for n in nodes if indegree[n.id] == 0]
    ready.reverse()
    while ready:
        nid = ready.pop()
        contributions = incoming.pop(nid)
        if not contributions:
            b, prod = 0, 1
        else:
            b, prod = contributions[0]
            for other_bits, _ in contributions[1:]:
                b |= other_bits
            if any(other_bits != b for other_bits, _ in contributions):
                prod = 1
                for i in _set_bits(b):
                    prod *= bound[i]
        bits[nid], product[nid] = b, prod
        for t, is_body in succ[nid]:
            tb, tp = b, prod
            if is_body and not b & bit_of[nid]:
                tb, tp = b | bit_of[nid], prod * bound[loop_index[nid]]
            incoming[t].append((tb, tp))
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
    if len(bits) != len(indegree):
        raise ValueError("cost: the graph has a cycle; only a checked (acyclic) program is priced")
    return _Enclosure(loop_ids, bound, bits, product)


def multipliers(nodes: Sequence[Node]) -> dict[str, int]:
    """For each node id, the product of the ``maxItems`` of every loop whose body reaches it (1 if none),
    saturating at ``JSON_SAFE_INTEGER_MAX``. ``nodes`` must be acyclic (a checked program). Linear."""
    enc = _enclosure(nodes)
    return {nid: min(p, _CAP) for nid, p in enc.product.items()}


def price(nodes: Sequence[Node]) -> Price:
    """Price a program's nodes (unique ids, no cycles) in SQL statements. See the module docstring.

    Linear in the program: one topological pass (``_enclosure``), then each effect node adds its share
    to each loop enclosing it. Sums and products are exact integers, saturated once at the end, which
    is what saturating at every step gives (both are monotone).
    """
    enc = _enclosure(nodes)
    kind = {n.id: n.type for n in nodes}
    order = {n.id: i for i, n in enumerate(nodes)}
    node_prices: list[NodePrice] = []
    total = 0
    outside = 0
    loop_total = [0] * len(enc.loops)
    per_item = [0] * len(enc.loops)
    dearest: list[NodePrice | None] = [None] * len(enc.loops)
    for n in nodes:
        own = node_price(n.type)
        exact = own * enc.product[n.id]
        p = NodePrice(n.id, n.type, own, min(enc.product[n.id], _CAP), min(exact, _CAP))
        node_prices.append(p)
        total += exact
        if not enc.bits[n.id]:
            outside += exact
        if not own:
            continue
        for i in _set_bits(enc.bits[n.id]):
            loop_total[i] += exact
            per_item[i] += exact // enc.bound[i]
            best = dearest[i]
            if p.total > (best.total if best else 0):
                dearest[i] = p
    loops = [
        LoopPrice(
            id=loop_id,
            kind=kind[loop_id],
            max_items=enc.bound[i],
            per_item=min(per_item[i], _CAP),
            total=min(loop_total[i], _CAP),
            nested=bool(enc.bits[loop_id]),
            dearest=best.id if (best := dearest[i]) is not None else None,
        )
        for i, loop_id in enumerate(enc.loops)
    ]
    loops.sort(key=lambda lp: (-lp.total, order[lp.id]))
    return Price(
        total=min(total, _CAP),
        outside_loops=min(outside, _CAP),
        saturated=total >= _CAP,
        loops=tuple(loops),
        nodes=tuple(node_prices),
    )


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
