"""The latched Butler pause, and the loop detector that places it.

Seed 003 "The pause, and the loop that places it"; spec/butler.md §9; issue 8. A run of Butler B is
*self-provoked* when its triggering message replies (In-Reply-To or References) to a send a run of B
proposed, or, beyond the reference, when B is anywhere up the chain of replies that led to it (A answers
B answers A), remembered per run for ``budgets.BUTLER_LOOP_CHAIN_DEPTH`` Butlers. At trigger time the
detector counts B's self-provoked runs in the window (``budgets.BUTLER_LOOP_WINDOW_SECONDS``, starting
no earlier than B's last resume) plus the one in front of it; more than
``budgets.BUTLER_LOOP_MAX_SELF_PROVOKED_RUNS`` and the node pauses B before the run starts.

The pause is keyed on the Butler, never on a version, so publishing a new version does not clear it;
only the node places one (``butler.paused``, actor kind ``node``, with the figure behind it) and there
is no route that places one; one administrator resumes it with a mandatory reason (``butler.resumed``).
It is checked where reads already happen, adding no statement (``in_force_on``): the trigger's read of
published versions, the run's per-invocation read and every effect step's own first read.

Statements: ``provocations`` is one statement (none when the delivery names no Message-ID), over
``ix_message_ids_lookup``, ``ix_butler_run_effects_subject`` and the runs' primary key;
``self_provoked_since`` is one statement over ``ix_butler_runs_self_provoked``. Both seek an index and
never scan (``tests/butler/runs/test_loop_plan.py`` prints and asserts the plans on both databases).

Codes: ``E_BUTLER_LOOP`` (the placed pause's sentence), ``E_BUTLER_NO_SUCH_PAUSE`` (404),
``E_BUTLER_PAUSE_REASON_REQUIRED`` (422), ``E_BUTLER_PAUSE_ALREADY_RESUMED`` (409).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, func, select, true, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from mailnode import audit, budgets
from mailnode.authz import is_admin
from mailnode.errors import MailnodeError, conflict, invalid, not_found
from mailnode.ids import is_id, new_id
from mailnode.schema.butler import butlers
from mailnode.schema.butler_runs import butler_pauses, butler_run_effects, butler_runs
from mailnode.schema.mail_messages import message_ids

_P = butler_pauses.c
_R = butler_runs.c
_E = butler_run_effects.c

LOOP_DETECTED = "loop_detected"
#: The route that resumes a pause (``{id}`` is the pause id).
RESUME_ROUTE = "POST /api/butler-pauses/{id}/resume"


def in_force_on(org_id: Any, butler_id: Any) -> ColumnElement[bool]:
    """The join condition "the pause in force on this Butler" (outer-join it into a read that happens anyway)."""
    return and_(_P.org_id == org_id, _P.butler_id == butler_id, _P.resumed_at.is_(None))


def last_resumed_at(org_id: Any, butler_id: Any) -> Any:
    """A correlated scalar: when this Butler's latest pause was resumed (NULL: never), for the same read."""
    past = butler_pauses.alias("past_pauses")
    return (select(func.max(past.c.resumed_at)).where(past.c.org_id == org_id, past.c.butler_id == butler_id)
            .correlate_except(past).scalar_subquery())


# --- detection -----------------------------------------------------------------------------------------

def candidate_ids(in_reply_to: str | None, references: Sequence[str]) -> list[str]:
    """The Message-IDs a delivery replies to, nearest first: In-Reply-To, then References newest first.

    Brackets stripped, duplicates dropped, at most ``budgets.BUTLER_LOOP_CANDIDATE_IDS_MAX``.
    """
    out: list[str] = []
    for mid in [in_reply_to or "", *reversed(list(references))]:
        key = str(mid).strip().strip("<>")
        if key and key not in out:
            out.append(key)
    return out[:budgets.BUTLER_LOOP_CANDIDATE_IDS_MAX]


@dataclass(frozen=True)
class Provocation:
    """A run whose proposed send a delivery replies to: its id, its Butler and that run's own chain."""

    run_id: str
    butler_id: str
    chain: tuple[str, ...]


