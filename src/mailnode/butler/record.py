"""The run record: opening, reading, advancing and closing ``butler_runs`` rows and their effect rows.

Seed 003 "The run record, and the ledger seam"; spec/butler.md §6.1–§6.4. Every function takes a
``Connection`` already in a transaction and issues the statements its docstring counts, because the
engine meters each of them against the run's pot. A run moves ``running -> awaiting_release ->
running`` while it walks and ends in one of ``run_tables.TERMINAL_STATES`` exactly once (``close`` and
``abandon`` match only a live row). The read functions behind ``GET /api/butler-runs`` never return
``trigger_facts`` nor an effect's ``binding``: both are mail content.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects import postgresql, sqlite

from mailnode.authz import is_admin
from mailnode.butler.pause import in_force_on
from mailnode.errors import not_found
from mailnode.ids import new_id
from mailnode.schema.butler import butler_versions, butlers
from mailnode.schema.butler_runs import LIVE_STATES, butler_pauses, butler_run_effects, butler_runs

_R = butler_runs.c
_E = butler_run_effects.c


def open_run(conn: Connection, *, run_id: str, org_id: str, butler_id: str, version_id: str, trigger_event: str,
             trigger_key: str, facts: dict[str, Any], at: datetime, provoked_by: str | None = None,
             reply_chain: list[str] | None = None, self_provoked: bool = False, replay_of: str | None = None,
             replayed_by: str | None = None) -> bool:
    """Insert the run ``running`` with its trigger facts unless it exists; True when inserted (one statement).

    ``provoked_by``, ``reply_chain`` and ``self_provoked`` are the loop detector's findings at trigger
    time; ``replay_of`` and ``replayed_by`` mark a re-run.
    """
    values = {"id": run_id, "org_id": org_id, "butler_id": butler_id, "version_id": version_id,
              "trigger_event": trigger_event, "trigger_key": trigger_key, "trigger_facts": facts, "state": "running",
              "state_at": at, "started_at": at, "provoked_by": provoked_by, "reply_chain": reply_chain,
              "self_provoked": self_provoked, "replay_of": replay_of, "replayed_by": replayed_by}
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    done = conn.execute(dialect.insert(butler_runs).values(**values).on_conflict_do_nothing(index_elements=["id"]))
    return bool(done.rowcount == 1)


def load(conn: Connection, run_id: str) -> dict[str, Any] | None:
    """The run with its version and Butler (one statement), or None.

    ``{run_id, org_id, butler_id, butler_name, version_id, version_state, ast_json, published_by,
    trigger_event, trigger_key, trigger_facts, replay_of}``.
    """
    v = butler_versions.c
    row = conn.execute(
        select(_R.id, _R.org_id, _R.butler_id, _R.version_id, _R.trigger_event, _R.trigger_key, _R.trigger_facts,
               _R.replay_of, butlers.c.name, v.state, v.ast_json, v.published_by)
        .join(butler_versions, v.id == _R.version_id).join(butlers, butlers.c.id == _R.butler_id)
        .where(_R.id == run_id)).first()
    if row is None:
        return None
    return {"run_id": row.id, "org_id": row.org_id, "butler_id": row.butler_id, "butler_name": row.name,
            "version_id": row.version_id, "version_state": row.state, "ast_json": row.ast_json,
            "published_by": row.published_by, "trigger_event": row.trigger_event, "trigger_key": row.trigger_key,
            "trigger_facts": row.trigger_facts, "replay_of": row.replay_of}


@dataclass(frozen=True)
class Invocation:
    """What one invocation reads once, uncached: the run's state, its stored spend, which effect ``seq``
    numbers already have a row (those effects are done; their cost is in ``spent``), and the pause in
    force on its Butler (``paused``: the pause id, None when none)."""

    state: str
    spent: int
    performed: frozenset[int]
    paused: str | None = None


def invocation(conn: Connection, run_id: str) -> Invocation | None:
    """The run's state, spend, pause and performed effects (two statements), or None for no such run.

    The pause rides on the run read as an outer join: checking it adds no statement.
    """
    row = conn.execute(select(_R.state, _R.statements_spent, butler_pauses.c.id.label("pause_id"))
                       .outerjoin(butler_pauses, in_force_on(_R.org_id, _R.butler_id))
                       .where(_R.id == run_id)).first()
    if row is None:
        return None
    seqs = conn.execute(select(_E.seq).where(_E.run_id == run_id)).scalars().all()
    return Invocation(state=row.state, spent=int(row.statements_spent), performed=frozenset(int(s) for s in seqs),
                      paused=row.pause_id)


def add_spend(conn: Connection, run_id: str, statements: int) -> None:
    """Add ``statements`` to the run's stored spend (one statement)."""
    conn.execute(update(butler_runs).where(_R.id == run_id)
                 .values(statements_spent=_R.statements_spent + statements))


