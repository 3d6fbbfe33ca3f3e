"""Inspect a run, and re-run it: the two run-scoped replay modes (``inspect``, ``re-run``).

Seed 003 "Replay: four modes, and the one sentence they all rest on"; spec/butler.md §8.2; issue 8. A
replay inherits the input (the recorded trigger facts) and re-asks every judgement: policy, approvals,
the breakers and the domain pause at the seal, the Butler's authority at every effect, the Butler pause
before the run exists and in it, and the version's publication state. The two send-scoped modes
(``retry-effect``, ``resend-may-duplicate``) live on the send (``POST /api/sends/{id}/retry``).

``inspect`` (administrators; anyone else 404 ``E_NO_SUCH_BUTLER_RUN``) writes nothing and returns: the
run; its program (the run's version: state, trigger, entry, nodes, whether it still checks, findings);
the trigger facts, with the mail-content facts null and listed under ``trigger_facts_redacted`` unless
the caller holds ``mailbox.metadata.read`` or ``mailbox.content.read`` on the delivery's mailbox, or a live
supervised grant on it (then ``supervised.opened`` is audited first, and ``supervised_grant_id`` names it)
(``FACT_DISCLOSURE`` classifies every fact; a key it does not know is content); the effect rows in order,
each send with its current state, reason in words, ``content_deleted_at`` and retry offer
(``outbound.states.retry_offer``, ``none/content_deleted`` once retention deleted the send's body);
the replays made of it; whether a re-run is available and why not; and what a run record cannot tell.

``re-run`` (administrators) opens a new run over the source run's recorded facts with the Butler's
*live* version, id ``<version id>-<brp_...>`` and its own pot, marked ``replay_of`` / ``replayed_by``,
audited ``butler.replayed`` in the same transaction; the caller then starts it (``start``). Walking the
live version, rather than the source's own, is mailnode's decision: it is what lets "fix the program,
then re-run" work, and the content rule (``replay_rule``) keeps a re-run from sending anything the
source already proposed. Refusals (nothing written): ``E_NO_SUCH_BUTLER_RUN`` (404),
``E_BUTLER_REPLAY_MODE_UNKNOWN`` (422), ``E_BUTLER_REPLAY_INPUT_NOT_RECORDED``,
``E_BUTLER_REPLAY_VERSION_NOT_PUBLISHED``, ``E_BUTLER_REPLAY_PROGRAM_DOES_NOT_CHECK``,
``E_BUTLER_PAUSED``, ``E_BUTLER_DISABLED`` (409).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, func, select

from mailnode import audit, budgets, runtime
from mailnode.authz import METADATA_READERS, holds, is_admin
from mailnode.butler import pause, record
from mailnode.butler.check import check_stored
from mailnode.errors import MailnodeError, conflict, invalid, limit_exceeded, not_found
from mailnode.governance import supervised
from mailnode.ids import is_id, new_id
from mailnode.node import Node
from mailnode.retention import io as retention_io
from mailnode.schema.butler import butler_versions, butlers
from mailnode.schema.butler_runs import butler_pauses, butler_run_effects, butler_runs
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.vocabulary.send_states import SendState, retry_offer, words_for

log = logging.getLogger("mailnode.butler")

_R = butler_runs.c
_E = butler_run_effects.c
_V = butler_versions.c

FactClass = Literal["content", "operational"]

#: Every ``event.*`` fact a delivery run carries, classified. Total over ``trigger.FACT_NAMES`` (a test
#: fails until a new fact is classified here); a stored key not in it is treated as content.
FACT_DISCLOSURE: dict[str, FactClass] = {
    "message_id": "operational",
    "conversation_id": "operational",
    "case_id": "operational",
    "mailbox_id": "operational",
    "mailbox_address": "operational",
    "received_at": "operational",
    "subject": "content",
    "from": "content",
    "return_path": "content",
    "parse_error": "content",
    "automated": "operational",
    "reply_refusal": "operational",
    "dmarc": "operational",
    "spf": "operational",
    "dkim": "operational",
    "attachments": "operational",
    "attachments_dangerous": "operational",
}

#: What a run record cannot tell, said in every inspection.
NOT_RECORDED = ("Pure nodes (guard, switch, map, foreach, join, wait, stop, transform, validate) leave no rows, "
                "so which branch a guard or switch took, and what a transform computed, cannot be recovered from "
                "the record; the effect rows below are everything the run did to the world. The counts on the run "
                "row are computed only when a run closes: a run ended by a pause or a lost workflow states none.")
#: Why the content facts are null, when they are.
REDACTED_WHY = ("These facts are mail content; they are shown to holders of mailbox.metadata.read or "
                "mailbox.content.read on the mailbox the delivery landed in (POST /api/access), or under a live "
                "supervised grant on it (POST /api/supervised-grants, approved by two deciders; every read it "
                "opens is audited supervised.opened).")

#: The replay modes this node builds, and where the send-scoped two live.
RUN_MODES = ("re-run",)
SEND_MODES = ("retry-effect", "resend-may-duplicate")


def fact_class(key: str) -> FactClass:
    """The disclosure class of a stored fact; an unknown key is content."""
    return FACT_DISCLOSURE.get(key, "content")


def disclose(facts: dict[str, Any], may_read: bool) -> tuple[dict[str, Any], list[str]]:
    """``(facts as shown, redacted keys)``: content facts null unless ``may_read`` (pure)."""
    if may_read:
        return dict(facts), []
    redacted = sorted(k for k in facts if fact_class(k) == "content")
    return {k: (None if k in redacted else v) for k, v in facts.items()}, redacted


def _no_run(run_id: str) -> MailnodeError:
    return not_found("E_NO_SUCH_BUTLER_RUN", f"No Butler run {run_id}.",
                     fix="Butler runs are shown to administrators; list them with GET /api/butler-runs.",
                     run_id=run_id)


def _source(conn: Connection, org_id: str, principal_id: str, run_id: str) -> Any:
    """The run row with its version, its Butler's name and live version, and the pause in force (one statement).

    ``E_NO_SUCH_BUTLER_RUN`` (404) for an absent run and for anyone but an administrator alike.
    """
    if not is_admin(conn, org_id, principal_id):
        raise _no_run(run_id)
    live = butler_versions.alias("live")
    row = conn.execute(
        select(butler_runs, _V.state.label("version_state"), _V.ast_json, butlers.c.name.label("butler_name"),
               butlers.c.disabled_at,
               live.c.id.label("live_id"), live.c.ast_json.label("live_ast_json"),
               butler_pauses.c.id.label("pause_id"))
        .join(butler_versions, _V.id == _R.version_id).join(butlers, butlers.c.id == _R.butler_id)
        .outerjoin(live, (live.c.butler_id == _R.butler_id) & (live.c.state == "published"))
        .outerjoin(butler_pauses, pause.in_force_on(_R.org_id, _R.butler_id))
        .where(_R.id == run_id, _R.org_id == org_id)).first()
    if row is None:
        raise _no_run(run_id)
    return row


def program_json(version_id: str, state: str, ast_json: str, pot: int) -> dict[str, Any]:
    """A stored program as inspect shows it: its trigger, entry and nodes, and whether it still checks
    against ``pot`` (``Settings.butler_run_pot``)."""
    checked = check_stored(ast_json, pot=pot)
    try:
        doc = json.loads(ast_json)
    except ValueError:
        doc = None
    doc = doc if isinstance(doc, dict) else {}
    raw_nodes = doc.get("nodes")
    nodes: list[Any] = raw_nodes if isinstance(raw_nodes, list) else []
    return {"version_id": version_id, "state": state, "trigger": doc.get("trigger"), "entry": doc.get("entry"),
            "nodes": [{"id": n.get("id"), "type": n.get("type")} for n in nodes if isinstance(n, dict)],
            "checks": checked.ok, "findings": [f.render() for f in checked.findings]}


@dataclass(frozen=True)
class ReRunAvailability:
    """Whether a re-run may start now, and the token saying why not."""

    available: bool
    why: str | None

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        return {"available": self.available, "why": self.why}


def availability(row: Any, pot: int) -> ReRunAvailability:
    """Decide a re-run over the ``_source`` row (pure): the input, the live version, its check against
    ``pot`` (``Settings.butler_run_pot``), the pause."""
    if not row.trigger_facts:
        return ReRunAvailability(False, "input_not_recorded")
    if row.live_id is None:
        return ReRunAvailability(False, "version_not_published")
    if not check_stored(row.live_ast_json, pot=pot).ok:
        return ReRunAvailability(False, "program_does_not_check")
    if row.pause_id is not None:
        return ReRunAvailability(False, "butler_paused")
    if row.disabled_at is not None:
        return ReRunAvailability(False, "butler_disabled")
    return ReRunAvailability(True, None)


def _effects_with_sends(conn: Connection, org_id: str, run_id: str) -> list[dict[str, Any]]:
    """The run's effect rows in order, each send with its state, words, ``content_deleted_at`` and retry
    offer, which is ``none/content_deleted`` once retention deleted the send's body
    (``retention_io.purges_of``; spec/transactional.md §5). Four statements."""
    m = send_manifests.c
    rows = conn.execute(
        select(butler_run_effects, m.id.label("send_id"), m.state.label("send_state"),
               m.state_reason.label("send_reason"), m.fidelity)
        .select_from(butler_run_effects.outerjoin(send_manifests, (m.id == _E.subject) & (m.org_id == _E.org_id)))
        .where(_E.run_id == run_id).order_by(_E.seq)).all()
    send_ids = sorted({r.send_id for r in rows if r.send_id is not None})
    ambiguous: dict[str, int] = {}
    resent: dict[str, list[str]] = {}
    purges = retention_io.purges_of(conn, send_ids)
    if send_ids:
        ambiguous = {r.manifest_id: int(r.n) for r in conn.execute(
            select(send_recipients.c.manifest_id, func.count().label("n"))
            .where(send_recipients.c.manifest_id.in_(send_ids),
                   send_recipients.c.submission_state == SendState.OUTCOME_UNKNOWN.value)
            .group_by(send_recipients.c.manifest_id)).all()}
        for r in conn.execute(select(m.id, m.resend_of).where(m.org_id == org_id, m.resend_of.in_(send_ids))
                              .order_by(m.id)).all():
            resent.setdefault(r.resend_of, []).append(r.id)
    out = []
    for r in rows:
        item = record.effect_json(r)
        if r.node_type == "mail.send.propose" and is_id(r.subject, "snd"):
            item["send"] = None if r.send_id is None else {
                "id": r.send_id, "state": r.send_state, "state_reason": r.send_reason,
                "reason_words": words_for(r.send_state, r.send_reason), "fidelity": r.fidelity,
                "retry": retry_offer(r.send_state, ambiguous_recipients=ambiguous.get(r.send_id, 0),
                                     content_deleted=r.send_id in purges).to_json(),
                "content_deleted_at": (purges[r.send_id][1].isoformat() if r.send_id in purges else None),
                "resent_as": resent.get(r.send_id, [])}
        out.append(item)
    return out


def inspect(conn: Connection, *, org_id: str, principal_id: str, run_id: str, pot: int,
            at: datetime | None = None) -> dict[str, Any]:
    """The inspection of one run (see the module docstring); administrators only.

    ``pot`` is ``Settings.butler_run_pot``, against which the program's ``checks`` is judged. Writes
    nothing, except ``supervised.opened`` when a live supervised grant (``governance.supervised``) is what
    opens the content facts: it is appended in ``conn``'s transaction before they are returned, and a
    failure to append raises, so nothing is disclosed unrecorded. ``at`` is the reading time (needed for the
    grant arm; without it no grant is consulted).
    """
    row = _source(conn, org_id, principal_id, run_id)
    facts = dict(row.trigger_facts or {})
    mailbox_id = facts.get("mailbox_id")
    may_read = is_id(mailbox_id, "mbx") and holds(conn, org_id, principal_id, METADATA_READERS, "mailbox",
                                                 str(mailbox_id))
    opened_by: Any = None
    if not may_read and at is not None and is_id(mailbox_id, "mbx") and any(fact_class(k) == "content" for k in facts):
        opened_by = supervised.live_grant(conn, org_id=org_id, grantee_id=principal_id, mailbox_id=str(mailbox_id),
                                          now=at)
        if opened_by is not None:
            # The disclosure is recorded before it is made (seed 003: recordDisclosure throws).
            supervised.record_opened(conn, org_id=org_id, reader_id=principal_id, at=at, grant=opened_by,
                                     subject=run_id, what="butler_run.trigger_facts",
                                     fields=sorted(k for k in facts if fact_class(k) == "content"))
            may_read = True
    shown, redacted = disclose(facts, may_read)
    replays = conn.execute(select(_R.id, _R.version_id, _R.state, _R.outcome_reason, _R.started_at, _R.replayed_by)
                           .where(_R.org_id == org_id, _R.replay_of == run_id).order_by(_R.started_at, _R.id)).all()
    return {
        "run": {**record.run_json(row), "butler_name": row.butler_name},
        "program": program_json(row.version_id, row.version_state, row.ast_json, pot),
        "trigger_facts": shown,
        "trigger_facts_redacted": {"keys": redacted, "why": REDACTED_WHY} if redacted else None,
        "effects": _effects_with_sends(conn, org_id, run_id),
        "replays": [{"id": r.id, "version_id": r.version_id, "state": r.state, "outcome_reason": r.outcome_reason,
                     "started_at": r.started_at.isoformat(), "replayed_by": r.replayed_by} for r in replays],
        "re_run": availability(row, pot).to_json(),
        "pause_id": row.pause_id,
        "supervised_grant_id": opened_by.id if opened_by is not None else None,
        "not_recorded": NOT_RECORDED,
    }


# --- re-run ------------------------------------------------------------------------------------------------

def check_mode(mode: str) -> None:
    """Refuse a mode this route does not perform: ``E_BUTLER_REPLAY_MODE_UNKNOWN`` (422)."""
    if mode in RUN_MODES:
        return
    fix = ("That mode acts on a send: POST /api/sends/{id}/retry." if mode in SEND_MODES
           else 'Send {"mode": "re-run"}.')
    raise invalid("E_BUTLER_REPLAY_MODE_UNKNOWN", f"{mode!r} is not a replay mode of a run.",
                  f"A run is replayed with one of: {', '.join(RUN_MODES)}.", fix, mode=mode)


_REFUSALS: dict[str, tuple[str, str, str]] = {
    "input_not_recorded": ("E_BUTLER_REPLAY_INPUT_NOT_RECORDED", "The run's trigger facts were not recorded.",
                           "A replay inherits its input; there is nothing to walk over."),
    "version_not_published": ("E_BUTLER_REPLAY_VERSION_NOT_PUBLISHED", "The Butler has no published version.",
                              "A re-run walks the Butler's live version, and a re-run is a run."),
    "program_does_not_check": ("E_BUTLER_REPLAY_PROGRAM_DOES_NOT_CHECK", "The live program no longer checks.",
                               "The engine would refuse it before any effect."),
    "butler_paused": ("E_BUTLER_PAUSED", "The Butler is paused.",
                      "A paused Butler starts no run, a re-run included."),
    "butler_disabled": ("E_BUTLER_DISABLED", "The Butler is disabled.",
                        "A disabled Butler starts no run, a re-run included."),
}


def _fix(why: str, row: Any) -> str:
    if why == "butler_paused":
        return f"Resume it first: POST /api/butler-pauses/{row.pause_id}/resume with a reason."
    if why == "butler_disabled":
        return f"Enable it first: POST /api/butlers/{row.butler_id}/enable (mailnode butler enable {row.butler_id})."
    if why == "input_not_recorded":
        return "Nothing changes this run; a new delivery starts a new one."
    return (f"Publish a version that checks: PUT /api/butlers/{row.butler_id}/draft, "
            f"then POST /api/butlers/{row.butler_id}/publish.")


def open_rerun(conn: Connection, *, org_id: str, principal_id: str, run_id: str, at: datetime,
               pot: int) -> dict[str, Any]:
    """Open a re-run of ``run_id`` and audit ``butler.replayed`` (one transaction, the caller's).

    Returns ``{"mode": "re-run", "run_id", "replay_of", "version_id"}``; the run is not started here
    (``start``). Raises the codes in the module docstring.
    """
    row = _source(conn, org_id, principal_id, run_id)
    decided = availability(row, pot)
    if decided.why is not None:
        code, what, why = _REFUSALS[decided.why]
        raise conflict(code, what, why, _fix(decided.why, row), run_id=run_id, butler_id=row.butler_id,
                       reason=decided.why)
    new_run = f"{row.live_id}-{new_id('brp')}"
    if len(new_run) > budgets.BUTLER_RUN_ID_MAX_CHARS:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "BUTLER_RUN_ID_MAX_CHARS", budgets.BUTLER_RUN_ID_MAX_CHARS,
                             len(new_run), "Report it: a version id and a replay id never exceed it.")
    record.open_run(conn, run_id=new_run, org_id=org_id, butler_id=row.butler_id, version_id=row.live_id,
                    trigger_event=row.trigger_event, trigger_key=row.trigger_key, facts=dict(row.trigger_facts),
                    at=at, replay_of=run_id, replayed_by=principal_id)
    effects = conn.execute(select(func.count()).select_from(butler_run_effects).where(_E.run_id == run_id)).scalar_one()
    audit.append(conn, org_id=org_id, at=at, action="butler.replayed", actor_id=principal_id, subject=row.butler_id,
                 detail={"mode": "re-run", "run_id": new_run, "replay_of": run_id, "version_id": row.live_id,
                         "source_version_id": row.version_id, "trigger_key": row.trigger_key,
                         "original_state": row.state, "original_reason": row.outcome_reason,
                         "original_effects": int(effects)})
    return {"mode": "re-run", "run_id": new_run, "replay_of": run_id, "version_id": row.live_id}


def start(node: Node, run_id: str) -> None:
    """Start the opened re-run as its DBOS workflow; a failure ends it ``failed/replay_instance_not_created``
    and re-raises. Raises ``E_EXECUTOR_NOT_RUNNING`` (500) in a process without the durable executor."""
    runtime.current_node()
    from dbos import DBOS, SetWorkflowID

    from mailnode.butler.engine import run_butler

    try:
        with SetWorkflowID(run_id):
            DBOS.start_workflow(run_butler, run_id)
    except Exception:
        with node.begin() as conn:
            record.abandon(conn, run_id, state="failed", reason="replay_instance_not_created", at=node.clock.now())
        raise
    log.info("butler.replayed run=%s", run_id)
