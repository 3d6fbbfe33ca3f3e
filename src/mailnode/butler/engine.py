"""The Butler engine: one generic DBOS workflow that runs every published Butler.

Seed 003 "One generic Workflow class", "The interpreter, in the order it runs", "Replay safety";
spec/butler.md §6.3 and Part A §7; spec/dbos.md (traps 1-2: an async workflow, because a run sleeps
and waits for people). ``run_butler(run_id)`` is started by the trigger with the run id as the workflow
id. In order:

1. ``load`` (a step, so a resumed run pays for it once): the run row, its version's ``ast_json``,
   state and sponsor, the Butler's name;
2. the per-invocation read (not a step, so never cached): the run's state, its stored spend, the
   effects already recorded, and the pause in force on its Butler (folded into the run read: no added
   statement). A run already closed returns at once; a run whose Butler is paused ends
   ``refused/butler_paused`` (``record.abandon``: no counts are stated, the effect rows say what it did);
3. refusals before any effect: ``version_not_published``, ``sponsor_unknown``, ``ast_not_json``,
   ``ast_does_not_check`` (the stored program is checked again: a hand-edited row with a reserved node,
   a cycle or a dangling edge never reaches the walk; ``check.check_stored`` remembers a version whose
   exact bytes this checker code already checked against this pot, so a delivery does not re-check it),
   ``unaffordable_with_engine`` (the checker's price plus ``BUTLER_RUN_ENGINE_FIXED_STATEMENTS`` over the pot,
   ``Settings.butler_run_pot``);
4. the walk (``walk.walk``) with ``LiveEffects``: each effect node is one durable step named
   ``<node id>#<visit>``, a ``wait`` is ``DBOS.sleep_async``, a Butler's send parks on
   ``DBOS.recv_async`` for ``Settings.butler_release_timeout_seconds`` (a person's release resumes it; the
   send cancelled, withheld or refused meanwhile ends it ``stopped/send_<state>``: ``butler.parked``);
5. ``close`` (a step): the terminal state, reason, counts, the spend not yet stored and, for a run that
   did not finish, why (``butler_runs.outcome_detail``, ``record.outcome_detail``: the node, the expression
   and the four-part error of a fault; the checker's findings of a refusal).

Exactly-once effects. An effect step runs one mailnode transaction that first looks for the effect
row ``(run_id, seq)``; finding one (the step committed but the process died before DBOS recorded the
step), it returns what the row recorded and performs nothing. Otherwise the people's function, the
effect row, the spend and (for a send) the park commit together. This rather than a DBOS datasource
transaction because the seal and save-draft are mailnode's own functions over mailnode's connection
(the seal opens its transactions through the ``Node``), and the unique ``(run_id, seq)`` makes the
effect row itself the idempotency record, on SQLite and PostgreSQL alike.

The pause is checked once more inside every effect step, folded into the step's first read (the
effect row it looks for), so a run that wakes from a long ``wait`` or a release into a pause ends
``refused/butler_paused`` before its next effect, again with no added statement. A re-run (``replay_of``)
carries its source run into every effect step for the content rule (``effects``); an effect that finds
the run must end (``effects.RunEnds``) writes nothing and the run ends with that state and reason.

Metering. The statement meter (``db.meter``) measures each step; a step stores its own count in
``butler_runs.statements_spent`` in its transaction, so the total survives invocations. Before each
effect not yet performed the walk asks ``affordable``: stored spend + this invocation's unstored
statements + the node type's reservation (``cost.RUNTIME_RESERVATIONS``) + the close must not pass the pot, else
the run ends ``refused/budget_exhausted`` having performed what came before. A non-Butler exception
ends the run ``failed/engine_fault`` (logged with its traceback) and is not re-raised, so nothing
retries an effect.

A graceful stop of the process (SIGTERM, Ctrl+C) leaves a run's workflow PENDING wherever it is (parked
on a release, inside a ``wait``, between steps: ``runtime.pending_on_stop``), and the next start of the
same executor resumes it from its last recorded step, as after ``kill -9``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from typing import Any

from dbos import DBOS

from mailnode import budgets, runtime
from mailnode.butler import cost, parked, record
from mailnode.butler import effects as live
from mailnode.butler.ast import ButlerDocument
from mailnode.butler.authority import Ceiling, Principal
from mailnode.butler.check import check_stored
from mailnode.butler.walk import EffectCall, EffectResult, WalkResult, initial_state, walk
from mailnode.schema.butler_runs import TERMINAL_STATES

log = logging.getLogger("mailnode.butler")

#: The reason a run ends with when its Butler is paused under it.
BUTLER_PAUSED = "butler_paused"


# --- steps ------------------------------------------------------------------------------------------

def _load_step(run_id: str) -> dict[str, Any] | None:
    """Read the run with its version; store this step's statements as spend. None: no such run."""
    node = runtime.current_node()
    with node.meter.measure() as m, node.begin() as conn:
        loaded = record.load(conn, run_id)
        if loaded is None:
            return None
        record.add_spend(conn, run_id, m.count + 1)
    return loaded


