"""What settling an approval does to its subject, per subject kind: each a conditional UPDATE.

Called by ``governance.approvals`` inside the deciding transaction, after the approval row itself moved
(so the approval and its effect commit together or not at all). Each returns an ``Effect``: whether the
subject moved (a conditional UPDATE that matched a row), an audit entry to write beside it, and what the
API reports. A subject that had already moved (a send cancelled meanwhile) reports ``applied=False``.

``send_manifest`` (spec/outbound.md §6.2): approved: ``awaiting/policy_approval_required`` -> ``held``,
``state_reason`` NULL, recipients ``awaiting`` -> ``held`` (``release_at`` unchanged); denied: ->
``withheld/approval_denied``; unsatisfiable after a withdrawal: -> ``withheld/approval_unsatisfiable``.
``domain_pause`` (seed 000): approved: ``placed_at`` set, ``domain.pause_placed`` audited; denied or
unsatisfiable: nothing (the row stays, ``placed_at`` NULL, as the record of a refused request).
``hold_lift`` (spec/outbound.md §7; issue 9): approved: the hold named by the ``hold_lifts`` row gets
``lifted_at``, ``lifted_reason`` (copied from the request) and ``lift_id``, ``hold.lifted`` audited;
denied or unsatisfiable: nothing (the hold stays in force; the lift row records the refused request).

The send state and reason tokens are ``vocabulary.send_states`` values, written here as literals so this
module depends only on the tables; ``tests/governance/test_pure.py`` checks them against that vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, select, update

from mailnode.ids import prefix_of
from mailnode.schema.governance import domain_pauses
from mailnode.schema.governance_supervised import supervised_grants
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.schema.retention import hold_lifts, holds

AWAITING = "awaiting"
HELD = "held"
BUTLER_RELEASE_REQUIRED = "butler_release_required"
WITHHELD = "withheld"
POLICY_APPROVAL_REQUIRED = "policy_approval_required"
APPROVAL_DENIED = "approval_denied"
APPROVAL_UNSATISFIABLE = "approval_unsatisfiable"


@dataclass(frozen=True)
class Effect:
    """The result of applying a settlement to a subject.

    Attributes:
        applied: the conditional UPDATE matched (the subject moved).
        report: what the API adds to the decision (``{"manifest_state": "held"}``, ``{"domain_paused": true}``).
        audit_action / audit_subject / audit_detail: an entry to write beside it, or None.
    """

    applied: bool
    report: dict[str, Any] = field(default_factory=dict)
    audit_action: str | None = None
    audit_subject: str | None = None
    audit_detail: dict[str, Any] = field(default_factory=dict)


def _manifest_state(conn: Connection, manifest_id: str) -> str | None:
    return conn.execute(select(send_manifests.c.state).where(send_manifests.c.id == manifest_id)).scalar()


def _move_send(conn: Connection, manifest_id: str, now: datetime, state: str, reason: str | None,
               last_error: str | None) -> Effect:
    m = send_manifests.c
    done = conn.execute(update(send_manifests)
                        .where(m.id == manifest_id, m.state == AWAITING, m.state_reason == POLICY_APPROVAL_REQUIRED)
                        .values(state=state, state_reason=reason, state_at=now, last_error=last_error))
    if done.rowcount != 1:
        return Effect(False, {"manifest_state": _manifest_state(conn, manifest_id)})
    r = send_recipients.c
    conn.execute(update(send_recipients)
                 .where(r.manifest_id == manifest_id, r.submission_state == AWAITING)
                 .values(submission_state=state, submission_state_at=now))
    return Effect(True, {"manifest_state": state})


def send_approved(conn: Connection, subject_id: str, now: datetime, note: str = "") -> Effect:
    """A send's approval completed: ``awaiting/policy_approval_required`` -> ``held`` (reason NULL).

    A Butler's send goes to ``awaiting/butler_release_required`` instead: the approval outranked the
    Butler release gate at seal (the total order), so a person's release is still owed (seed 003).
    """
    author = conn.execute(select(send_manifests.c.author_id).where(send_manifests.c.id == subject_id)).scalar()
    if isinstance(author, str) and prefix_of(author) == "btl":
        return _move_send(conn, subject_id, now, AWAITING, BUTLER_RELEASE_REQUIRED, None)
    return _move_send(conn, subject_id, now, HELD, None, None)


def send_denied(conn: Connection, subject_id: str, now: datetime, note: str = "") -> Effect:
    """A send's approver refused: -> ``withheld/approval_denied``."""
    return _move_send(conn, subject_id, now, WITHHELD, APPROVAL_DENIED, note or "An approver refused this send.")


