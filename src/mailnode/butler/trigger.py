"""The trigger: a materialised delivery starts one run of every published Butler listening on its address.

Seed 003 "The trigger, and the instance id"; spec/butler.md §5. ``trigger_workflow(message_id)`` is
wired into ``ingress.workflows.AFTER_MATERIALISE`` by ``mailnode.wiring.wire_hooks`` and so runs as a child
of the materialisation workflow. Its one step (``open_runs``) reads the delivery's facts, reads every published
version of the organisation, keeps those whose ``trigger`` is ``mail.received`` on the delivered-to address
(trimmed, case-insensitive; the trigger is read from the stored JSON alone, so a hand-edited program
still starts a run and is refused by the engine's re-check, visibly), and opens one ``butler_runs``
row per match, id ``<version id>-<message id>``, with the trigger facts. It then starts
``engine.run_butler`` with that id as the DBOS workflow id.

A Butler an administrator disabled (``lifecycle.disable``) starts no run; its runs already open walk on.
The pause and the loop (``butler.pause``). A Butler with a pause in force starts no run: the pause is
outer-joined into the read of published versions, so checking it adds no statement. A delivery that
replies to a Butler's proposed send (one extra statement, only for threaded mail) is matched to the
runs that proposed it; for each listening Butler it provokes, the window count (one statement) decides
whether the run opens, marked ``self_provoked`` with its ``reply_chain``, or the node pauses the Butler
first and opens nothing.

Dedup is the id twice over: DBOS returns the existing workflow for an id it has seen, and the row's
primary key refuses a second record, so the at-least-once pipeline calling this twice makes one run.
The run id is not an effect key: each send still mints its own manifest id. The trigger's statements
are spent by the materialisation, never charged to a run.

Trigger facts (the closed ``event.*`` set, ``FACT_NAMES``): ``message_id``, ``conversation_id``,
``case_id``, ``mailbox_id``, ``mailbox_address`` (the delivered-to address, lower-cased),
``received_at`` (ISO 8601 UTC), ``subject`` and ``from`` (``""`` when absent; ``from`` is the header,
readable by guards and never used to address mail), ``return_path`` (the envelope sender, ``""`` for
the null reverse path), ``parse_error``, ``automated`` and ``reply_refusal`` (null or the classifier's
token), ``dmarc``, ``spf``, ``dkim`` (the trusted verdicts, null when none), ``attachments`` and
``attachments_dangerous`` (counts).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from dbos import DBOS, SetWorkflowID
from sqlalchemy import Connection, select

from mailnode import budgets, runtime
from mailnode.butler import pause, record
from mailnode.butler.engine import run_butler
from mailnode.schema.butler import butler_versions, butlers
from mailnode.schema.butler_runs import butler_pauses
from mailnode.schema.mail_messages import messages

log = logging.getLogger("mailnode.butler")

TRIGGER_EVENT = "mail.received"

#: The closed set of ``event.*`` facts a delivery run carries.
FACT_NAMES = ("message_id", "conversation_id", "case_id", "mailbox_id", "mailbox_address", "received_at", "subject",
              "from", "return_path", "parse_error", "automated", "reply_refusal", "dmarc", "spf", "dkim",
              "attachments", "attachments_dangerous")


def run_id_of(version_id: str, message_id: str) -> str:
    """The run id (and DBOS workflow id) of one version's run for one delivery."""
    return f"{version_id}-{message_id}"


@dataclass(frozen=True)
class Delivery:
    """A materialised delivery as the trigger reads it: its organisation, the ``event.*`` facts, and the
    Message-IDs it replies to (``pause.candidate_ids``; not a fact a program sees)."""

    org_id: str
    facts: dict[str, Any]
    replies_to: list[str]


def delivery(conn: Connection, message_id: str) -> Delivery | None:
    """The delivery's facts and threading ids (one statement), or None for no such message."""
    m = messages.c
    row = conn.execute(select(m.id, m.org_id, m.conversation_id, m.case_id, m.mailbox_id, m.envelope_to,
                              m.envelope_from, m.received_at, m.subject, m.from_address, m.parse_error, m.automated,
                              m.reply_refusal, m.dmarc, m.spf, m.dkim, m.attachments, m.dangerous_attachments,
                              m.in_reply_to, m.references)
                       .where(m.id == message_id)).first()
    if row is None:
        return None
    facts = {
        "message_id": row.id, "conversation_id": row.conversation_id, "case_id": row.case_id,
        "mailbox_id": row.mailbox_id, "mailbox_address": (row.envelope_to or "").strip().lower(),
        "received_at": row.received_at.isoformat(), "subject": row.subject or "", "from": row.from_address or "",
        "return_path": row.envelope_from or "", "parse_error": row.parse_error, "automated": row.automated,
        "reply_refusal": row.reply_refusal, "dmarc": row.dmarc, "spf": row.spf, "dkim": row.dkim,
        "attachments": row.attachments, "attachments_dangerous": row.dangerous_attachments,
    }
    return Delivery(str(row.org_id), facts, pause.candidate_ids(row.in_reply_to, row.references or []))