def provocations(conn: Connection, org_id: str, candidates: Sequence[str]) -> list[Provocation]:
    """The runs whose proposed sends carry one of ``candidates`` as Message-ID, nearest candidate first.

    One statement, none when ``candidates`` is empty: ``message_ids`` (the Message-IDs this node
    recorded at seal, ``source_id`` the ``snd_`` id) to the ``mail.send.propose`` effect rows naming that
    send, to their runs.
    """
    if not candidates:
        return []
    m = message_ids.c
    rows = conn.execute(
        select(m.rfc_message_id, _R.id, _R.butler_id, _R.reply_chain)
        .select_from(message_ids.join(butler_run_effects, and_(_E.org_id == m.org_id, _E.subject == m.source_id))
                     .join(butler_runs, _R.id == _E.run_id))
        .where(m.org_id == org_id, m.rfc_message_id.in_(list(candidates)), _E.node_type == "mail.send.propose",
               _E.outcome == "ok")).all()
    rank = {c: i for i, c in enumerate(candidates)}
    rows = sorted(rows, key=lambda r: (rank.get(r.rfc_message_id, len(rank)), r.id))
    return [Provocation(r.id, r.butler_id, tuple(r.reply_chain or ())) for r in rows]


def reply_chain(provoked: Sequence[Provocation]) -> tuple[str, ...]:
    """The Butlers up the chain of replies from the nearest provoking run, nearest first, bounded."""
    if not provoked:
        return ()
    nearest = provoked[0]
    return (nearest.butler_id, *nearest.chain)[:budgets.BUTLER_LOOP_CHAIN_DEPTH]


def is_self_provoked(butler_id: str, provoked: Sequence[Provocation]) -> bool:
    """True when ``butler_id`` proposed a send the delivery replies to, or is up the chain of replies."""
    return any(p.butler_id == butler_id for p in provoked) or butler_id in reply_chain(provoked)


def self_provoked_since(conn: Connection, org_id: str, butler_id: str, since: datetime,
                        exclude_run_id: str = "") -> int:
    """How many of the Butler's runs started after ``since`` were self-provoked (one statement).

    ``exclude_run_id`` is the run being decided: the at-least-once pipeline may call the trigger again
    after that run was opened, and it must not count itself.
    """
    return int(conn.execute(select(func.count()).select_from(butler_runs).where(
        _R.org_id == org_id, _R.butler_id == butler_id, _R.self_provoked == true(), _R.started_at > since,
        _R.id != exclude_run_id)).scalar_one())


def window_start(now: datetime, last_resumed: datetime | None) -> datetime:
    """The count's start: the window's, or the last resume when later (a person decided afresh then)."""
    start = now - timedelta(seconds=budgets.BUTLER_LOOP_WINDOW_SECONDS)
    return max(start, last_resumed) if last_resumed is not None else start


@dataclass(frozen=True)
class LoopReading:
    """The figure behind a decision: self-provoked runs in the window, counting this one, and the limit."""

    self_provoked: int
    limit: int
    window_seconds: int
    chain: tuple[str, ...]

    @property
    def tripped(self) -> bool:
        """More self-provoked runs than the limit allows."""
        return self.self_provoked > self.limit

    def to_json(self) -> dict[str, Any]:
        """The stored figure."""
        return {"self_provoked": self.self_provoked, "limit": self.limit, "window_seconds": self.window_seconds,
                "chain": list(self.chain)}


def reading(prior: int, chain: Sequence[str]) -> LoopReading:
    """The reading for a self-provoked delivery after ``prior`` self-provoked runs in the window (pure)."""
    return LoopReading(prior + 1, budgets.BUTLER_LOOP_MAX_SELF_PROVOKED_RUNS, budgets.BUTLER_LOOP_WINDOW_SECONDS,
                       tuple(chain))


def loop_sentence(name: str, figure: LoopReading) -> str:
    """The stored sentence of a loop pause, with the figure and the limit in words."""
    through = ""
    if len(set(figure.chain)) > 1:
        through = f" (the chain of replies runs through {len(set(figure.chain))} Butlers)"
    return (f"E_BUTLER_LOOP BUTLER_LOOP_MAX_SELF_PROVOKED_RUNS={figure.limit}: {name!r} would have run "
            f"{figure.self_provoked} times in the last {figure.window_seconds // 60} minutes on replies to mail it "
            f"proposed itself{through}; it is paused until an administrator resumes it.")


# --- placing and resuming ------------------------------------------------------------------------------

def place(conn: Connection, *, org_id: str, butler_id: str, name: str, figure: LoopReading, message_id: str,
          at: datetime) -> str | None:
    """Pause the Butler for a loop (the node is the actor); the pause id, or None when one was already in force.

    Two statements and the audit entry, in the caller's transaction; the unique index on pauses in
    force decides a race between two deliveries (the loser's savepoint rolls back, nothing is audited).
    """
    pause_id = new_id("bpz")
    detail = loop_sentence(name, figure)
    try:
        with conn.begin_nested():
            conn.execute(butler_pauses.insert().values(
                id=pause_id, org_id=org_id, butler_id=butler_id, reason=LOOP_DETECTED, detail=detail,
                figure=figure.to_json(), tripped_by=message_id, placed_at=at))
    except IntegrityError:
        in_force = conn.execute(select(_P.id).where(in_force_on(org_id, butler_id))).first()
        if in_force is None:
            raise
        return None
    audit.append(conn, org_id=org_id, at=at, action="butler.paused", actor_id=None, subject=butler_id,
                 detail={"pause_id": pause_id, "name": name, "reason": LOOP_DETECTED, "tripped_by": message_id,
                         "figure": figure.to_json(), "said": detail})
    return pause_id


