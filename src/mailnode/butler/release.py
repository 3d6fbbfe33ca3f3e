"""The human half of the Butler release gate: a person releases a Butler's send, and the run is told.

Seed 003 "The human-release gate" and "Releasing"; spec/butler.md §8.1. ``release_send`` acts on the
manifest first: one conditional update moves ``awaiting/butler_release_required`` to ``held`` with
``release_at`` at least the mailbox's hold window after the release (the person's chance to cancel runs
from their act, not from the seal), the recipients follow, and ``send.released`` is audited naming
the person, in one transaction. Only then is the run that sealed it told (``tell_run``), so a send stays
releasable after its run is gone: a run still parked is sent the release on its topic and resumes; a
run whose workflow no longer exists is ended ``finished/released_after_run_expired``; a run that
already ended (``stopped/release_timed_out``) is left as it is.

Who may release: whoever holds ``send.propose`` on the send's mailbox, the authority that composing
it would have needed. Absent, another organisation's, gated for another reason (a policy hold),
already released, raced, or not permitted all answer alike: ``E_SEND_NOT_RELEASABLE`` (409,
``detail.released = false``, ``detail.reason = "not_found"``), and nothing is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select, update

from mailnode import audit, budgets, runtime
from mailnode.authz import holds
from mailnode.butler import record
from mailnode.clock import utc
from mailnode.errors import MailnodeError, conflict
from mailnode.ids import is_id
from mailnode.node import Node
from mailnode.outbound.states import SendState, StateReason
from mailnode.mail.tables import mailboxes
from mailnode.outbound.tables import send_manifests, send_recipients

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
                       .where(m.id == send_id, m.org_id == org_id, m.state == _AWAITING, m.state_reason == _GATE)).first()
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


def tell_run(node: Node, released: Released, by: str) -> bool:
    """Tell the parked run its send was released; True when a parked run was sent the release.

    A run whose workflow is gone is ended ``finished/released_after_run_expired``; a run that is not
    parked, or a process without a durable executor, is not told (the send is released regardless).
    """
    if released.run_id is None or released.run_state != "awaiting_release":
        return False
    if not runtime.is_launched():
        log.warning("butler.release_not_told run=%s: no durable executor in this process", released.run_id)
        return False
    from dbos import DBOS
    from dbos._error import DBOSNonExistentWorkflowError

    from mailnode.butler.engine import release_topic

    message: dict[str, Any] = {"send_id": released.send_id, "by": by, "at": node.clock.now().isoformat()}
    try:
        DBOS.send(released.run_id, message, topic=release_topic(released.send_id))
    except DBOSNonExistentWorkflowError:
        with node.begin() as conn:
            record.abandon(conn, released.run_id, state="finished", reason="released_after_run_expired",
                           at=node.clock.now())
        return False
    return True
