"""The walk: one Butler program over one run's state, with every effect behind an interface.

Seed 003 "The walk is one function, shared with the dry run" and "Terminal states"; spec/butler.md
§1.4, §6.2, §6.3. ``walk(document, state, effects, trigger_event)`` is a plain coroutine over the AST:
it imports no database, no DBOS and no clock, so the live engine (``engine``) and the dry run (the next
issue) walk the same switch, the same expressions, the same loop bounds and the same affordability
question. Everything a walk can cause arrives through ``Effects``:

- ``affordable(call)``: may this effect be performed within the run's pot (the engine's metering);
- ``perform(call)``: do the effect, returning its ``EffectResult`` (the live engine: one durable step
  whose writes and effect row commit together);
- ``wait(step, seconds)``: a ``wait`` node (live: a durable sleep);
- ``await_release(call, result)``: a send sealed ``awaiting/butler_release_required``; True when a
  person released it, False when the gate timed out.

Pure nodes (guard, switch, map, foreach, join, wait's arithmetic, stop, transform, validate) run in
memory and recompute identically on every replay, because the expression language is pure. Effect
parameters are resolved here, and a ``draft``'s one recipient is derived here (``parent``), so a dry
run reports exactly what a live run would do. Steps are named ``<node id>#<visit>``; effects are
numbered ``seq`` 1, 2, ... in walk order.

Terminal states and reasons (spec/butler.md §6.2): ``finished`` (ran out of nodes, reason None),
``stopped`` (a ``stop`` node's reason, or ``release_timed_out``), ``refused`` (``validate_failed``,
``budget_exhausted``), ``failed`` (an expression's or a reply's ``E_BUTLER_*`` code,
``loop_bound_exceeded``, ``edge_to_nothing``, ``E_BUTLER_LOOKUP_NOT_AN_ID``,
``E_BUTLER_LOOP_OVER_NOT_A_LIST``, ``E_BUTLER_MAP_COLLECTS_NOTHING``, ``E_BUTLER_PARAMETER_NOT_TEXT``).
A loop over more items than its ``maxItems`` fails the run before processing any item. An effect's
refusal (a held case, a policy, a missing authority) is recorded and the walk carries on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mailnode.butler import expr, parent, schema_subset
from mailnode.butler.ast import (
    ButlerDocument,
    CaseAssignNode,
    CaseCloseNode,
    DraftNode,
    ForeachNode,
    GuardNode,
    JoinNode,
    LookupNode,
    MapNode,
    Node,
    SendProposeNode,
    StopNode,
    SwitchNode,
    TransformNode,
    ValidateNode,
    WaitNode,
)
from mailnode.ids import is_id

#: The node types that touch storage; each visit is one effect.
EFFECT_TYPES = ("lookup", "case.assign", "case.close", "draft", "mail.send.propose")
#: Effect outcomes that succeed: ``ok``, and the dry run's ``would`` (the effect a live run would have
#: performed). Both bind ``steps.<as>`` and count as effects; the walk treats them alike, so a dry and a
#: live walk over the same facts take the same path.
SUCCEEDED = ("ok", "would")
#: The id prefix a ``lookup`` expects for each entity.
ENTITY_PREFIX = {"message": "msg", "conversation": "cnv", "case": "cas", "mailbox": "mbx", "draft": "dft"}


@dataclass(frozen=True)
class EffectCall:
    """One effect the walk asks for.

    ``seq`` is its 1-based position among the run's effects; ``step`` is ``<node id>#<visit>``;
    ``params`` are the resolved values (ids, text, the derived ``recipient`` of a draft).
    """

    seq: int
    step: str
    node_id: str
    node_type: str
    params: dict[str, Any]


@dataclass(frozen=True)
class EffectResult:
    """What an effect did: ``outcome`` ``ok`` | ``refused`` | ``failed`` (a dry run's ``would``), a ``reason`` token or
    code, the ``subject`` acted on, the value bound under ``steps.<as>`` (``binding``), and ``parks`` when a
    send waits for a person's release."""

    outcome: str
    reason: str | None = None
    subject: str | None = None
    binding: Any = None
    parks: bool = False


class Effects(Protocol):
    """Everything a walk can cause (see the module docstring)."""

    def affordable(self, call: EffectCall) -> bool:
        """True when the effect's reservation fits in what is left of the run's pot."""

    async def perform(self, call: EffectCall) -> EffectResult:
        """Perform (or, in a dry run, report) one effect."""

    async def wait(self, step: str, seconds: int) -> None:
        """A ``wait`` node of ``seconds``."""

    async def await_release(self, call: EffectCall, result: EffectResult) -> bool:
        """Wait for a person to release the send ``result.subject``; False on timeout."""


@dataclass(frozen=True)
class Verdict:
    """One effect as the walk saw it: the call and its result, in order."""

    call: EffectCall
    result: EffectResult


@dataclass
class WalkResult:
    """How a walk ended: terminal ``state`` and ``reason``, what it counted, and what it touched.

    ``nodes_executed`` counts node visits (a loop node once, its body per item); ``effects`` counts
    ``ok`` effects and ``refusals`` refused ones; ``visited`` lists node ids in visit order; ``detail``
    says why a run that did not finish ended: ``node`` (the node being run), the fault's ``what`` and, for
    the program's own faults, its ``why``, ``fix`` and ``expression`` (issue 17 item 11).
    """

    state: str
    reason: str | None
    nodes_executed: int = 0
    effects: int = 0
    refusals: int = 0
    visited: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


class _End(Exception):
    """Unwinds the walk (from inside any loop body) to its terminal state."""

    def __init__(self, state: str, reason: str | None, **detail: Any) -> None:
        super().__init__(state, reason)
        self.state = state
        self.reason = reason
        self.detail = detail


def _fault(code: str, what: str) -> _End:
    return _End("failed", code, what=what)


@dataclass
class _Walk:
    nodes: dict[str, Node]
    state: dict[str, Any]
    effects: Effects
    trigger_event: str
    result: WalkResult
    visits: dict[str, int] = field(default_factory=dict)
    seq: int = 0
    #: The node being run (a loop node again once its body returned), named by a fault's detail.
    current: str | None = None

    async def chain(self, start: str | None) -> None:
        """Run nodes from ``start`` until an edge is null (return) or a terminal is reached (raise)."""
        current = start
        while current is not None:
            node = self.nodes.get(current)
            if node is None:
                raise _End("failed", "edge_to_nothing", what=f"An edge names {current!r}, which is not a node.")
            self.visits[node.id] = self.visits.get(node.id, 0) + 1
            self.result.nodes_executed += 1
            self.result.visited.append(node.id)
            self.current = node.id
            current = await self.visit(node, f"{node.id}#{self.visits[node.id]}")

    async def visit(self, node: Node, step: str) -> str | None:
        """Run one node; return the next node id (None: this chain ends)."""
        if isinstance(node, GuardNode):
            return node.then if expr.truthy(expr.evaluate_predicate(node.when, self.state)) else node.otherwise
        if isinstance(node, SwitchNode):
            key = expr.switch_key(expr.evaluate_predicate(node.on, self.state), node.on)
            return next((c.next for c in node.cases if c.equals == key), node.default)
        if isinstance(node, (MapNode, ForeachNode)):
            await self.loop(node)
            return node.next
        if isinstance(node, JoinNode):
            return node.next
        if isinstance(node, WaitNode):
            await self.effects.wait(step, node.seconds)
            return node.next
        if isinstance(node, StopNode):
            raise _End("stopped", node.reason)
        if isinstance(node, TransformNode):
            self.state["steps"][node.as_] = expr.evaluate(node.value, self.state)
            return node.next
        if isinstance(node, ValidateNode):
            problems = schema_subset.validate(expr.evaluate(node.value, self.state), node.schema_)
            if problems:
                raise _End("refused", "validate_failed", node=node.id, problems=problems)
            return node.next
        return await self.effect(node, step)

    async def loop(self, node: MapNode | ForeachNode) -> None:
        items = expr.evaluate(node.over, self.state)
        if not isinstance(items, list):
            raise _fault("E_BUTLER_LOOP_OVER_NOT_A_LIST", f"{node.id}.over is {type(items).__name__}, not a list.")
        if len(items) > node.max_items:
            raise _End("failed", "loop_bound_exceeded", node=node.id, items=len(items), max_items=node.max_items,
                       what=f"{node.id} was given {len(items)} items; its maxItems is {node.max_items}. "
                            "Nothing was processed.")
        steps = self.state["steps"]
        collected: list[Any] = []
        for item in items:
            steps[node.as_] = item
            if isinstance(node, MapNode):
                steps.pop(node.collect_as, None)
            await self.chain(node.body)
            self.current = node.id
            if isinstance(node, MapNode):
                if node.collect_as not in steps:
                    raise _fault("E_BUTLER_MAP_COLLECTS_NOTHING",
                                 f"The body of {node.id} bound nothing under steps.{node.collect_as}.")
                collected.append(steps[node.collect_as])
        if isinstance(node, MapNode):
            steps[node.collect_as] = collected

    def _id(self, text: str, prefix: str | tuple[str, ...], what: str) -> str:
        value = expr.evaluate(text, self.state)
        prefixes = (prefix,) if isinstance(prefix, str) else prefix
        if not any(is_id(value, p) for p in prefixes):
            raise _fault("E_BUTLER_LOOKUP_NOT_AN_ID",
                         f"{what} is {value!r}, not a {' or '.join(p + '_' for p in prefixes)} id.")
        return str(value)

    def _text(self, text: str, what: str) -> str:
        value = expr.evaluate(text, self.state)
        if not isinstance(value, str):
            raise _fault("E_BUTLER_PARAMETER_NOT_TEXT", f"{what} is {type(value).__name__}, not text.")
        return value

    def params(self, node: Node) -> dict[str, Any]:
        """The resolved parameters of an effect node (faults end the run before anything is done)."""
        if isinstance(node, LookupNode):
            return {"entity": node.entity,
                    "entity_id": self._id(node.entity_id, ENTITY_PREFIX[node.entity], f"{node.id}.entityId")}
        if isinstance(node, CaseAssignNode):
            return {"case_id": self._id(node.case_id, "cas", f"{node.id}.caseId"),
                    "assignee_id": self._id(node.assignee, ("usr", "btl"), f"{node.id}.assignee")}
        if isinstance(node, CaseCloseNode):
            return {"case_id": self._id(node.case_id, "cas", f"{node.id}.caseId")}
        if isinstance(node, DraftNode):
            out: dict[str, Any] = {
                "mailbox_id": self._id(node.mailbox_id, "mbx", f"{node.id}.mailboxId"),
                "subject": self._text(node.subject, f"{node.id}.subject"),
                "body": self._text(node.body, f"{node.id}.body"),
                "in_reply_to_message_id": (self._id(node.in_reply_to, "msg", f"{node.id}.inReplyTo")
                                           if node.in_reply_to is not None else None),
            }
            out["recipient"] = parent.reply_recipient(self.trigger_event, self.state["event"])
            return out
        if isinstance(node, SendProposeNode):
            value = expr.evaluate(node.draft, self.state)
            if isinstance(value, Mapping):
                value = value.get("id")
            if not is_id(value, "dft"):
                raise _fault("E_BUTLER_LOOKUP_NOT_AN_ID", f"{node.id}.draft is {value!r}, not a draft or a dft_ id.")
            return {"draft_id": str(value)}
        raise _End("failed", "reserved_node_reached_the_walk", what=f"{node.type} is not a node the engine runs.")

    async def effect(self, node: Node, step: str) -> str | None:
        params = self.params(node)
        self.seq += 1
        call = EffectCall(seq=self.seq, step=step, node_id=node.id, node_type=node.type, params=params)
        if not self.effects.affordable(call):
            raise _End("refused", "budget_exhausted", node=node.id, step=step)
        result = await self.effects.perform(call)
        self.result.verdicts.append(Verdict(call, result))
        if result.outcome in SUCCEEDED:
            self.result.effects += 1
        elif result.outcome == "refused":
            self.result.refusals += 1
        binds = getattr(node, "as_", None)
        if binds is not None and result.outcome in SUCCEEDED:
            self.state["steps"][binds] = result.binding
        if result.parks and not await self.effects.await_release(call, result):
            raise _End("stopped", "release_timed_out", node=node.id, send_id=result.subject)
        return getattr(node, "next", None)


def initial_state(facts: Mapping[str, Any], butler_id: str, version_id: str, name: str) -> dict[str, Any]:
    """The state a run starts with: ``{event: facts, butler: {id, versionId, name}, steps: {}}``."""
    return {"event": dict(facts), "butler": {"id": butler_id, "versionId": version_id, "name": name}, "steps": {}}


async def walk(document: ButlerDocument, state: dict[str, Any], effects: Effects, trigger_event: str) -> WalkResult:
    """Walk ``document`` from its entry over ``state`` (mutated: ``steps`` fills up) and end it.

    Returns the ``WalkResult``; a fault of the program (an expression, a reply with nowhere safe to
    go, a loop bound) is a ``failed`` result, never an exception. Exceptions raised by ``effects``
    propagate: they are the engine's faults, not the program's.
    """
    result = WalkResult(state="finished", reason=None)
    w = _Walk(nodes={n.id: n for n in document.nodes}, state=state, effects=effects, trigger_event=trigger_event,
              result=result)
    try:
        await w.chain(document.entry)
    except _End as end:
        result.state, result.reason = end.state, end.reason
        result.detail = {"node": w.current, **end.detail} if w.current is not None else dict(end.detail)
    except (expr.ExprError, parent.ReplyRefused, schema_subset.SchemaSubsetError) as exc:
        # The program's own faults: the run ends failed with the code, the node and the four-part error.
        result.state, result.reason = "failed", exc.code
        result.detail = {"node": w.current, "what": exc.what, "why": exc.why, "fix": exc.fix, **exc.detail}
    return result