def pause_json(r: Any) -> dict[str, Any]:
    """A pause as the API shows it, with the route that resumes it while it is in force."""
    return {"id": r.id, "butler_id": r.butler_id, "butler_name": r.name, "reason": r.reason, "detail": r.detail,
            "figure": r.figure, "tripped_by": r.tripped_by, "placed_at": r.placed_at.isoformat(),
            "resumed_at": r.resumed_at.isoformat() if r.resumed_at else None, "resumed_by": r.resumed_by,
            "resumed_reason": r.resumed_reason,
            "resume": RESUME_ROUTE.replace("{id}", r.id) if r.resumed_at is None else None}


def _no_pause(pause_id: str | None = None) -> MailnodeError:
    return not_found("E_BUTLER_NO_SUCH_PAUSE",
                     f"No Butler pause {pause_id}." if pause_id else "No Butler pauses to show.",
                     fix="Butler pauses are shown to administrators: GET /api/butler-pauses.",
                     **({"pause_id": pause_id} if pause_id else {}))


def list_pauses(conn: Connection, *, org_id: str, principal_id: str, limit: int, cursor: str | None,
                in_force: bool = False) -> list[dict[str, Any]]:
    """Pauses newest first (in force only with ``in_force``), after ``cursor`` (a pause id); administrators.

    Anyone else gets ``E_BUTLER_NO_SUCH_PAUSE`` (404): the list would disclose that Butlers exist.
    """
    if not is_admin(conn, org_id, principal_id):
        raise _no_pause()
    q = (select(butler_pauses, butlers.c.name).join(butlers, butlers.c.id == _P.butler_id)
         .where(_P.org_id == org_id))
    if in_force:
        q = q.where(_P.resumed_at.is_(None))
    if cursor:
        q = q.where(_P.id < cursor)
    return [pause_json(r) for r in conn.execute(q.order_by(_P.id.desc()).limit(limit)).all()]


def resume(conn: Connection, *, org_id: str, principal_id: str, at: datetime, pause_id: str,
           reason: str) -> dict[str, Any]:
    """Resume a pause in force: one administrator, alone, with a non-blank reason; audits ``butler.resumed``.

    Raises ``E_BUTLER_NO_SUCH_PAUSE`` (404, also for anyone not an administrator),
    ``E_BUTLER_PAUSE_REASON_REQUIRED`` (422), ``E_BUTLER_PAUSE_ALREADY_RESUMED`` (409, also when a
    concurrent resume won). Returns the resumed pause (``pause_json``).
    """
    if not is_id(pause_id, "bpz") or not is_admin(conn, org_id, principal_id):
        raise _no_pause(pause_id)
    row = conn.execute(select(butler_pauses, butlers.c.name).join(butlers, butlers.c.id == _P.butler_id)
                       .where(_P.id == pause_id, _P.org_id == org_id)).first()
    if row is None:
        raise _no_pause(pause_id)
    clean = (reason or "").strip()
    if not clean:
        raise invalid("E_BUTLER_PAUSE_REASON_REQUIRED", "A resume needs a reason.",
                      "The node placed this pause; the resume is the only human judgement in its life, so it is "
                      "recorded.", f"Send {{\"reason\": \"...\"}} to POST /api/butler-pauses/{pause_id}/resume.",
                      pause_id=pause_id)
    done = conn.execute(update(butler_pauses).where(_P.id == pause_id, _P.resumed_at.is_(None))
                        .values(resumed_at=at, resumed_by=principal_id, resumed_reason=clean))
    if done.rowcount != 1:
        raise conflict("E_BUTLER_PAUSE_ALREADY_RESUMED", f"Butler pause {pause_id} is no longer in force.",
                       "It was resumed already (perhaps at the same moment by someone else).",
                       "Read the pauses: GET /api/butler-pauses.", pause_id=pause_id)
    audit.append(conn, org_id=org_id, at=at, action="butler.resumed", actor_id=principal_id, subject=row.butler_id,
                 detail={"pause_id": pause_id, "placed_at": row.placed_at.isoformat(), "reason": clean})
    resumed = conn.execute(select(butler_pauses, butlers.c.name).join(butlers, butlers.c.id == _P.butler_id)
                           .where(_P.id == pause_id)).one()
    return pause_json(resumed)