def _effect_step(ctx: dict[str, Any], call_data: dict[str, Any]) -> dict[str, Any]:
    """Perform one effect and record it in one transaction; a recorded ``(run_id, seq)`` is returned as is.

    Returns ``{"result": EffectResult fields, "statements": n}``, or ``{"ends": {state, reason, detail}}``
    when the run must end first (its Butler is paused, or ``effects.RunEnds``); then nothing was written.
    """
    node = runtime.current_node()
    call = EffectCall(**call_data)
    run_id = str(ctx["run_id"])
    who = Principal(org_id=ctx["org_id"], butler_id=ctx["butler_id"], sponsor_id=ctx["sponsor_id"],
                    ceiling=Ceiling({a: frozenset(v) for a, v in ctx["ceiling"].items()}))
    try:
        with node.meter.measure() as m, node.begin() as conn:
            done, paused = record.effect_or_pause(conn, run_id, call.seq)
            if done is not None:
                result = EffectResult(outcome=done.outcome, reason=done.reason, subject=done.subject,
                                      binding=done.binding,
                                      parks=done.node_type == "mail.send.propose"
                                      and done.reason == "butler_release_required")
                return {"result": asdict(result), "statements": int(done.statements)}
            if paused is not None:
                return {"ends": {"state": "refused", "reason": BUTLER_PAUSED, "detail": {"pause_id": paused}}}
            at = node.clock.now()
            result = live.perform(node, conn, who, call, at, replay_of=ctx.get("replay_of"))
            # The effect row and the spend update are the step's last two statements.
            statements = m.count + 2
            record.record_effect(conn, org_id=who.org_id, run_id=run_id, seq=call.seq, step=call.step,
                                 node_id=call.node_id, node_type=call.node_type, outcome=result.outcome,
                                 reason=result.reason, subject=result.subject, binding=result.binding,
                                 statements=statements, at=at)
            record.move(conn, run_id, spend=statements, at=at, park=True if result.parks else None)
    except live.RunEnds as ends:
        # The effect's transaction rolled back; the run's end is the visible record of why.
        return {"ends": {"state": ends.state, "reason": ends.reason, "detail": ends.detail}}
    return {"result": asdict(result), "statements": statements}


def _resume_step(run_id: str) -> int:
    """A person released the send: the run walks again (``awaiting_release -> running``)."""
    node = runtime.current_node()
    with node.meter.measure() as m, node.begin() as conn:
        record.move(conn, run_id, spend=m.count + 1, at=node.clock.now(), park=False)
    return m.count


def _abandon_step(run_id: str, state: str, reason: str) -> bool:
    """End the run with ``state``/``reason`` and no counts (its effect rows say what it did)."""
    node = runtime.current_node()
    with node.begin() as conn:
        return record.abandon(conn, run_id, state=state, reason=reason, at=node.clock.now())


def _close_step(run_id: str, outcome: dict[str, Any], unstored: int) -> bool:
    """End the run with ``outcome`` (``state, reason, nodes_executed, effects, refusals``)."""
    node = runtime.current_node()
    with node.meter.measure() as m, node.begin() as conn:
        return record.close(conn, run_id, state=outcome["state"], reason=outcome["reason"],
                            nodes_executed=outcome["nodes_executed"], effects=outcome["effects"],
                            refusals=outcome["refusals"], spend=unstored + m.count + 1, at=node.clock.now(),
                            detail=outcome.get("detail"))