def send_unsatisfiable(conn: Connection, subject_id: str, now: datetime, note: str = "") -> Effect:
    """A withdrawal left a send's approval unfillable: -> ``withheld/approval_unsatisfiable``."""
    return _move_send(conn, subject_id, now, WITHHELD, APPROVAL_UNSATISFIABLE,
                      note or "The approval this send needs can no longer be given.")


def pause_placed(conn: Connection, subject_id: str, now: datetime, note: str = "") -> Effect:
    """Two administrators approved: the pause is placed (``placed_at``) and ``domain.pause_placed`` audited."""
    p = domain_pauses.c
    row = conn.execute(select(domain_pauses).where(p.id == subject_id)).first()
    if row is None:
        return Effect(False, {"domain_paused": False})
    done = conn.execute(update(domain_pauses)
                        .where(and_(p.id == subject_id, p.placed_at.is_(None), p.lifted_at.is_(None)))
                        .values(placed_at=now))
    if done.rowcount != 1:
        return Effect(False, {"domain_paused": False})
    return Effect(True, {"domain_paused": True, "pause_id": subject_id, "domain": row.domain},
                  "domain.pause_placed", subject_id,
                  {"pause_id": subject_id, "domain": row.domain, "reason": row.reason,
                   "requested_by": row.requested_by})


def nothing(conn: Connection, subject_id: str, now: datetime, note: str = "") -> Effect:
    """No change to the subject (a refused pause request stays as the record that it was refused)."""
    return Effect(True)


def hold_lifted(conn: Connection, subject_id: str, now: datetime, note: str = "") -> Effect:
    """Two deciders approved a lift: the hold is lifted (only if still in force) and ``hold.lifted`` audited."""
    lift = conn.execute(select(hold_lifts).where(hold_lifts.c.id == subject_id)).first()
    if lift is None:
        return Effect(False, {"hold_lifted": False})
    h = holds.c
    done = conn.execute(update(holds).where(h.id == lift.hold_id, h.lifted_at.is_(None))
                        .values(lifted_at=now, lifted_reason=lift.reason, lift_id=subject_id))
    if done.rowcount != 1:
        return Effect(False, {"hold_lifted": False, "hold_id": lift.hold_id})
    return Effect(True, {"hold_lifted": True, "hold_id": lift.hold_id}, "hold.lifted", lift.hold_id,
                  {"hold_id": lift.hold_id, "lift_id": subject_id, "reason": lift.reason,
                   "requested_by": lift.requested_by})


def hold_lift_refused(conn: Connection, subject_id: str, now: datetime, note: str = "") -> Effect:
    """A lift was refused or can no longer be approved: the hold stays in force."""
    return Effect(True, {"hold_lifted": False})


def supervised_granted(conn: Connection, subject_id: str, now: datetime, note: str = "") -> Effect:
    """Two deciders approved a supervised grant: it is live from ``now`` for its ``duration_seconds`` and
    ``supervised.granted`` is audited (only if it was still a request)."""
    g = supervised_grants.c
    row = conn.execute(select(supervised_grants).where(g.id == subject_id)).first()
    if row is None:
        return Effect(False, {"supervised_granted": False})
    expires = now + timedelta(seconds=int(row.duration_seconds))
    done = conn.execute(update(supervised_grants)
                        .where(g.id == subject_id, g.granted_at.is_(None), g.refused_at.is_(None))
                        .values(granted_at=now, expires_at=expires))
    if done.rowcount != 1:
        return Effect(False, {"supervised_granted": False, "grant_id": subject_id})
    return Effect(True, {"supervised_granted": True, "grant_id": subject_id, "expires_at": expires.isoformat()},
                  "supervised.granted", subject_id,
                  {"mailbox_id": row.mailbox_id, "grantee_id": row.grantee_id, "scope": row.scope,
                   "reason": row.reason, "expires_at": expires.isoformat()})


def supervised_refused(conn: Connection, subject_id: str, now: datetime, note: str = "") -> Effect:
    """A supervised grant was denied or can no longer be approved: it never opens anything."""
    g = supervised_grants.c
    conn.execute(update(supervised_grants).where(g.id == subject_id, g.granted_at.is_(None), g.refused_at.is_(None))
                 .values(refused_at=now))
    return Effect(True, {"supervised_granted": False, "grant_id": subject_id})
