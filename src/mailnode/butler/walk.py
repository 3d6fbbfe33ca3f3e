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
parameters are resolved here, and a ``draft``'s one recipient is derived here
(``outbound.butler_recipient``), so a dry run reports exactly what a live run would do. Steps are named
``<node id>#<visit>``; effects are numbered ``seq`` 1, 2, ... in walk order.

Terminal states and reasons (spec/butler.md §6.2; ``states.RunState``): ``finished`` (ran out of nodes,
reason None), ``stopped`` (a ``stop`` node's reason, or ``release_timed_out``), ``refused``
(``validate_failed``, ``budget_exhausted``), ``failed`` (an expression's or a reply's ``E_BUTLER_*`` code,
``loop_bound_exceeded``, ``edge_to_nothing``, ``reserved_node_reached_the_walk``,
``E_BUTLER_LOOKUP_NOT_AN_ID``, ``E_BUTLER_LOOP_OVER_NOT_A_LIST``, ``E_BUTLER_MAP_COLLECTS_NOTHING``,
``E_BUTLER_PARAMETER_NOT_TEXT``). The walk's own reasons are ``states.WalkReason``, each ending the run in
the state ``states.STATE_OF_REASON`` gives it; a ``stop`` node's reason and an expression's code are the
program's.
A loop over more items than its ``maxItems`` fails the run before processing any item. An effect's
refusal (a held case, a policy, a missing authority) is recorded and the walk carries on.

Dispatch is by node type through two tables, ``PURE_NODES`` (the node runs in memory) and
``EFFECT_PARAMS`` (the node is one effect; the table resolves its parameters). Together they cover
every type in ``ast.NODE_MODELS`` (a test checks); a node whose type is in neither ends the run
``failed/reserved_node_reached_the_walk`` with nothing performed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mailnode.butler import expr, schema_subset
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
from mailnode.outbound import butler_recipient
from mailnode.vocabulary.run_states import STATE_OF_REASON, RunState, WalkReason

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

    ``reason`` is a ``WalkReason`` value, a ``stop`` node's reason or a fault's ``E_BUTLER_*`` code, as
    plain text (None when the run finished).

    ``nodes_executed`` counts node visits (a loop node once, its body per item); ``effects`` counts
    ``ok`` effects and ``refusals`` refused ones; ``visited`` lists node ids in visit order; ``detail``
    says why a run that did not finish ended: ``node`` (the node being run), the fault's ``what`` and, for
    the program's own faults, its ``why``, ``fix`` and ``expression`` (issue 17 item 11).
    """

    state: RunState
    reason: str | None
    nodes_executed: int = 0
    effects: int = 0
    refusals: int = 0
    visited: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


class _End(Exception):
    """Unwinds the walk (from inside any loop body) to its terminal state.

    ``reason`` is kept as plain text: it leaves the walk for the run record and DBOS's step records.
    """

    def __init__(self, state: RunState, reason: str | None, **detail: Any) -> None:
        super().__init__(state, reason)
        self.state = state
        self.reason = None if reason is None else str(reason)
        self.detail = detail


def _end(reason: WalkReason, **detail: Any) -> _End:
    """The walk's own end for ``reason``, in the state ``STATE_OF_REASON`` gives it."""
    return _End(STATE_OF_REASON[reason], reason, **detail)


def _fault(reason: WalkReason, what: str) -> _End:
    return _end(reason, what=what)


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
                raise _end(WalkReason.EDGE_TO_NOTHING, what=f"An edge names {current!r}, which is not a node.")
            self.visits[node.id] = self.visits.get(node.id, 0) + 1
            self.result.nodes_executed += 1
            self.result.visited.append(node.id)
            self.current = node.id
            current = await self.visit(node, f"{node.id}#{self.visits[node.id]}")

    async def visit(self, node: Node, step: str) -> str | None:
        """Run one node by its type's entry in ``PURE_NODES`` or ``EFFECT_PARAMS``; return the next node id
        (None: this chain ends). A type in neither table fails the run before anything is performed."""
        pure = PURE_NODES.get(node.type)
        if pure is not None:
            return await pure(self, node, step)
        resolve = EFFECT_PARAMS.get(node.type)
        if resolve is None:
            raise _end(WalkReason.RESERVED_NODE_REACHED_THE_WALK,
                       what=f"{node.type} is not a node the engine runs.")
        return await self.effect(node, step, resolve(self, node))

    # --- pure nodes: each returns the next node id ---

    async def guard(self, node: GuardNode, step: str) -> str | None:
        """``guard``: ``then`` when the predicate holds, else ``otherwise``."""
        return node.then if expr.truthy(expr.evaluate_predicate(node.when, self.state)) else node.otherwise

    async def switch(self, node: SwitchNode, step: str) -> str | None:
        """``switch``: the first case equal to the ``on`` value, else ``default``."""
        key = expr.switch_key(expr.evaluate_predicate(node.on, self.state), node.on)
        return next((c.next for c in node.cases if c.equals == key), node.default)

    async def each(self, node: MapNode | ForeachNode, step: str) -> str | None:
        """``map`` and ``foreach``: run the body per item (``loop``), then go on."""
        await self.loop(node)
        return node.next

    async def join(self, node: JoinNode, step: str) -> str | None:
        """``join``: a merge point; go on."""
        return node.next

    async def wait(self, node: WaitNode, step: str) -> str | None:
        """``wait``: the effects' sleep of ``seconds``, then go on."""
        await self.effects.wait(step, node.seconds)
        return node.next

    async def stop(self, node: StopNode, step: str) -> str | None:
        """``stop``: end the run ``stopped`` with the program's own reason."""
        raise _End(RunState.STOPPED, node.reason)

    async def transform(self, node: TransformNode, step: str) -> str | None:
        """``transform``: bind ``steps.<as>``, then go on."""
        self.state["steps"][node.as_] = expr.evaluate(node.value, self.state)
        return node.next

    async def validate(self, node: ValidateNode, step: str) -> str | None:
        """``validate``: refuse the run unless the value satisfies the schema."""
        problems = schema_subset.validate(expr.evaluate(node.value, self.state), node.schema_)
        if problems:
            raise _end(WalkReason.VALIDATE_FAILED, node=node.id, problems=problems)
        return node.next

    async def loop(self, node: MapNode | ForeachNode) -> None:
        items = expr.evaluate(node.over, self.state)
        if not isinstance(items, list):
            raise _fault(WalkReason.LOOP_OVER_NOT_A_LIST, f"{node.id}.over is {type(items).__name__}, not a list.")
        if len(items) > node.max_items:
            raise _end(WalkReason.LOOP_BOUND_EXCEEDED, node=node.id, items=len(items), max_items=node.max_items,
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
                    raise _fault(WalkReason.MAP_COLLECTS_NOTHING,
                                 f"The body of {node.id} bound nothing under steps.{node.collect_as}.")
                collected.append(steps[node.collect_as])
        if isinstance(node, MapNode):
            steps[node.collect_as] = collected

    def _id(self, text: str, prefix: str | tuple[str, ...], what: str) -> str:
        value = expr.evaluate(text, self.state)
        prefixes = (prefix,) if isinstance(prefix, str) else prefix
        if not any(is_id(value, p) for p in prefixes):
            raise _fault(WalkReason.LOOKUP_NOT_AN_ID,
                         f"{what} is {value!r}, not a {' or '.join(p + '_' for p in prefixes)} id.")
        return str(value)

    def _text(self, text: str, what: str) -> str:
        value = expr.evaluate(text, self.state)
        if not isinstance(value, str):
            raise _fault(WalkReason.PARAMETER_NOT_TEXT, f"{what} is {type(value).__name__}, not text.")
        return value

    # --- effect nodes: each returns its resolved parameters (faults end the run before anything is done) ---

    def lookup(self, node: LookupNode) -> dict[str, Any]:
        """``lookup``: the entity and its id."""
        return {"entity": node.entity,
                "entity_id": self._id(node.entity_id, ENTITY_PREFIX[node.entity], f"{node.id}.entityId")}

    def case_assign(self, node: CaseAssignNode) -> dict[str, Any]:
        """``case.assign``: the case and the assignee (a person or a Butler)."""
        return {"case_id": self._id(node.case_id, "cas", f"{node.id}.caseId"),
                "assignee_id": self._id(node.assignee, ("usr", "btl"), f"{node.id}.assignee")}

    def case_close(self, node: CaseCloseNode) -> dict[str, Any]:
        """``case.close``: the case."""
        return {"case_id": self._id(node.case_id, "cas", f"{node.id}.caseId")}

    def draft(self, node: DraftNode) -> dict[str, Any]:
        """``draft``: mailbox, subject, body, the message replied to, and the derived one recipient."""
        out: dict[str, Any] = {
            "mailbox_id": self._id(node.mailbox_id, "mbx", f"{node.id}.mailboxId"),
            "subject": self._text(node.subject, f"{node.id}.subject"),
            "body": self._text(node.body, f"{node.id}.body"),
            "in_reply_to_message_id": (self._id(node.in_reply_to, "msg", f"{node.id}.inReplyTo")
                                       if node.in_reply_to is not None else None),
        }
        out["recipient"] = butler_recipient.reply_recipient(self.trigger_event, self.state["event"])
        return out

    def send_propose(self, node: SendProposeNode) -> dict[str, Any]:
        """``mail.send.propose``: the draft's id (from a draft binding or an id)."""
        value = expr.evaluate(node.draft, self.state)
        if isinstance(value, Mapping):
            value = value.get("id")
        if not is_id(value, "dft"):
            raise _fault(WalkReason.LOOKUP_NOT_AN_ID, f"{node.id}.draft is {value!r}, not a draft or a dft_ id.")
        return {"draft_id": str(value)}

    async def effect(self, node: Node, step: str, params: dict[str, Any]) -> str | None:
        """Ask for one effect with ``params``: metered first, performed, bound, and parked on a release."""
        self.seq += 1
        call = EffectCall(seq=self.seq, step=step, node_id=node.id, node_type=node.type, params=params)
        if not self.effects.affordable(call):
            raise _end(WalkReason.BUDGET_EXHAUSTED, node=node.id, step=step)
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
            raise _end(WalkReason.RELEASE_TIMED_OUT, node=node.id, send_id=result.subject)
        return getattr(node, "next", None)


#: How the walk runs each pure node type (in memory; the handler returns the next node id).
PURE_NODES: dict[str, Callable[[_Walk, Any, str], Awaitable[str | None]]] = {
    "guard": _Walk.guard,
    "switch": _Walk.switch,
    "map": _Walk.each,
    "foreach": _Walk.each,
    "join": _Walk.join,
    "wait": _Walk.wait,
    "stop": _Walk.stop,
    "transform": _Walk.transform,
    "validate": _Walk.validate,
}
#: How the walk resolves each effect node type's parameters; each visit is then one effect (``_Walk.effect``).
EFFECT_PARAMS: dict[str, Callable[[_Walk, Any], dict[str, Any]]] = {
    "lookup": _Walk.lookup,
    "case.assign": _Walk.case_assign,
    "case.close": _Walk.case_close,
    "draft": _Walk.draft,
    "mail.send.propose": _Walk.send_propose,
}
#: The node types that touch storage; each visit is one effect.
EFFECT_TYPES: tuple[str, ...] = tuple(EFFECT_PARAMS)


def initial_state(facts: Mapping[str, Any], butler_id: str, version_id: str, name: str) -> dict[str, Any]:
    """The state a run starts with: ``{event: facts, butler: {id, versionId, name}, steps: {}}``."""
    return {"event": dict(facts), "butler": {"id": butler_id, "versionId": version_id, "name": name}, "steps": {}}


async def walk(document: ButlerDocument, state: dict[str, Any], effects: Effects, trigger_event: str) -> WalkResult:
    """Walk ``document`` from its entry over ``state`` (mutated: ``steps`` fills up) and end it.

    Returns the ``WalkResult``; a fault of the program (an expression, a reply with nowhere safe to
    go, a loop bound) is a ``failed`` result, never an exception. Exceptions raised by ``effects``
    propagate: they are the engine's faults, not the program's.
    """
    result = WalkResult(state=RunState.FINISHED, reason=None)
    w = _Walk(nodes={n.id: n for n in document.nodes}, state=state, effects=effects, trigger_event=trigger_event,
              result=result)
    try:
        await w.chain(document.entry)
    except _End as end:
        result.state, result.reason = end.state, end.reason
        result.detail = {"node": w.current, **end.detail} if w.current is not None else dict(end.detail)
    except (expr.ExprError, butler_recipient.ReplyRefused, schema_subset.SchemaSubsetError) as exc:
        # The program's own faults: the run ends failed with the code, the node and the four-part error.
        result.state, result.reason = RunState.FAILED, exc.code
        result.detail = {"node": w.current, "what": exc.what, "why": exc.why, "fix": exc.fix, **exc.detail}
    return result