def effect_row(conn: Connection, run_id: str, seq: int) -> Any | None:
    """The effect row ``(run_id, seq)`` if it was written (one statement)."""
    return conn.execute(select(butler_run_effects).where(_E.run_id == run_id, _E.seq == seq)).first()


def effect_or_pause(conn: Connection, run_id: str, seq: int) -> tuple[Any | None, str | None]:
    """``(effect row or None, pause id or None)``: the step's first read, with the pause folded in (one
    statement, as ``effect_row`` alone was): an effect step checks the pause at no extra cost."""
    e = butler_run_effects.alias("e")
    row = conn.execute(select(e, butler_pauses.c.id.label("pause_id"))
                       .select_from(butler_runs.outerjoin(e, (e.c.run_id == _R.id) & (e.c.seq == seq))
                                    .outerjoin(butler_pauses, in_force_on(_R.org_id, _R.butler_id)))
                       .where(_R.id == run_id)).first()
    if row is None:
        return None, None
    return (row if row.id is not None else None), row.pause_id


def record_effect(conn: Connection, *, org_id: str, run_id: str, seq: int, step: str, node_id: str, node_type: str,
                  outcome: str, reason: str | None, subject: str | None, binding: Any, statements: int,
                  at: datetime) -> None:
    """Insert one effect row (one statement); a second row for ``(run_id, seq)`` is an IntegrityError."""
    conn.execute(butler_run_effects.insert().values(
        id=new_id("bre"), org_id=org_id, run_id=run_id, seq=seq, node_id=node_id, node_type=node_type, step=step,
        outcome=outcome, reason=reason, subject=subject, statements=statements, binding=binding, at=at))


def move(conn: Connection, run_id: str, *, spend: int, at: datetime, park: bool | None = None) -> None:
    """Add ``spend`` and, with ``park`` True, move ``running -> awaiting_release`` (reason
    ``butler_release_required``), with ``park`` False move ``awaiting_release -> running`` (one statement)."""
    q = update(butler_runs).where(_R.id == run_id)
    values: dict[str, Any] = {"statements_spent": _R.statements_spent + spend}
    if park is True:
        q = q.where(_R.state.in_(LIVE_STATES))
        values.update(state="awaiting_release", outcome_reason="butler_release_required", state_at=at)
    elif park is False:
        q = q.where(_R.state.in_(LIVE_STATES))
        values.update(state="running", outcome_reason=None, state_at=at)
    conn.execute(q.values(**values))