# --- the live effects ---------------------------------------------------------------------------------

class LiveEffects:
    """``walk.Effects`` for a real run: durable steps, durable sleeps and the release gate."""

    def __init__(self, ctx: dict[str, Any], inv: record.Invocation, pot: int, unstored: int,
                 release_timeout_seconds: float) -> None:
        self.ctx = ctx
        self.performed = inv.performed
        self.spent = inv.spent
        self.pot = pot
        self.unstored = unstored
        self.fresh = 0
        self.release_timeout_seconds = release_timeout_seconds
        self.ok = 0
        self.refused = 0

    def affordable(self, call: EffectCall) -> bool:
        """True for an effect already performed; else ``cost.affordable`` over stored + fresh + unstored."""
        if call.seq in self.performed:
            return True
        return cost.affordable(self.spent + self.fresh + self.unstored, call.node_type, self.pot)

    async def perform(self, call: EffectCall) -> EffectResult:
        """One durable step per effect (see ``_effect_step``)."""
        out = await DBOS.run_step_async({"name": call.step}, _effect_step, self.ctx, asdict(call))
        if "ends" in out:
            ends = out["ends"]
            raise live.RunEnds(str(ends["state"]), str(ends["reason"]), **dict(ends.get("detail") or {}))
        if call.seq not in self.performed:
            self.fresh += int(out["statements"])
        result = EffectResult(**out["result"])
        if result.outcome == "ok":
            self.ok += 1
        elif result.outcome == "refused":
            self.refused += 1
        return result

    async def wait(self, step: str, seconds: int) -> None:
        """A durable sleep (its wake time survives a restart)."""
        await DBOS.sleep_async(seconds)

    async def await_release(self, call: EffectCall, result: EffectResult) -> bool:
        """Park on the send's release topic; True when released, False when the gate timed out.

        Raises ``effects.RunEnds`` (``stopped`` with the message's reason) when the message says the send
        was decided against while it waited (``butler.parked``: cancelled, withheld, refused).
        """
        message = await DBOS.recv_async(parked.release_topic(str(result.subject)),
                                        timeout_seconds=self.release_timeout_seconds)
        if message is None:
            return False
        if isinstance(message, dict) and message.get("ended"):
            raise live.RunEnds(parked.END_STATE, str(message["ended"]), node=call.node_id, send_id=result.subject,
                               send_state=message.get("state"))
        await DBOS.run_step_async({"name": f"{call.step}:released"}, _resume_step, str(self.ctx["run_id"]))
        return True


# --- the workflow -------------------------------------------------------------------------------------

def _refusal(loaded: dict[str, Any], pot: int) -> tuple[str, dict[str, Any]] | tuple[None, ButlerDocument]:
    """Before any effect: a refusal reason and its detail (``what``, and the checker's ``findings``), or the
    checked document."""
    if loaded["version_state"] != "published":
        return "version_not_published", {"what": f"Version {loaded['version_id']} is {loaded['version_state']}."}
    if not loaded["published_by"]:
        return "sponsor_unknown", {"what": f"Version {loaded['version_id']} has no publisher."}
    checked = check_stored(loaded["ast_json"], pot=pot)
    if not checked.ok or checked.ast is None or checked.price is None:
        codes = [f.code for f in checked.findings]
        reason = "ast_not_json" if "E_BUTLER_SOURCE_NOT_JSON" in codes else "ast_does_not_check"
        return reason, {"what": f"Version {loaded['version_id']} does not check.",
                        "findings": [f.render() for f in checked.findings]}
    forecast = checked.price.total + budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS
    if forecast > pot:
        return "unaffordable_with_engine", {
            "what": f"Priced {checked.price.total} + engine {budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS} > pot {pot}.",
            "price": checked.price.total, "engine": budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS, "pot": pot}
    return None, checked.ast


