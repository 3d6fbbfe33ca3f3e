"""Benchmark: the Butler checker on the largest programs its caps allow (issue 17 item 9).

Each shape is built at ``BUTLER_NODES_MAX`` nodes and within ``BUTLER_SOURCE_MAX_BYTES``, checked
clean (or, for the unaffordable shape, with exactly its one finding), and timed as the median of
``--runs`` calls of ``check``. The bar: every shape under one second. Shapes:

- ``nested``: BUTLER_NODES_MAX - 1 nested ``foreach`` (maxItems 1) around one ``draft`` (the
  issue's 997-loop program took 92 s before the price was made linear);
- ``nested_effects``: half the nodes nested loops, the other half a chain of effect nodes in the
  innermost body (the most (loop, effect) pairs the node cap allows);
- ``diamonds``: a chain of guards whose two branches join again, inside one loop (every join merges);
- ``wide``: BUTLER_NODES_MAX drafts in a chain, each body padded so the source nears the byte cap;
- ``unaffordable``: ``nested`` with maxItems 2, refused with E_BUTLER_UNAFFORDABLE (saturated price).

Also times ``check_stored`` on an already-checked version (the run-start path after the first run).

    .venv/bin/python bench/butler_check.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from mailnode import budgets
from mailnode.butler.check import check, check_stored

MAILBOX = "support@example.com"
POT = budgets.BUTLER_RUN_POT_STATEMENTS
N = budgets.BUTLER_NODES_MAX


def _doc(nodes: list[dict[str, Any]], entry: str) -> str:
    return json.dumps({"apiVersion": "mailnode/v1", "kind": "Butler",
                       "metadata": {"name": "bench", "owner": "team:bench"},
                       "capabilities": [{"action": "send.propose", "resource": f"mailbox:{MAILBOX}"}],
                       "trigger": {"event": "mail.received", "mailbox": MAILBOX}, "entry": entry, "nodes": nodes})


def _draft(node_id: str, nxt: str | None, body: str = "Thanks for ${event.subject}.") -> dict[str, Any]:
    return {"id": node_id, "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "Re: ${event.subject}",
            "body": body, "as": f"v_{node_id}", "next": nxt}


def _loops(count: int, inner: str, bound: int = 1) -> list[dict[str, Any]]:
    return [{"id": f"l{i}", "type": "foreach", "over": "${event.items}", "as": f"x{i}", "maxItems": bound,
             "body": f"l{i + 1}" if i + 1 < count else inner, "next": None} for i in range(count)]


def nested(bound: int = 1) -> str:
    return _doc([*_loops(N - 1, "d", bound), _draft("d", None)], "l0")


def nested_effects() -> str:
    half = N // 2
    effects = [_draft(f"d{i}", f"d{i + 1}" if i + 1 < N - half else None) for i in range(N - half)]
    return _doc([*_loops(half, "d0"), *effects], "l0")


def diamonds() -> str:
    nodes: list[dict[str, Any]] = [{"id": "loop", "type": "foreach", "over": "${event.items}", "as": "x",
                                    "maxItems": 2, "body": "g0", "next": None}]
    count = (N - 1) // 4
    for i in range(count):
        nxt = f"g{i + 1}" if i + 1 < count else None
        nodes += [{"id": f"g{i}", "type": "guard", "when": "event.subject contains 'a'", "then": f"a{i}",
                   "otherwise": f"b{i}"},
                  {"id": f"a{i}", "type": "join", "next": f"j{i}"},
                  _draft(f"b{i}", f"j{i}") if i == 0 else {"id": f"b{i}", "type": "join", "next": f"j{i}"},
                  {"id": f"j{i}", "type": "join", "next": nxt}]
    return _doc(nodes, "loop")


def wide() -> str:
    # Each draft ~ (cap / N) bytes, under the cap with room for the envelope; not affordable past
    # the pot, so the chain is cut to what the pot buys and the rest are pure transforms.
    pad = "x" * (budgets.BUTLER_SOURCE_MAX_BYTES // N - 260)
    affordable = POT // budgets.BUTLER_PRICE_DRAFT_STATEMENTS
    nodes: list[dict[str, Any]] = []
    for i in range(N):
        nxt = f"n{i + 1}" if i + 1 < N else None
        if i < affordable:
            nodes.append(_draft(f"n{i}", nxt, body=f"{pad} ${{event.subject}}"))
        else:
            nodes.append({"id": f"n{i}", "type": "transform", "as": f"t{i}", "value": f"{pad} ${{event.subject}}",
                          "next": nxt})
    return _doc(nodes, "n0")


def timed(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    shapes = {"nested": (nested(), None), "nested_effects": (nested_effects(), None), "diamonds": (diamonds(), None),
              "wide": (wide(), None), "unaffordable": (nested(2), "E_BUTLER_UNAFFORDABLE")}
    worst = 0.0
    print(f"{'shape':16} {'nodes':>6} {'bytes':>9} {'median s':>9}  result")
    for name, (source, finding) in shapes.items():
        result = check(source, pot=POT)
        codes = [f.code for f in result.findings]
        assert len(source.encode()) <= budgets.BUTLER_SOURCE_MAX_BYTES, name
        assert codes == ([finding] if finding else []), (name, codes[:3])
        seconds = timed(lambda source=source: check(source, pot=POT), args.runs)
        worst = max(worst, seconds)
        nodes = len(json.loads(source)["nodes"])
        shown = "ok" if result.ok else codes[0]
        print(f"{name:16} {nodes:>6} {len(source.encode()):>9} {seconds:>9.3f}  {shown}")
    stored = check(nested(), pot=POT).ast_json
    assert stored is not None
    check_stored(stored, pot=POT)
    print("check_stored of an already-checked version: "
          f"{timed(lambda: check_stored(stored, pot=POT), args.runs):.6f} s")
    print(f"worst shape: {worst:.3f} s ({'under' if worst < 1 else 'OVER'} the one-second bar)")


if __name__ == "__main__":
    main()
