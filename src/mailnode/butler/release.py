"""The human half of the Butler release gate: a person releases a Butler's send, and the run is told.

Seed 003 "The human-release gate" and "Releasing"; spec/butler.md §8.1. ``release_send`` acts on the
manifest first: one conditional update moves ``awaiting/butler_release_required`` to ``held`` with
``release_at`` at least the mailbox's hold window after the release (the person's chance to cancel runs
from their act, not from the seal), the recipients follow, and ``send.released`` is audited naming
the person, in one transaction. Only then is the run that sealed it told (``tell_run``), so a send stays
releasable after its run is gone. What telling did is a ``Resumption`` (``decide_resumption``, pure,
from the run's state and its DBOS workflow's status): a parked run whose workflow is live is sent the
release on its topic (``delivered`` when the workflow belongs to this process, ``delivered_elsewhere``
when another executor holds it, ``awaiting_recovery`` while it waits for an executor to pick it up,
``other_version`` when another mailnode version started it);
DBOS keeps the message, so the run reads it whenever its workflow next runs. A run whose workflow no
longer exists is ended ``finished/released_after_run_expired`` (``workflow_gone``); a run whose workflow
has ended while its record still waits is told nothing (``workflow_ended``: nothing would read it, and
doctor's ``butler_runs_stuck`` lists the run); a run not parked (``stopped/release_timed_out``) is left
as it is (``run_not_parked``).

Who may release: whoever holds ``send.propose`` on the send's mailbox, the authority that composing
it would have needed. Absent, another organisation's, gated for another reason (a policy hold),
already released, raced, or not permitted all answer alike: ``E_SEND_NOT_RELEASABLE`` (409,
``detail.released = false``, ``detail.reason = "not_found"``), and nothing is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from sqlalchemy import Connection, func, select, update

from mailnode import __version__, audit, budgets, runtime
from mailnode.authz import holds, mailboxes_visible
from mailnode.butler import record
from mailnode.clock import utc
from mailnode.errors import MailnodeError, conflict
from mailnode.ids import is_id
from mailnode.node import Node
from mailnode.retention import io as retention_io
from mailnode.schema.mail import mailboxes
from mailnode.schema.mail_messages import messages
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.vocabulary.send_states import SendState, StateReason

log = logging.getLogger("mailnode.butler")

_AWAITING = SendState.AWAITING.value
_GATE = StateReason.BUTLER_RELEASE_REQUIRED.value


@dataclass(frozen=True)
class Released:
    """What a release did: the send now ``held`` and the run that sealed it (None when no run did)."""

    send_id: str
    mailbox_id: str
    release_at: datetime
    run_id: str | None
    run_state: str | None


def _not_releasable(send_id: str) -> MailnodeError:
    return conflict("E_SEND_NOT_RELEASABLE", f"Send {send_id} is not waiting for a release you can give.",
                    "Only a Butler's send sealed awaiting/butler_release_required is released here, by someone "
                    "holding send.propose on its mailbox.",
                    f"Read the send (GET /api/sends/{send_id}); a policy hold or approval has its own route.",
                    send_id=send_id, released=False, reason="not_found")


def release_send(conn: Connection, *, org_id: str, principal_id: str, at: datetime, send_id: str) -> Released:
    """Move the send ``awaiting/butler_release_required -> held`` and audit ``send.released``.

    Raises ``E_SEND_NOT_RELEASABLE`` (409) as the module docstring says.
    """
    if not is_id(send_id, "snd"):
        raise _not_releasable(send_id)
    m = send_manifests.c
    row = conn.execute(select(m.id, m.mailbox_id, m.release_at, mailboxes.c.hold_window_seconds)
                       .join(mailboxes, mailboxes.c.id == m.mailbox_id)
                       .where(m.id == send_id, m.org_id == org_id, m.state == _AWAITING,
                              m.state_reason == _GATE)).first()
    if row is None or not holds(conn, org_id, principal_id, "send.propose", "mailbox", row.mailbox_id):
        raise _not_releasable(send_id)
    # The hold window is the person's chance to take the release back (cancel), so it runs from the
    # release, not from the seal: a release later than the window after the seal would leave none.
    window = budgets.SEND_HOLD_WINDOW_DEFAULT_SECONDS if row.hold_window_seconds is None else row.hold_window_seconds
    release_at = max(utc(row.release_at), at + timedelta(seconds=window))
    done = conn.execute(update(send_manifests)
                        .where(m.id == send_id, m.state == _AWAITING, m.state_reason == _GATE)
                        .values(state=SendState.HELD.value, state_reason=None, state_at=at, release_at=release_at))
    if done.rowcount != 1:
        raise _not_releasable(send_id)
    conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == send_id,
                                               send_recipients.c.submission_state == _AWAITING)
                 .values(submission_state=SendState.HELD.value, submission_state_at=at))
    audit.append(conn, org_id=org_id, at=at, action="send.released", actor_id=principal_id, subject=send_id,
                 detail={"mailbox_id": row.mailbox_id, "reason": _GATE})
    run = record.run_of_send(conn, org_id, send_id)
    return Released(send_id, row.mailbox_id, release_at, run.run_id if run else None, run.state if run else None)


class Resumption(str, Enum):
    """What telling a run about its send's release did (the answer's ``resumption``)."""

    #: The run's workflow is live in this process and was sent the release: it resumes now.
    DELIVERED = "delivered"
    #: The run's workflow is PENDING under another executor id and was sent the release: it resumes there,
    #: at once if that process is running, else when a process with that executor id starts again.
    DELIVERED_ELSEWHERE = "delivered_elsewhere"
    #: The run's workflow waits for an executor to pick it up (DBOS ``ENQUEUED`` or ``DELAYED``, as during
    #: start-up recovery) and was sent the release: it resumes when it is picked up.
    AWAITING_RECOVERY = "awaiting_recovery"
    #: The run's workflow was started by another mailnode version, which no process of this version runs
    #: (docs/operations.md, upgrading): the release is stored; the run walks on only under that version.
    OTHER_VERSION = "other_version"
    #: The run's workflow has ended (``ERROR``, ``CANCELLED``, ``MAX_RECOVERY_ATTEMPTS_EXCEEDED``,
    #: ``SUCCESS``) while its record still waits: nothing would read a release; not told.
    WORKFLOW_ENDED = "workflow_ended"
    #: The run's workflow no longer exists: the run is ended ``finished/released_after_run_expired``.
    WORKFLOW_GONE = "workflow_gone"
    #: The run is not parked on a release (it ended, for instance ``stopped/release_timed_out``): not told.
    RUN_NOT_PARKED = "run_not_parked"
    #: No Butler run sealed this send.
    NO_RUN = "no_run"
    #: This process has no durable executor, so the run was not told (it waits until its release times out).
    NO_EXECUTOR = "no_executor"


#: Workflow statuses in which a workflow still runs, or will, and so reads a message sent to it.
_LIVE_WORKFLOW = frozenset({"PENDING", "ENQUEUED", "DELAYED"})
#: The resumptions for which the release is sent on the run's topic.
SENDS = frozenset({Resumption.DELIVERED, Resumption.DELIVERED_ELSEWHERE, Resumption.AWAITING_RECOVERY,
                   Resumption.OTHER_VERSION})


def decide_resumption(run_id: str | None, run_state: str | None, launched: bool, workflow_status: str | None,
                      workflow_executor: str | None, own_executor: str, workflow_version: str | None = None,
                      own_version: str | None = None) -> Resumption:
    """Whether and how the run that sealed a released send is told (pure).

    ``workflow_status`` is DBOS's status of the run's workflow (None: no such workflow),
    ``workflow_executor`` the executor id that last ran it and ``workflow_version`` the application version
    that started it; ``own_executor`` and ``own_version`` are this process's. A status this function has
    never seen is treated as ended (fails closed: nothing claims a resumption).
    """
    if run_id is None:
        return Resumption.NO_RUN
    if run_state != "awaiting_release":
        return Resumption.RUN_NOT_PARKED
    if not launched:
        return Resumption.NO_EXECUTOR
    if workflow_status is None:
        return Resumption.WORKFLOW_GONE
    if workflow_status not in _LIVE_WORKFLOW:
        return Resumption.WORKFLOW_ENDED
    if workflow_version is not None and workflow_version != own_version:
        return Resumption.OTHER_VERSION
    if workflow_status != "PENDING":
        return Resumption.AWAITING_RECOVERY
    return Resumption.DELIVERED if workflow_executor == own_executor else Resumption.DELIVERED_ELSEWHERE


def tell_run(node: Node, released: Released, by: str) -> Resumption:
    """Tell the run that sealed ``released`` its send was released; what was done (``decide_resumption``).

    Reads the run's DBOS workflow status (one system-database read), sends the release on the run's
    topic when the workflow is live, and ends a run whose workflow is gone
    ``finished/released_after_run_expired``. The send is released whatever this returns.
    """
    launched = runtime.is_launched()
    status: str | None = None
    executor: str | None = None
    version: str | None = None
    if launched and released.run_id is not None and released.run_state == "awaiting_release":
        from dbos import DBOS

        found = DBOS.get_workflow_status(released.run_id)
        if found is not None:
            status, executor, version = str(found.status), found.executor_id, found.app_version
    decided = decide_resumption(released.run_id, released.run_state, launched, status, executor,
                                runtime.launched_executor_id() or "", version, __version__)
    if decided is Resumption.NO_EXECUTOR:
        log.warning("butler.release_not_told run=%s: no durable executor in this process", released.run_id)
    elif decided is Resumption.WORKFLOW_ENDED:
        log.warning("butler.release_not_told run=%s workflow_status=%s: the run's workflow has ended, nothing "
                    "would read the release; see doctor's butler_runs_stuck", released.run_id, status)
    elif decided is Resumption.WORKFLOW_GONE:
        return _expire(node, str(released.run_id))
    if decided not in SENDS:
        return decided
    from dbos import DBOS
    from dbos._error import DBOSNonExistentWorkflowError

    from mailnode.butler.parked import release_topic

    message: dict[str, Any] = {"send_id": released.send_id, "by": by, "at": node.clock.now().isoformat()}
    try:
        DBOS.send(str(released.run_id), message, topic=release_topic(released.send_id))
    except DBOSNonExistentWorkflowError:
        # Deleted between the status read and the send.
        return _expire(node, str(released.run_id))
    return decided


def _expire(node: Node, run_id: str) -> Resumption:
    """End a parked run whose workflow no longer exists; ``Resumption.WORKFLOW_GONE``."""
    with node.begin() as conn:
        record.abandon(conn, run_id, state="finished", reason="released_after_run_expired", at=node.clock.now())
    return Resumption.WORKFLOW_GONE


def release_scopes(conn: Connection, *, org_id: str, principal_id: str) -> frozenset[str]:
    """The mailboxes whose Butler sends ``principal_id`` may release: where they hold ``send.propose`` (one
    statement)."""
    return frozenset(mailboxes_visible(conn, org_id, principal_id, ("send.propose",)))


def _releasable_where(org_id: str, scopes: frozenset[str]) -> Any:
    m = send_manifests.c
    return (m.org_id == org_id, m.state == _AWAITING, m.state_reason == _GATE, m.mailbox_id.in_(sorted(scopes)))


def count_releasable(conn: Connection, *, org_id: str, scopes: frozenset[str]) -> int:
    """How many Butler sends wait for a release in ``scopes`` (``release_scopes``; one statement, none when
    empty)."""
    if not scopes:
        return 0
    return int(conn.execute(select(func.count()).select_from(send_manifests)
                            .where(*_releasable_where(org_id, scopes))).scalar_one())


@dataclass(frozen=True)
class Proposal:
    """A Butler's send waiting for a person's release, with the message it answers.

    ``row`` is the manifest row (``mail.thread.body_of`` reads its body); ``parent`` the answered message's
    facts ``{id, mailbox_id, from_name, from_address, subject, received_at, text}`` or None when it answers
    none; ``parent["text"]`` is None when the reader may not read that mailbox's content
    (``parent_hidden`` says why in words) or retention deleted it (``parent_deleted_at``).
    """

    row: Any
    mailbox_name: str
    parent: dict[str, Any] | None
    parent_hidden: str | None
    content_deleted_at: datetime | None


def releasable(conn: Connection, *, org_id: str, principal_id: str, scopes: frozenset[str],
               limit: int) -> list[Proposal]:
    """The Butler sends ``principal_id`` may release, oldest seal first, at most ``limit``, each with the
    message it answers. Four statements whatever their number (none when ``scopes`` is empty): the sends,
    the content-read scope, the parents, and the retention purges of both."""
    if not scopes:
        return []
    m = send_manifests.c
    rows = conn.execute(select(send_manifests, mailboxes.c.name.label("mailbox_name"))
                        .join(mailboxes, mailboxes.c.id == m.mailbox_id)
                        .where(*_releasable_where(org_id, scopes))
                        .order_by(m.sealed_at, m.id).limit(limit)).all()
    if not rows:
        return []
    readable = mailboxes_visible(conn, org_id, principal_id, ("mailbox.content.read",))
    parent_ids = sorted({r.in_reply_to_message_id for r in rows if r.in_reply_to_message_id})
    g = messages.c
    parents = {p.id: p for p in conn.execute(
        select(g.id, g.mailbox_id, g.from_name, g.from_address, g.subject, g.received_at, g.text_body)
        .where(g.org_id == org_id, g.id.in_(parent_ids))).all()} if parent_ids else {}
    purges = retention_io.purges_of(conn, [*parent_ids, *(r.id for r in rows)])
    out: list[Proposal] = []
    for r in rows:
        p = parents.get(r.in_reply_to_message_id) if r.in_reply_to_message_id else None
        parent: dict[str, Any] | None = None
        hidden: str | None = None
        if p is not None:
            may_read = p.mailbox_id in readable
            purged = purges.get(p.id)
            parent = {"id": p.id, "mailbox_id": p.mailbox_id, "from_name": p.from_name,
                      "from_address": p.from_address, "subject": p.subject, "received_at": utc(p.received_at),
                      "text": p.text_body if may_read and purged is None else None,
                      "deleted_at": purged[1] if purged else None}
            if not may_read:
                hidden = ("You may release this mailbox's Butler sends but not read its mail "
                          "(mailbox.content.read); the message it answers is shown by its sender and subject only.")
        own = purges.get(r.id)
        out.append(Proposal(r, r.mailbox_name, parent, hidden, own[1] if own else None))
    return out