#: Why and how to fix each reason a run ends with that carries no sentences of its own (the walk's,
#: the engine's and the effects' tokens); an ``E_BUTLER_*`` fault of the program brings its own.
REASON_WORDS: dict[str, tuple[str, str]] = {
    "edge_to_nothing": ("An edge must name a node of the program.",
                        "Publish a version whose every edge names a node (mailnode butler check)."),
    "loop_bound_exceeded": ("A loop refuses more items than its maxItems before it processes any.",
                            "Raise the loop's maxItems (within the caps), or narrow what it loops over."),
    "reserved_node_reached_the_walk": ("That node type is reserved; the engine runs none of it.",
                                       "Publish a version without it."),
    "validate_failed": ("A validate node's value did not match its schema.",
                        "See detail.problems; fix the value the program builds, or the schema."),
    "budget_exhausted": ("The next effect's reservation would have passed the run's pot of statements.",
                         "Make the program do less per run, or raise the pot (MAILNODE_BUTLER_RUN_POT)."),
    "release_timed_out": ("Nobody released the Butler's send within the release timeout.",
                          "The send is still releasable: POST /api/sends/{send_id}/release."),
    "version_not_published": ("A run walks only a published version.", "Publish the Butler again."),
    "sponsor_unknown": ("A published version names the administrator who published it; this one names none.",
                        "Publish the Butler again as an administrator."),
    "ast_not_json": ("The stored program is not JSON; it was edited outside mailnode.",
                     "Publish a version that checks: mailnode butler publish <id>."),
    "ast_does_not_check": ("The stored program no longer checks (see detail.findings).",
                           "Publish a version that checks: mailnode butler check <file>, then publish it."),
    "unaffordable_with_engine": ("The program's price plus the engine's fixed cost is over the pot.",
                                 "Make the program cheaper, or raise the pot (MAILNODE_BUTLER_RUN_POT)."),
    "engine_fault": ("mailnode itself failed while running the Butler; this is not the program's fault.",
                     "The traceback is in the server log (butler.engine_fault run=<id>); report it."),
    "E_BUTLER_LOOKUP_NOT_AN_ID": ("An id parameter must evaluate to an id of the kind the node takes.",
                                  "Point the parameter at an id (for example event.message_id)."),
    "E_BUTLER_LOOP_OVER_NOT_A_LIST": ("A loop's over must evaluate to a list.", "Point over at a list."),
    "E_BUTLER_MAP_COLLECTS_NOTHING": ("A map's body must bind its collectAs on every item.",
                                      "Bind collectAs in the body (a transform with as: <collectAs>)."),
    "E_BUTLER_PARAMETER_NOT_TEXT": ("A text parameter must evaluate to text.",
                                    "Point the parameter at text, or build text with a transform."),
}
#: The keys of an ``outcome_detail`` in the order they are written; the rest of a fault's detail follows.
_DETAIL_HEAD = ("code", "node", "expression", "what", "why", "fix")


