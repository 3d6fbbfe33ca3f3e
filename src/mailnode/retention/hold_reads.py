"""Legal holds as the holds page lists them: each hold with its lift request, if any, who approved or denied
that request, how many approvals it still needs, and what the reader may do.

The holds come from ``retention.holds.list_`` (administrators only: its ``E_NOT_AN_ADMINISTRATOR`` is the
page's refusal); then one statement reads their lift requests and approvals, two their stages and decisions
(``governance.approval_reads``), one the mailboxes the reader may decide approvals on. ``lift_state`` and
``actions_for`` are pure; every form posts to ``holds.place``, ``holds.request_lift`` or
``approvals.decide``, which check everything again.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, select

from mailnode.authz import mailboxes_visible
from mailnode.governance import approvals as ap
from mailnode.governance.approval_reads import Standing, standings, still_needed
from mailnode.retention import holds as hold_service
from mailnode.schema.governance import approvals
from mailnode.schema.retention import hold_lifts


class LiftState(StrEnum):
    """Where a hold's lift stands: none asked, asked and waiting, or the last request refused."""

    NONE = "none"
    REQUESTED = "requested"
    REFUSED = "refused"
    LIFTED = "lifted"


class HoldAction(StrEnum):
    """A form the holds page may offer on one hold."""

    REQUEST_LIFT = "request_lift"
    DECIDE = "decide"


def lift_state(*, in_force: bool, approval_state: str | None) -> LiftState:
    """The hold's lift state from whether it is in force and its latest lift approval's state. Pure.

    A hold no longer in force is ``lifted``; a pending approval is ``requested``; a denied, unsatisfiable or
    cancelled one is ``refused`` (a new request may be made); no request is ``none``. An unknown approval
    state fails closed to ``requested`` (no second request is offered)."""
    if not in_force:
        return LiftState.LIFTED
    if approval_state is None:
        return LiftState.NONE
    if approval_state in (ap.ApprovalState.DENIED.value, ap.ApprovalState.UNSATISFIABLE.value,
                          ap.ApprovalState.CANCELLED.value):
        return LiftState.REFUSED
    return LiftState.REQUESTED


def actions_for(*, state: LiftState, reader_id: str, reader_is_admin: bool, requested_by: str | None,
                reader_decides_mailbox: bool, decided: bool) -> frozenset[HoldAction]:
    """The forms to show the reader on one hold. Pure.

    Asking for a lift is for an administrator while the hold is in force and no request waits; deciding a
    waiting request is for a holder of ``approval.decide`` on the held mailbox other than the one who asked,
    who has not decided yet (``governance.approvals``' rule for ``hold_lift``)."""
    out: set[HoldAction] = set()
    if reader_is_admin and state in (LiftState.NONE, LiftState.REFUSED):
        out.add(HoldAction.REQUEST_LIFT)
    if state is LiftState.REQUESTED and reader_decides_mailbox and reader_id != requested_by and not decided:
        out.add(HoldAction.DECIDE)
    return frozenset(out)


@dataclass(frozen=True)
class HoldView:
    """One hold (``hold`` is the API's hold JSON) and its latest lift request."""

    hold: dict[str, Any]
    lift_state: LiftState
    lift_reason: str | None
    lift_requested_by: str | None
    approval_id: str | None
    approved_by: tuple[str, ...]
    denied_by: tuple[str, ...]
    needed: int
    actions: frozenset[HoldAction]


def read(conn: Connection, *, org_id: str, reader_id: str, limit: int, cursor: str | None) -> list[HoldView]:
    """One page of holds (by id after ``cursor``, at most ``limit``) as ``reader_id`` sees them.

    Raises ``E_NOT_AN_ADMINISTRATOR`` (403) for anyone but an administrator (``holds.list_``). Five statements
    (the administrator check included)."""
    page = hold_service.list_(conn, org_id=org_id, actor_id=reader_id, limit=limit, cursor=cursor)
    ids = [h["id"] for h in page]
    latest: dict[str, Any] = {}
    if ids:
        lf, a = hold_lifts.c, approvals.c
        rows = conn.execute(select(lf.hold_id, lf.reason, lf.requested_by, lf.requested_at, a.id.label("approval_id"),
                                   a.state)
                            .join(approvals, (a.subject_id == lf.id)
                                  & (a.subject_kind == ap.SubjectKind.HOLD_LIFT.value))
                            .where(lf.hold_id.in_(ids)).order_by(lf.requested_at, lf.id)).all()
        for row in rows:
            latest[row.hold_id] = row  # the newest request of each hold wins
    found = standings(conn, [r.approval_id for r in latest.values()])
    deciding = set(mailboxes_visible(conn, org_id, reader_id, ("approval.decide",)))
    out = []
    for h in page:
        r: Any = latest.get(h["id"])
        st = found.get(r.approval_id) if r is not None else None
        st = st or Standing((), ())
        state = lift_state(in_force=h["in_force"], approval_state=r.state if r is not None else None)
        out.append(HoldView(
            h, state, r.reason if r is not None else None, r.requested_by if r is not None else None,
            r.approval_id if r is not None else None, st.approved_by(), st.denied_by(),
            still_needed(st) if state is LiftState.REQUESTED else 0,
            actions_for(state=state, reader_id=reader_id, reader_is_admin=True,
                        requested_by=r.requested_by if r is not None else None,
                        reader_decides_mailbox=h["mailbox_id"] in deciding, decided=st.decided_by(reader_id))))
    return out
