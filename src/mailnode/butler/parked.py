"""A run parked on its send ends when the send can no longer be released (issue 17 item 12).

Seed 003 "The human-release gate": a Butler's send is sealed ``awaiting/butler_release_required`` and the
run parks on the send's release topic (``release_topic``) for up to
``Settings.butler_release_timeout_seconds`` (four days by default). A person's release is one way out
(``release``); the other is the send being decided against while it waits: cancelled by a person, withheld
(retention deleted its body), refused. Such a send will never be released, so the run waiting for it ends
at once, ``stopped`` with the reason ``PARKED_RUN_ENDS`` names, instead of sleeping out its timeout.

Two halves, because the run is two things:

- the record (``end_parked_on``): in the transaction that moves the send, the run whose effect sealed it
  and that is still ``awaiting_release`` is ended ``stopped/<reason>`` (one conditional update,
  ``record.abandon``: no counts are stated, the effect rows say what it did). So the record says so the
  moment the send's new state is visible, whether or not any process runs the workflow;
- the workflow (``tell``): after that commit, the run's DBOS workflow is sent
  ``{"ended": <reason>, "send_id", "state"}`` on the same release topic; ``engine.LiveEffects.await_release``
  reads it and ends the walk (its close finds the record already ended and writes nothing). DBOS keeps the
  message, so a workflow resumed later by another process reads it then. A workflow that no longer exists
  is told nothing (its record is already ended).

``PARKED_RUN_ENDS`` is total over ``SendState`` (a test generated from the enum checks it): ``held`` and
``awaiting`` are not an end (the release gate and the release itself say what happens), ``handed_over`` and
``outcome_unknown`` are not either (only a released send reaches them, and a released run is not parked),
and an unknown state string ends nothing (``parked_run_end``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from mailnode import runtime
from mailnode.butler import record
from mailnode.node import Node
from mailnode.schema.butler_runs import butler_run_effects, butler_runs
from mailnode.vocabulary.send_states import SendState

log = logging.getLogger("mailnode.butler")

#: The DBOS topic a person's release is sent on, per send: ``butler.release:<send id>``.
RELEASE_TOPIC = "butler.release"


def release_topic(send_id: str) -> str:
    """The topic the run that sealed ``send_id`` waits on (a release, or the end ``tell`` sends)."""
    return f"{RELEASE_TOPIC}:{send_id}"


#: The reason a parked run ends with when its send moves to each state (None: the run stays parked).
PARKED_RUN_ENDS: dict[SendState, str | None] = {
    SendState.HELD: None,
    SendState.AWAITING: None,
    SendState.CANCELLED: "send_cancelled",
    SendState.WITHHELD: "send_withheld",
    SendState.THROTTLED: None,
    SendState.REFUSED: "send_refused",
    SendState.SUPPRESSED: "send_suppressed",
    SendState.HANDED_OVER: None,
    SendState.OUTCOME_UNKNOWN: None,
}
#: Every reason a parked run can end with because of its send.
END_REASONS = frozenset(r for r in PARKED_RUN_ENDS.values() if r is not None)
#: The state a run parked on a send that was decided against ends in.
END_STATE = "stopped"


def parked_run_end(send_state: str) -> str | None:
    """The reason a run parked on a send now in ``send_state`` ends with, or None (pure; unknown: None)."""
    try:
        return PARKED_RUN_ENDS[SendState(send_state)]
    except ValueError:
        return None


@dataclass(frozen=True)
class ParkedEnd:
    """A run ended because its send was decided against: the run, the send, the send's state, the reason."""

    run_id: str
    send_id: str
    send_state: str
    reason: str


def _parked_run(conn: Connection, org_id: str, send_id: str) -> str | None:
    """The run parked on ``send_id`` (``awaiting_release``, its effect sealed the send), or None (one statement)."""
    e, r = butler_run_effects.c, butler_runs.c
    return conn.execute(select(e.run_id).join(butler_runs, r.id == e.run_id)
                        .where(e.org_id == org_id, e.subject == send_id, e.node_type == "mail.send.propose",
                               r.state == "awaiting_release").limit(1)).scalar()


def end_parked_on(conn: Connection, *, org_id: str, send_id: str, send_state: str, at: datetime) -> ParkedEnd | None:
    """In the transaction that moved ``send_id`` to ``send_state``: end the run parked on it, if any.

    Returns what was ended, or None (the state is not an end, no run is parked on the send, or the run
    moved meanwhile). One statement when the state is an end, two when a run is parked; none otherwise.
    Call ``tell`` after the commit.
    """
    reason = parked_run_end(send_state)
    if reason is None:
        return None
    run_id = _parked_run(conn, org_id, send_id)
    if run_id is None:
        return None
    if not record.abandon(conn, run_id, state=END_STATE, reason=reason, at=at):
        return None
    log.info("butler.run_stopped run=%s send=%s reason=%s", run_id, send_id, reason)
    return ParkedEnd(str(run_id), send_id, send_state, reason)


def ended_on(conn: Connection, org_id: str, send_ids: Iterable[str]) -> list[ParkedEnd]:
    """The runs ended because one of ``send_ids`` was decided against (one statement): what ``tell`` sends."""
    ids = sorted(set(send_ids))
    if not ids:
        return []
    e, r = butler_run_effects.c, butler_runs.c
    rows = conn.execute(select(e.run_id, e.subject, r.outcome_reason).join(butler_runs, r.id == e.run_id)
                        .where(e.org_id == org_id, e.subject.in_(ids), e.node_type == "mail.send.propose",
                               r.state == END_STATE, r.outcome_reason.in_(sorted(END_REASONS)))).all()
    by_reason = {v: k for k, v in PARKED_RUN_ENDS.items() if v is not None}
    return [ParkedEnd(str(x.run_id), str(x.subject), by_reason[x.outcome_reason].value, str(x.outcome_reason))
            for x in rows]


def tell(node: Node, org_id: str, send_ids: Iterable[str]) -> list[ParkedEnd]:
    """After the commit that moved ``send_ids``: send each ended run's workflow ``{"ended": reason, ...}``.

    Returns the ends told. Nothing is sent in a process without the durable executor (the workflow reads
    its timeout there, and its close finds the record already ended). A workflow DBOS no longer holds is
    skipped: nothing waits in it. Idempotent: a message to a workflow that has ended is read by nobody.
    """
    with node.read() as conn:
        ends = ended_on(conn, org_id, send_ids)
    if not ends or not runtime.is_launched():
        return []
    from dbos import DBOS
    from dbos._error import DBOSNonExistentWorkflowError


    told = []
    for end in ends:
        message = {"ended": end.reason, "send_id": end.send_id, "state": end.send_state,
                   "at": node.clock.now().isoformat()}
        try:
            DBOS.send(end.run_id, message, topic=release_topic(end.send_id))
        except DBOSNonExistentWorkflowError:
            log.info("butler.parked_workflow_gone run=%s: its record is ended; nothing waits", end.run_id)
            continue
        told.append(end)
    return told
