"""What the Butler pages show, decided without I/O: a Butler's state in words, the checker's findings placed
beside the node they concern, the line of each node in the source, the price against the pot and the diff a
publication would make.

Pure functions over the shapes the services return (``butler.lifecycle.list_butlers`` / ``butler_json``,
``butler.check.CheckResult``); the routes in ``web.butlers``, ``web.butler_editor`` and ``web.butler_run_page``
do the reading and writing around them. Nothing here decides a rule the services decide.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from mailnode import budgets
from mailnode.butler import check, record


@dataclass(frozen=True)
class StateWord:
    """One fact of a Butler's state: ``key`` (live, no_live, draft, paused, disabled), its words and the
    reason behind it (the pause's reason token or the disable reason; None when there is none)."""

    key: str
    words: str
    reason: str | None = None


def state_words(item: dict[str, Any]) -> list[StateWord]:
    """A listed Butler's state (``lifecycle.list_butlers``' item, or ``butler_json`` with ``pause``), in the
    order a reader wants it: live version or none, a draft not yet published, paused and why, disabled and why.

    "Live" says which version is published, never that the Butler runs: a pause or a disable is listed beside it.
    """
    out: list[StateWord] = []
    live = item.get("live")
    if live is not None:
        out.append(StateWord("live", f"Live: version {live['version']}"))
    else:
        out.append(StateWord("no_live", "No live version: it answers no mail"))
    if item.get("draft") is not None:
        out.append(StateWord("draft", "A draft is not yet published"))
    pause = item.get("pause")
    if pause is not None:
        out.append(StateWord("paused", "Paused by the node: no new runs until an administrator resumes it",
                             str(pause.get("reason") or "")))
    disabled = item.get("disabled")
    if disabled is not None:
        out.append(StateWord("disabled", "Disabled: no new runs until an administrator enables it",
                             str(disabled.get("reason") or "")))
    return out


@dataclass
class NodeFindings:
    """One row of the editor's outline: a node id (None: the document itself), its type when the source says
    it, the 1-based line of its ``"id"`` in the source (None when not found) and the findings about it."""

    node: str | None
    type: str | None
    line: int | None
    findings: list[check.Finding] = field(default_factory=list)


def _outline_nodes(source: str) -> list[tuple[str, str | None]]:
    """The ``(id, type)`` of each node the source names, in document order; nothing when it is not JSON."""
    try:
        raw = json.loads(source)
    except ValueError:
        return []
    nodes = raw.get("nodes") if isinstance(raw, dict) else None
    out: list[tuple[str, str | None]] = []
    for n in nodes if isinstance(nodes, list) else []:
        if isinstance(n, dict) and isinstance(n.get("id"), str):
            kind = n.get("type")
            out.append((n["id"], kind if isinstance(kind, str) else None))
    return out


def node_line(source: str, node_id: str) -> int | None:
    """The 1-based line where ``"id": "<node_id>"`` first stands in ``source``, or None."""
    found = re.search(r'"id"\s*:\s*' + re.escape(json.dumps(node_id)), source)
    return source.count("\n", 0, found.start()) + 1 if found else None


def outline(source: str, findings: tuple[check.Finding, ...] | list[check.Finding]) -> list[NodeFindings]:
    """The document row first, then every node of the source in order, each with the findings about it.

    A finding naming a node the source does not list (a source that is not JSON, say) gets its own row, so no
    finding is ever dropped.
    """
    rows: dict[str | None, NodeFindings] = {None: NodeFindings(None, None, None)}
    for node_id, kind in _outline_nodes(source):
        rows.setdefault(node_id, NodeFindings(node_id, kind, node_line(source, node_id)))
    for f in findings:
        if f.node not in rows:
            rows[f.node] = NodeFindings(f.node, None, node_line(source, f.node) if f.node else None)
        rows[f.node].findings.append(f)
    return list(rows.values())


@dataclass(frozen=True)
class PriceReading:
    """The price against the pot, in SQL statements: the checker's price, the engine's fixed cost, the pot, and
    whether it fits (``total`` None when the document does not check, so nothing can be priced honestly)."""

    total: int | None
    engine_fixed: int
    pot: int

    @property
    def fits(self) -> bool | None:
        """True/False when priced; None when there is no price."""
        return None if self.total is None else self.total + self.engine_fixed <= self.pot


def price_reading(result: check.CheckResult, pot: int) -> PriceReading:
    """The price of a checked source against ``pot`` (``Settings.butler_run_pot``); no price unless it checks."""
    total = result.price.total if result.ok and result.price is not None else None
    return PriceReading(total, budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS, pot)


def canonical_lines(source: str | None, pot: int) -> list[str]:
    """The source's canonical document (RFC 8785 via the checker), pretty-printed one key a line, sorted (so the
    diff is of meaning, not of spacing); the source's own lines when it does not check; nothing for None."""
    if source is None:
        return []
    result = check.check(source, pot=pot)
    text = source
    if result.ok and result.ast_json is not None:
        text = json.dumps(json.loads(result.ast_json), indent=2, sort_keys=True, ensure_ascii=False)
    return text.splitlines()


def document_diff(live: str | None, draft: str | None, pot: int) -> list[str]:
    """The unified diff from the live version's canonical document to the draft's (lines without newlines);
    against no live version every line is an addition."""
    return list(difflib.unified_diff(canonical_lines(live, pot), canonical_lines(draft, pot),
                                     fromfile="live", tofile="draft", lineterm="",
                                     n=budgets.WEB_BUTLER_DIFF_CONTEXT_LINES))


@dataclass(frozen=True)
class ReasonWords:
    """A run's or an effect's reason token with the API's why and fix, when the API has words for it."""

    code: str
    why: str | None
    fix: str | None


def reason_words(reason: str | None) -> ReasonWords | None:
    """The words ``butler.record.REASON_WORDS`` gives a reason token (the API's own), or the bare token."""
    if not reason:
        return None
    words = record.REASON_WORDS.get(reason)
    return ReasonWords(reason, words[0] if words else None, words[1] if words else None)