def delivery_facts(conn: Connection, message_id: str) -> tuple[str, dict[str, Any]] | None:
    """``(org_id, facts)`` of a materialised delivery (one statement), or None for no such message."""
    found = delivery(conn, message_id)
    return None if found is None else (found.org_id, found.facts)


def listening_on(ast_json: str) -> str | None:
    """The address a stored program's ``mail.received`` trigger names (trimmed, lower-cased), else None."""
    try:
        doc = json.loads(ast_json)
    except ValueError:
        return None
    trigger = doc.get("trigger") if isinstance(doc, dict) else None
    if not isinstance(trigger, dict) or trigger.get("event") != TRIGGER_EVENT:
        return None
    mailbox = trigger.get("mailbox")
    return mailbox.strip().lower() if isinstance(mailbox, str) else None


def published_versions(conn: Connection, org_id: str) -> list[Any]:
    """Every published version with its Butler's name, whether it is disabled (``disabled_at``), the pause in
    force (``pause_id``, NULL when none) and when its last pause was resumed: one statement, the pause
    riding on the read."""
    v = butler_versions.c
    return list(conn.execute(
        select(v.id, v.butler_id, v.ast_json, butlers.c.name, butlers.c.disabled_at,
               butler_pauses.c.id.label("pause_id"),
               pause.last_resumed_at(v.org_id, v.butler_id).label("last_resumed_at"))
        .join(butlers, butlers.c.id == v.butler_id)
        .outerjoin(butler_pauses, pause.in_force_on(v.org_id, v.butler_id))
        .where(v.org_id == org_id, v.state == "published").order_by(v.id)).all())


def open_runs_in(conn: Connection, message_id: str, now: Any) -> list[str]:
    """Open the runs of one delivery in ``conn``'s transaction (see ``open_runs``)."""
    found = delivery(conn, message_id)
    if found is None:
        log.warning("butler.trigger_no_message message=%s", message_id)
        return []
    facts = found.facts
    listening = [v for v in published_versions(conn, found.org_id)
                 if listening_on(v.ast_json) == facts["mailbox_address"]]
    provoked = pause.provocations(conn, found.org_id, found.replies_to) if listening else []
    chain = pause.reply_chain(provoked)
    run_ids: list[str] = []
    for version in listening:
        if version.disabled_at is not None:
            log.info("butler.disabled butler=%s message=%s: disabled by an administrator, no run started",
                     version.butler_id, message_id)
            continue
        if version.pause_id is not None:
            log.warning("butler.paused butler=%s pause=%s message=%s: E_BUTLER_PAUSED, no run started",
                        version.butler_id, version.pause_id, message_id)
            continue
        self_provoked = pause.is_self_provoked(version.butler_id, provoked)
        if self_provoked:
            since = pause.window_start(now, version.last_resumed_at)
            figure = pause.reading(pause.self_provoked_since(
                conn, found.org_id, version.butler_id, since, exclude_run_id=run_id_of(version.id, message_id)), chain)
            if figure.tripped:
                placed = pause.place(conn, org_id=found.org_id, butler_id=version.butler_id, name=version.name,
                                     figure=figure, message_id=message_id, at=now)
                log.warning("butler.loop_detected butler=%s pause=%s message=%s self_provoked=%d limit=%d",
                            version.butler_id, placed, message_id, figure.self_provoked, figure.limit)
                continue
        run_id = run_id_of(version.id, message_id)
        if len(run_id) > budgets.BUTLER_RUN_ID_MAX_CHARS:
            log.error("butler.run_id_too_long run=%s", run_id)
            continue
        record.open_run(conn, run_id=run_id, org_id=found.org_id, butler_id=version.butler_id, version_id=version.id,
                        trigger_event=TRIGGER_EVENT, trigger_key=message_id, facts=facts, at=now,
                        provoked_by=provoked[0].run_id if provoked else None, reply_chain=list(chain) or None,
                        self_provoked=self_provoked)
        run_ids.append(run_id)
    return run_ids


@DBOS.step()
def open_runs(message_id: str) -> list[str]:
    """Open a run row for every published, unpaused Butler listening on the delivery's address, after the
    loop check; return every matching run id (already open or not), in version-id order."""
    node = runtime.current_node()
    with node.begin() as conn:
        return open_runs_in(conn, message_id, node.clock.now())


@DBOS.workflow()
@runtime.drained_on_stop
def trigger_workflow(message_id: str) -> list[str]:
    """Start (or find) the run of every listening Butler for one delivery; returns the run ids."""
    run_ids = open_runs(message_id)
    for run_id in run_ids:
        with SetWorkflowID(run_id):
            DBOS.start_workflow(run_butler, run_id)
    if run_ids:
        log.info("butler.triggered message=%s runs=%s", message_id, ",".join(run_ids))
    return run_ids
