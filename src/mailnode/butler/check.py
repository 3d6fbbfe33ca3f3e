"""The Butler checker: every reason a program may not be published, as readable findings.

Seed 003 ("The reserved nodes", "The budget"); spec/butler.md §2 (the phases and codes) and §10
(the source budget). ``check(source)`` takes the source as submitted (text or UTF-8 bytes) and
returns a ``CheckResult`` with ALL findings, never the first only, and never raises for any input.

Phases, in order; a phase that leaves nothing to read returns at once (marked *):

1. source*: ``E_BUTLER_SOURCE_TOO_LARGE`` (over ``BUTLER_SOURCE_MAX_BYTES``),
   ``E_BUTLER_SOURCE_NOT_JSON``, ``E_BUTLER_SOURCE_TOO_DEEP`` (over ``BUTLER_SOURCE_MAX_DEPTH``);
   ``E_BUTLER_DUPLICATE_KEY`` (a JSON object names a key twice) is reported and checking goes on;
2. envelope: ``E_BUTLER_MALFORMED`` per problem (a document that is not an object stops here*);
   ``E_BUTLER_TOO_MANY_NODES`` (over ``BUTLER_NODES_MAX``)*;
3. nodes: ``E_BUTLER_DUPLICATE_NODE_ID``, ``E_BUTLER_NO_ENTRY``, ``E_BUTLER_NODE_UNKNOWN``,
   ``E_BUTLER_NODE_RESERVED``, ``E_BUTLER_LOOP_UNBOUNDED``, ``E_BUTLER_NODE_UNKNOWN_PARAMETER``,
   ``E_BUTLER_NODE_MALFORMED``, ``E_BUTLER_SCHEMA_*`` (a ``validate`` schema outside the subset),
   ``E_BUTLER_NOT_CANONICAL`` (NaN, infinities, integers beyond 2^53 - 1: no RFC 8785 form);
4. graph: ``E_BUTLER_EDGE_DANGLING`` (an edge to no node, or to a node refused above),
   ``E_BUTLER_CYCLE`` (each cycle once, as a path);
5. capabilities: ``E_BUTLER_CAPABILITY_RESOURCE_UNKNOWN`` (not ``mailbox:<address>``),
   ``E_BUTLER_CAPABILITY_NOT_DECLARED`` (one per distinct requirement), ``E_BUTLER_CAPABILITY_UNUSED``
   (one per declared action nothing needs; only when every node was read);
6. price: ``E_BUTLER_UNAFFORDABLE`` (over ``pot``, the configured ``Settings.butler_run_pot``, the same
   figure the engine and the dry run meter against), on an acyclic graph.

Phase 3 also parses every expression (``expr.parse_predicate`` for ``guard.when`` and ``switch.on``,
``expr.parse_value`` for every other expression field); one that cannot parse whatever the run's
values is a finding with its ``E_BUTLER_EXPR_*`` code (an unsupported operator such as ``&&``, a
function call, two operators, an unknown root, an unterminated ``${``). What depends on the values
(a path that does not resolve, ``contains`` on the wrong types) still faults at run time. Unreachable
nodes are allowed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from mailnode import budgets
from mailnode.butler import canonical, capability, cost, expr, schema_subset
from mailnode.butler.ast import (
    LOOP_TYPES,
    NODE_MODELS,
    RESERVED_BECAUSE,
    ButlerDocument,
    Capability,
    Envelope,
    Node,
    RawNode,
    ValidateNode,
)

_CHECK = "mailnode butler check FILE"
_DOCS = "docs/butlers.md"
#: How much of an expression a finding quotes, in characters (a finding stays one readable line).
_SHOWN_MAX = 120
_RECIPIENT_KEYS = frozenset({"to", "cc", "bcc", "recipients", "recipient", "forwardTo", "replyTo", "from"})


@dataclass(frozen=True)
class Finding:
    """One reason the program may not be published.

    ``code`` is a stable ``E_BUTLER_*`` token; ``node`` the node id it concerns (None for the
    document); ``what`` happened, ``why`` it is refused, and the ``fix``.
    """

    code: str
    node: str | None
    what: str
    why: str
    fix: str

    def render(self) -> str:
        """The four-part text: ``CODE  what``, then ``node``, ``why`` and ``fix`` lines."""
        return "\n".join(
            [
                f"{self.code}  {self.what}",
                f"  node  {self.node if self.node is not None else '(document)'}",
                f"  why   {self.why}",
                f"  fix   {self.fix}",
            ]
        )

    def to_json(self) -> dict[str, Any]:
        """``{code, node, what, why, fix}`` for the API."""
        return {"code": self.code, "node": self.node, "what": self.what, "why": self.why, "fix": self.fix}


@dataclass(frozen=True)
class CheckResult:
    """What ``check`` found.

    ``ok`` is true exactly when ``findings`` is empty; then ``ast`` is the parsed document, ``price``
    its price, ``ast_json`` its RFC 8785 bytes and ``ast_sha256`` their digest. ``source_sha256`` is
    over the source as submitted (None only for text that cannot be UTF-8 encoded).
    """

    ok: bool
    findings: tuple[Finding, ...]
    ast: ButlerDocument | None = None
    price: cost.Price | None = None
    ast_json: bytes | None = None
    ast_sha256: str | None = None
    source_sha256: str | None = None

    def render(self) -> str:
        """Every finding in the four-part shape, separated by blank lines."""
        return "\n\n".join(f.render() for f in self.findings)


@dataclass
class _Run:
    """Findings collected by one ``check`` call."""

    findings: list[Finding] = field(default_factory=list)

    def add(self, code: str, node: str | None, what: str, why: str, fix: str) -> None:
        self.findings.append(Finding(code, node, what, why, fix))


def check(source: str | bytes, *, pot: int) -> CheckResult:
    """Check a Butler source; see the module docstring for the phases and codes. Never raises.

    ``pot`` is the per-run pot in SQL statements, ``Settings.butler_run_pot`` (default
    ``budgets.BUTLER_RUN_POT_STATEMENTS``): the one figure publication prices against and the engine
    and the dry run meter against, so a program the checker passes is not refused for its price at
    run start.
    """
    run = _Run()
    data = canonical.source_bytes(source)
    digest = None if data is None else canonical.sha256_hex(data)

    def done() -> CheckResult:
        return CheckResult(ok=False, findings=tuple(run.findings), source_sha256=digest)

    raw = _read_source(source, data, run)
    if raw is _UNREAD:
        return done()
    if not isinstance(raw, dict):
        run.add("E_BUTLER_MALFORMED", None, f"The document is a JSON {_json_kind(raw)}, not an object.",
                "A Butler is a JSON object with apiVersion, kind, metadata, capabilities, trigger, entry and nodes.",
                f"Start from an example in {_DOCS}.")
        return done()

    envelope_bad = _check_envelope(raw, run)
    nodes_value = raw.get("nodes")
    nodes_raw: list[Any] = nodes_value if isinstance(nodes_value, list) else []
    if len(nodes_raw) > budgets.BUTLER_NODES_MAX:
        run.add("E_BUTLER_TOO_MANY_NODES", None,
                f"BUTLER_NODES_MAX is {budgets.BUTLER_NODES_MAX}; this program has {len(nodes_raw)} nodes.",
                "The budget BUTLER_NODES_MAX bounds one program so that checking and pricing it stay instant.",
                f"Split the program into several Butlers of at most {budgets.BUTLER_NODES_MAX} nodes each.")
        return done()

    nodes, all_ids, every_node_read = _check_nodes(nodes_raw, run)
    entry = raw.get("entry")
    if "entry" not in envelope_bad and isinstance(entry, str) and entry not in all_ids:
        run.add("E_BUTLER_NO_ENTRY", None, f"entry names {entry!r}, which is not a node id.",
                "A run starts at the entry node, so it must exist.",
                f"Set entry to one of: {', '.join(sorted(all_ids)) or '(no nodes)'}.")
    dangling = _check_edges(nodes, all_ids, run)
    cyclic = _check_cycles(nodes, run)

    capabilities: list[Capability] | None = None
    if "capabilities" not in envelope_bad:
        capabilities = TypeAdapter(list[Capability]).validate_python(raw.get("capabilities"))
        _check_capabilities(capabilities, nodes, every_node_read and not dangling, run)

    priced: cost.Price | None = None
    if not cyclic:
        priced = cost.price(list(nodes.values()))
        _check_affordable(priced, pot, run)

    if run.findings:
        return done()
    document = ButlerDocument.model_validate(raw)
    document_json = document.to_json()
    ast_json = canonical.canonical_json(document_json)
    return CheckResult(
        ok=True,
        findings=(),
        ast=document,
        price=priced,
        ast_json=ast_json,
        ast_sha256=canonical.sha256_hex(ast_json),
        source_sha256=digest,
    )


# --- stored versions: checked once per (digest, checker code, pot) ----------------------------------

#: The modules whose code decides what ``check`` answers. Their bytes make ``CHECKER_VERSION``.
_DECIDING_MODULES = ("check.py", "ast.py", "cost.py", "expr.py", "schema_subset.py", "canonical.py",
                     "capability.py")


def _checker_version() -> str:
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in (*_DECIDING_MODULES, "../budgets.py"):
        digest.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    return digest.hexdigest()


#: A digest of this checker's code (and of ``budgets.py``, whose caps and prices it applies): a version
#: remembered as checked by other code is checked again.
CHECKER_VERSION = _checker_version()

_checked: OrderedDict[tuple[str, str, int], tuple[int, CheckResult]] = OrderedDict()
_checked_bytes = 0
_checked_lock = threading.Lock()


def check_stored(ast_json: str | bytes, *, pot: int) -> CheckResult:
    """``check(ast_json, pot=pot)`` for a stored version, remembered in this process.

    The key is ``(sha256 of ast_json as given, CHECKER_VERSION, pot)``: the same bytes checked by the
    same code against the same pot give the same answer, so a run start, a dry run or doctor over a
    version already checked skips the checker (issue 17 item 9: a deep program cost ~70 s at every
    delivery). Bounded by ``BUTLER_CHECKED_CACHE_MAX_BYTES`` of ``ast_json``, least recently used out.
    Never raises (as ``check``).
    """
    global _checked_bytes
    data = canonical.source_bytes(ast_json)
    if data is None:
        return check(ast_json, pot=pot)
    key = (canonical.sha256_hex(data), CHECKER_VERSION, pot)
    with _checked_lock:
        found = _checked.get(key)
        if found is not None:
            _checked.move_to_end(key)
            return found[1]
    result = check(ast_json, pot=pot)
    size = len(data)
    if size > budgets.BUTLER_CHECKED_CACHE_MAX_BYTES:
        return result
    with _checked_lock:
        if key not in _checked:
            _checked[key] = (size, result)
            _checked_bytes += size
        while _checked_bytes > budgets.BUTLER_CHECKED_CACHE_MAX_BYTES:
            _, (dropped, _) = _checked.popitem(last=False)
            _checked_bytes -= dropped
    return result


# --- phase 1: source --------------------------------------------------------------------------------

_UNREAD = object()


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _read_source(source: str | bytes, data: bytes | None, run: _Run) -> Any:
    fix_json = f"Correct the JSON (every Butler source is one JSON object), then run {_CHECK}."
    if data is None:
        run.add("E_BUTLER_SOURCE_NOT_JSON", None,
                "The source text holds lone surrogates and cannot be encoded as UTF-8.",
                "A Butler source is JSON, which is Unicode text exchanged as UTF-8 (RFC 8259 §8.1).", fix_json)
        return _UNREAD
    if len(data) > budgets.BUTLER_SOURCE_MAX_BYTES:
        run.add("E_BUTLER_SOURCE_TOO_LARGE", None,
                f"BUTLER_SOURCE_MAX_BYTES is {budgets.BUTLER_SOURCE_MAX_BYTES}; this source is {len(data)} bytes.",
                "The budget BUTLER_SOURCE_MAX_BYTES bounds what one version stores beside its canonical form.",
                f"Shorten the program to at most {budgets.BUTLER_SOURCE_MAX_BYTES} bytes, "
                "or split it into several Butlers.")
        return _UNREAD
    try:
        text = source if isinstance(source, str) else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        run.add("E_BUTLER_SOURCE_NOT_JSON", None, f"The source is not UTF-8: {exc.reason} at byte {exc.start}.",
                "A Butler source is JSON exchanged as UTF-8 (RFC 8259 §8.1).", fix_json)
        return _UNREAD
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                duplicates.append(key)
            out[key] = value
        return out

    try:
        raw = json.loads(text, object_pairs_hook=pairs)
    except RecursionError:
        _too_deep(run)
        return _UNREAD
    except ValueError as exc:
        # JSONDecodeError, and the int-from-string digit limit of Python (also a ValueError).
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        run.add("E_BUTLER_SOURCE_NOT_JSON", None, f"The source is not JSON: {message}{where}.",
                "A Butler source is one JSON document (RFC 8259).", fix_json)
        return _UNREAD
    if _depth_exceeds(raw, budgets.BUTLER_SOURCE_MAX_DEPTH):
        _too_deep(run)
        return _UNREAD
    for key in dict.fromkeys(duplicates):
        run.add("E_BUTLER_DUPLICATE_KEY", None, f"An object names the key {key!r} more than once.",
                "With a repeated key the program would mean whatever the last occurrence says, "
                "silently (RFC 7493 §2.3).",
                f"Keep one {key!r} in each object.")
    return raw


def _too_deep(run: _Run) -> None:
    run.add("E_BUTLER_SOURCE_TOO_DEEP", None,
            f"BUTLER_SOURCE_MAX_DEPTH is {budgets.BUTLER_SOURCE_MAX_DEPTH}; "
            "this source nests arrays and objects deeper.",
            "The budget BUTLER_SOURCE_MAX_DEPTH bounds nesting so that reading a program never exhausts the stack.",
            "Flatten the program (a validate schema is the usual culprit) "
            f"to at most {budgets.BUTLER_SOURCE_MAX_DEPTH} levels.")


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children: Iterable[Any] = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


# --- phase 2: envelope ------------------------------------------------------------------------------


def _where(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def _check_envelope(raw: dict[str, Any], run: _Run) -> set[str]:
    """Report every envelope problem; return the top-level keys that are unusable."""
    try:
        Envelope.model_validate(raw)
        return set()
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    bad: set[str] = set()
    for err in errors:
        loc = err["loc"]
        top = str(loc[0]) if loc else ""
        bad.add(top)
        node = f"nodes[{loc[1]}]" if top == "nodes" and len(loc) > 1 else None
        if err["type"] == "extra_forbidden":
            what = (f"The document has the undeclared key {top!r}." if len(loc) == 1
                    else f"{_where(loc)} is an undeclared key.")
            why = "Every object in a Butler is strict: a key the language does not declare is refused, never ignored."
        elif err["type"] == "missing":
            what = f"{_where(loc)} is missing."
            why = ("apiVersion, kind, metadata {name, owner}, capabilities (may be []), trigger {event, mailbox}, "
                   "entry and nodes are required.")
        else:
            what = f"{_where(loc)}: {err['msg']}."
            why = ("The envelope is apiVersion \"mailnode/v1\", kind \"Butler\", metadata, capabilities, trigger, "
                   "entry and nodes (at least one).")
        run.add("E_BUTLER_MALFORMED", node, what, why, f"Correct {_where(loc)} as {_DOCS}#the-document describes.")
    return bad


# --- phase 3: nodes ---------------------------------------------------------------------------------


def _check_nodes(nodes_raw: list[Any], run: _Run) -> tuple[dict[str, Node], set[str], bool]:
    """Classify every node. Returns (checkable nodes by id in document order, every id seen, all read)."""
    checkable: dict[str, Node] = {}
    seen: set[str] = set()
    every_read = True
    for index, item in enumerate(nodes_raw):
        if not isinstance(item, dict):
            every_read = False
            continue  # reported by the envelope
        try:
            head = RawNode.model_validate(item)
        except ValidationError as exc:
            every_read = False
            label = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else f"nodes[{index}]"
            for err in exc.errors(include_url=False):
                run.add("E_BUTLER_NODE_MALFORMED", label, f"nodes[{index}].{_where(err['loc'])}: {err['msg']}.",
                        "Every node has an id (lower-case letter, then letters, digits, _) and a type.",
                        f"Give nodes[{index}] a valid id and type.")
            continue
        if head.id in seen:
            every_read = False
            run.add("E_BUTLER_DUPLICATE_NODE_ID", head.id,
                    f"Two nodes are called {head.id!r} (the second is nodes[{index}]).",
                    "Edges name nodes by id, so an id must name one node.", f"Rename nodes[{index}].")
            continue
        seen.add(head.id)
        node = _classify(head, item, run)
        if node is None:
            every_read = False
        else:
            checkable[node.id] = node
    return checkable, seen, every_read


def _classify(head: RawNode, item: dict[str, Any], run: _Run) -> Node | None:
    shipped = ", ".join(NODE_MODELS)
    if head.type in RESERVED_BECAUSE:
        run.add("E_BUTLER_NODE_RESERVED", head.id,
                f"{head.type} is reserved in the language and refused at publication.",
                RESERVED_BECAUSE[head.type], f"Use one of the shipped node types: {shipped}.")
        return None
    model = NODE_MODELS.get(head.type)
    if model is None:
        close = difflib.get_close_matches(head.type, list(NODE_MODELS), n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        run.add("E_BUTLER_NODE_UNKNOWN", head.id, f"{head.type!r} is not a node type.{hint}",
                "Only the shipped node types run.", f"Use one of: {shipped}.")
        return None
    problems = 0
    if head.type in LOOP_TYPES and not _bounded(item.get("maxItems")):
        problems += 1
        run.add("E_BUTLER_LOOP_UNBOUNDED", head.id,
                f"{head.type} {head.id} has maxItems "
                f"{json.dumps(item.get('maxItems'), default=str) if 'maxItems' in item else '(absent)'}.",
                f"Every loop is bounded by an integer maxItems from 1 to {budgets.JSON_SAFE_INTEGER_MAX}; "
                "a longer collection fails the run.",
                f"Set maxItems on {head.id} to the most items this loop may ever see.")
    params = ", ".join(model.parameters())
    try:
        node = model.model_validate(item)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            loc = err["loc"]
            if loc and loc[0] == "maxItems" and head.type in LOOP_TYPES:
                continue  # reported as E_BUTLER_LOOP_UNBOUNDED
            problems += 1
            if err["type"] == "extra_forbidden":
                key = str(loc[-1])
                why = "Undeclared parameters are refused, never ignored."
                if key in _RECIPIENT_KEYS:
                    why += (" No node names a recipient: a reply goes to the delivery's return path, "
                            "derived by the node.")
                run.add("E_BUTLER_NODE_UNKNOWN_PARAMETER", head.id, f"{head.type} has no parameter {_where(loc)!r}.",
                        why, f"Use only the parameters of {head.type}: {params}.")
            else:
                what = (f"{head.type} {head.id} lacks {_where(loc)}." if err["type"] == "missing"
                        else f"{head.type} {head.id}: {_where(loc)}: {err['msg']}.")
                run.add("E_BUTLER_NODE_MALFORMED", head.id, what,
                        f"A {head.type} node takes exactly: {params} (see {_DOCS}#{head.type.replace('.', '')}).",
                        f"Correct {_where(loc)} on {head.id}.")
        return None
    if problems:
        return None
    if isinstance(node, ValidateNode):
        for p in schema_subset.problems(node.schema_):
            problems += 1
            run.add(p.code, node.id, f"The validate schema of {node.id} leaves the subset {p.sentence()}.",
                    "A keyword the validator does not enforce would pass everything while reading as a check.",
                    f"Use only the keywords listed in {_DOCS}#validate.")
    problems += _check_canonical(node.model_dump(mode="python", by_alias=True, exclude_none=True), "", node.id, run)
    if problems:
        return None
    _check_expressions(node, run)
    return node


def _check_expressions(node: Node, run: _Run) -> None:
    """Parse every expression of ``node``; each one that cannot parse is a finding with its ``E_BUTLER_EXPR_*``
    code (seed 003: a program that checks has expressions that parse, so its first run cannot fail on one)."""
    for param, text, predicate in node.expressions():
        try:
            (expr.parse_predicate if predicate else expr.parse_value)(text)
        except expr.ExprError as exc:
            shown = text if len(text) <= _SHOWN_MAX else text[:_SHOWN_MAX] + "..."
            run.add(exc.code, node.id, f"{node.id}.{param} {shown!r}: {exc.what}", exc.why,
                    f"Rewrite {node.id}.{param} in the language of {_DOCS}#expressions"
                    + (": a guard or switch compares once, with ==, != or contains; chain guards for more."
                       if predicate else ": literal text with ${path} where a value goes."))


def _bounded(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return isinstance(value, int) and 1 <= value <= budgets.JSON_SAFE_INTEGER_MAX


def _check_canonical(value: Any, prefix: str, node: str | None, run: _Run) -> int:
    """Report each value RFC 8785 refuses; returns how many findings were added."""
    try:
        canonical.canonical_json(value)
        return 0
    except canonical.NotCanonical as exc:
        offences = canonical.non_canonical_values(value) or [canonical.Offence("", exc.reason)]
    for o in offences:
        run.add("E_BUTLER_NOT_CANONICAL", node, f"{prefix}{o.pointer or ''} has no canonical JSON form: {o.reason}.",
                "A version is stored and fingerprinted as RFC 8785 canonical JSON, which has no NaN, no infinities "
                "and no integers beyond 2^53 - 1.",
                "Use a finite number within ±(2^53 - 1), or write the value as a string.")
    return len(offences)


# --- phase 4: graph ---------------------------------------------------------------------------------


def _check_edges(nodes: dict[str, Node], all_ids: set[str], run: _Run) -> bool:
    found = False
    for node in nodes.values():
        for label, target in node.edges():
            if target in nodes:
                continue
            found = True
            why = (f"{target!r} was refused above, so control could not pass to it."
                   if target in all_ids else "An edge must name a node of this program.")
            run.add("E_BUTLER_EDGE_DANGLING", node.id,
                    f"{node.id}.{label} names {target!r}, which is not a node that checks.",
                    why, f"Point {node.id}.{label} at an existing node, or set it to null to end the run there.")
    return found


def _check_cycles(nodes: dict[str, Node], run: _Run) -> bool:
    """Depth-first over every node; each back edge closes one cycle, reported once as a path."""
    succ = {n.id: [t for t in n.successors() if t in nodes] for n in nodes.values()}
    state: dict[str, int] = {}  # 1 on the stack, 2 finished
    reported: set[tuple[str, ...]] = set()
    for start in nodes:
        if start in state:
            continue
        path: list[str] = [start]
        iters = [iter(succ[start])]
        state[start] = 1
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
                continue
            mark = state.get(nxt)
            if mark == 1:
                cycle = path[path.index(nxt):]
                pivot = cycle.index(min(cycle))
                key = tuple(cycle[pivot:] + cycle[:pivot])
                if key not in reported:
                    reported.add(key)
                    shown = " -> ".join(cycle + [nxt])
                    run.add("E_BUTLER_CYCLE", nxt, shown,
                            "The graph must be acyclic: only a loop repeats, "
                            "and a loop's body returns to it without an edge.",
                            f"Break the edge {path[-1]} -> {nxt} (set it to null, or point it forward).")
            elif mark is None:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(succ[nxt]))
    return bool(reported)


# --- phase 5: capabilities --------------------------------------------------------------------------


def _check_capabilities(declared: list[Capability], nodes: dict[str, Node], complete: bool, run: _Run) -> None:
    for i, cap in enumerate(declared):
        if not capability.resource_has_mailbox_grain(cap.resource):
            run.add("E_BUTLER_CAPABILITY_RESOURCE_UNKNOWN", None,
                    f"capabilities[{i}] names the resource {cap.resource!r}.",
                    "A capability is granted on one mailbox, written mailbox:<address>; no other grain exists.",
                    f"Write capabilities[{i}].resource as mailbox:<address>, e.g. mailbox:support@example.com.")
    actions = {c.action for c in declared}
    needs: dict[frozenset[str], list[str]] = {}
    for node in nodes.values():
        req = capability.requirement(node)
        if req is not None:
            needs.setdefault(req, []).append(node.id)
    for req, users in needs.items():
        if req & actions:
            continue
        named = " or ".join(sorted(req))
        others = f" and {len(users) - 1} more" if len(users) > 1 else ""
        run.add("E_BUTLER_CAPABILITY_NOT_DECLARED", users[0],
                f"{users[0]}{others} need {named}, which capabilities does not declare.",
                "A Butler can do only what its document declares; the declared actions are its ceiling.",
                f"Add {{\"action\": \"{min(req)}\", \"resource\": \"mailbox:<address>\"}} to capabilities.")
    if not complete:
        return  # a node that did not check may be the one that uses an action
    used = {a for req in needs for a in req}
    for action in sorted(actions - used):
        run.add("E_BUTLER_CAPABILITY_UNUSED", None, f"capabilities declares {action}, which no node needs.",
                "The declared actions must equal exactly what the graph needs, "
                "so the ceiling says what the program does.",
                f"Remove the {action} entries from capabilities.")


# --- phase 6: price ---------------------------------------------------------------------------------


#: How a finding names the pot: the setting and its environment variable (docs/configuration.md).
_POT = "The run pot (butler_run_pot, MAILNODE_BUTLER_RUN_POT)"


def _check_affordable(priced: cost.Price, pot: int, run: _Run) -> None:
    if priced.total <= pot:
        return
    amount = f"at least {priced.total}" if priced.saturated else str(priced.total)
    loop = priced.dearest_loop
    if loop is None:
        run.add("E_BUTLER_UNAFFORDABLE", None,
                f"{_POT} is {pot}; this program is priced at {amount} statements.",
                "The run pot bounds the SQL statements one run may spend, so a run cannot die half-done.",
                "Take effect nodes out of the program, or split it into several Butlers.")
        return
    fit = cost.largest_fitting_max_items(priced, loop.id, pot)
    ask = (f"Lower {loop.id}.maxItems from {loop.max_items} to {fit} (the largest that fits), "
           "or move effects out of its body."
           if fit is not None else f"Move effects out of {loop.id}'s body: even maxItems 1 does not fit.")
    run.add("E_BUTLER_UNAFFORDABLE", loop.id,
            f"{_POT} is {pot}; this program is priced at {amount} statements, "
            f"{loop.total} of them in {loop.kind} {loop.id} ({loop.max_items} x {loop.per_item} per item).",
            "The run pot bounds the SQL statements one run may spend; a loop multiplies its body by maxItems.",
            ask)