def _counts(state: str, reason: str | None, nodes: int = 0, ok: int = 0, refused: int = 0,
            detail: dict[str, Any] | None = None) -> dict[str, Any]:
    # Plain text, never an enum member: the outcome is a step argument and the workflow's result, which
    # DBOS pickles, and the run record stores it.
    out: dict[str, Any] = {"state": str(state), "reason": None if reason is None else str(reason),
                           "nodes_executed": nodes, "effects": ok, "refusals": refused}
    if detail:
        # Step arguments are stored by DBOS: a fault's values that are not JSON travel as text.
        out["detail"] = json.loads(json.dumps(detail, default=str))
    return out


@DBOS.workflow()
@runtime.pending_on_stop
async def run_butler(run_id: str) -> dict[str, Any]:
    """Run one Butler run to its end; returns ``{state, reason, nodes_executed, effects, refusals}``.

    Never raises for the program's faults or the engine's (both close the run); see the module docstring.
    """
    node = runtime.current_node()
    loaded = await DBOS.run_step_async({"name": "load"}, _load_step, run_id)
    if loaded is None:
        log.error("butler.run_missing run=%s", run_id)
        return _counts("failed", "run_missing")
    with node.meter.measure() as m, node.read() as conn:
        inv = record.invocation(conn, run_id)
    if inv is None or inv.state in TERMINAL_STATES:
        return _counts(inv.state if inv else "failed", None)
    if inv.paused is not None:
        log.warning("butler.paused run=%s pause=%s: E_BUTLER_PAUSED, the run ends", run_id, inv.paused)
        await DBOS.run_step_async({"name": "paused"}, _abandon_step, run_id, "refused", BUTLER_PAUSED)
        return _counts("refused", BUTLER_PAUSED)
    pot = node.settings.butler_run_pot
    reason, found = _refusal(loaded, pot)
    if reason is not None:
        log.warning("butler.run_refused run=%s reason=%s %s", run_id, reason, found)
        outcome = _counts("refused", reason, detail=found if isinstance(found, dict) else None)
        await DBOS.run_step_async({"name": "close"}, _close_step, run_id, outcome, m.count)
        return outcome
    document = found
    if not isinstance(document, ButlerDocument):
        raise TypeError("the checker returned no document")
    ctx = {"run_id": run_id, "org_id": loaded["org_id"], "butler_id": loaded["butler_id"],
           "sponsor_id": loaded["published_by"], "replay_of": loaded.get("replay_of"),
           "ceiling": Ceiling.from_capabilities([c.model_dump() for c in document.capabilities]).to_json()}
    effects = LiveEffects(ctx, inv, pot, m.count, node.settings.butler_release_timeout_seconds)
    state = initial_state(loaded["trigger_facts"], loaded["butler_id"], loaded["version_id"], loaded["butler_name"])
    try:
        result: WalkResult = await walk(document, state, effects, loaded["trigger_event"])
        outcome = _counts(result.state, result.reason, result.nodes_executed, result.effects, result.refusals,
                          result.detail if result.state != "finished" else None)
        if result.state in ("failed", "refused"):
            log.warning("butler.run_%s run=%s reason=%s %s", result.state, run_id, result.reason, result.detail)
    except live.RunEnds as ends:
        log.warning("butler.run_%s run=%s reason=%s %s", ends.state, run_id, ends.reason, ends.detail)
        if ends.reason == BUTLER_PAUSED:
            await DBOS.run_step_async({"name": "paused"}, _abandon_step, run_id, ends.state, ends.reason)
            return _counts(ends.state, ends.reason)
        outcome = _counts(ends.state, ends.reason, 0, effects.ok, effects.refused, dict(ends.detail))
    except Exception as exc:
        log.exception("butler.engine_fault run=%s", run_id)
        # The exception's own text may quote mail content (a driver's parameters); the record names its type.
        outcome = _counts("failed", "engine_fault", 0, effects.ok, effects.refused,
                          {"what": f"The engine raised {type(exc).__name__}."})
    await DBOS.run_step_async({"name": "close"}, _close_step, run_id, outcome, effects.unstored)
    return outcome