def outcome_detail(state: str, reason: str | None, detail: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What a run that did not finish stores beside its reason (pure): ``{code, node, expression, what, why,
    fix, ...}`` with the walk's ``detail`` (issue 17 item 11). ``why``/``fix`` come from the fault itself, else
    ``REASON_WORDS``. None for a finished run with nothing to say. Values that are not JSON become text."""
    if state == "finished" and not detail:
        return None
    out: dict[str, Any] = {"code": reason}
    out.update({k: v for k, v in (detail or {}).items()})
    words = REASON_WORDS.get(reason or "")
    if words is not None:
        out.setdefault("why", words[0])
        out.setdefault("fix", words[1])
    head = {k: out[k] for k in _DETAIL_HEAD if k in out}
    rest = {k: v for k, v in out.items() if k not in head}
    return json.loads(json.dumps({**head, **rest}, default=str))


def close(conn: Connection, run_id: str, *, state: str, reason: str | None, nodes_executed: int, effects: int,
          refusals: int, spend: int, at: datetime, detail: Mapping[str, Any] | None = None) -> bool:
    """End a live run with its terminal state, reason, counts and ``outcome_detail``, adding ``spend``
    (one statement).

    False when the run was no longer live (already closed or abandoned): nothing changes then.
    """
    done = conn.execute(update(butler_runs).where(_R.id == run_id, _R.state.in_(LIVE_STATES)).values(
        state=state, outcome_reason=reason, state_at=at, finished_at=at, nodes_executed=nodes_executed,
        effects=effects, refusals=refusals, statements_spent=_R.statements_spent + spend,
        outcome_detail=outcome_detail(state, reason, detail)))
    return bool(done.rowcount == 1)


def abandon(conn: Connection, run_id: str, *, state: str, reason: str, at: datetime) -> bool:
    """End a live run whose walk is gone (no counts are stated, none are known); True when it was live."""
    done = conn.execute(update(butler_runs).where(_R.id == run_id, _R.state.in_(LIVE_STATES)).values(
        state=state, outcome_reason=reason, state_at=at, finished_at=at))
    return bool(done.rowcount == 1)


# --- reading, for administrators ------------------------------------------------------------------

def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def run_json(r: Any) -> dict[str, Any]:
    """A run as the API shows it: everything but ``trigger_facts``; ``outcome_detail`` says why it ended."""
    return {"id": r.id, "butler_id": r.butler_id, "version_id": r.version_id, "trigger_event": r.trigger_event,
            "trigger_key": r.trigger_key, "state": r.state, "state_at": _iso(r.state_at),
            "outcome_reason": r.outcome_reason, "outcome_detail": r.outcome_detail,
            "started_at": _iso(r.started_at), "finished_at": _iso(r.finished_at),
            "nodes_executed": r.nodes_executed, "effects": r.effects, "refusals": r.refusals,
            "statements_spent": r.statements_spent, "provoked_by": r.provoked_by,
            "self_provoked": bool(r.self_provoked),
            "replay_of": r.replay_of, "replayed_by": r.replayed_by}


def effect_json(e: Any) -> dict[str, Any]:
    """An effect row as the API shows it: everything but ``binding``."""
    return {"id": e.id, "seq": e.seq, "node_id": e.node_id, "node_type": e.node_type, "step": e.step,
            "outcome": e.outcome, "reason": e.reason, "subject": e.subject, "statements": e.statements,
            "at": _iso(e.at)}


_RUN_COLUMNS = [c for c in butler_runs.c if c.name not in ("trigger_facts", "reply_chain")]


def _no_runs(run_id: str | None = None) -> Exception:
    return not_found("E_NO_SUCH_BUTLER_RUN", f"No Butler run {run_id}." if run_id else "No Butler runs to show.",
                     fix="Butler runs are shown to administrators; list them with GET /api/butler-runs.",
                     **({"run_id": run_id} if run_id else {}))


def list_runs(conn: Connection, *, org_id: str, principal_id: str, limit: int, cursor: str | None,
              butler_id: str | None = None) -> list[dict[str, Any]]:
    """Runs newest first (by id within a start time), after ``cursor`` (a run id); administrators only.

    Anyone else gets ``E_NO_SUCH_BUTLER_RUN`` (404): the list would disclose that Butlers run.
    """
    if not is_admin(conn, org_id, principal_id):
        raise _no_runs()
    q = select(*_RUN_COLUMNS).where(_R.org_id == org_id)
    if butler_id:
        q = q.where(_R.butler_id == butler_id)
    if cursor:
        anchor = conn.execute(select(_R.started_at).where(_R.id == cursor, _R.org_id == org_id)).first()
        if anchor is not None:
            q = q.where((_R.started_at < anchor.started_at) | ((_R.started_at == anchor.started_at) & (_R.id < cursor)))
    rows = conn.execute(q.order_by(_R.started_at.desc(), _R.id.desc()).limit(limit)).all()
    return [run_json(r) for r in rows]


def get_run(conn: Connection, *, org_id: str, principal_id: str, run_id: str) -> dict[str, Any]:
    """One run with its effect rows in ``seq`` order: ``{...run, "effect_rows": [...]}`` (administrators).

    ``E_NO_SUCH_BUTLER_RUN`` (404) for an absent run and for anyone else alike.
    """
    if not is_admin(conn, org_id, principal_id):
        raise _no_runs(run_id)
    row = conn.execute(select(*_RUN_COLUMNS).where(_R.id == run_id, _R.org_id == org_id)).first()
    if row is None:
        raise _no_runs(run_id)
    effects = conn.execute(select(butler_run_effects).where(_E.run_id == run_id).order_by(_E.seq)).all()
    return {**run_json(row), "effect_rows": [effect_json(e) for e in effects]}


def run_of_send(conn: Connection, org_id: str, send_id: str) -> Any | None:
    """``(run_id, state)`` of the run whose effect sealed ``send_id``, or None (one statement)."""
    return conn.execute(select(_E.run_id, _R.state).join(butler_runs, _R.id == _E.run_id)
                        .where(_E.org_id == org_id, _E.subject == send_id, _E.node_type == "mail.send.propose")
                        .order_by(_E.at).limit(1)).first()
