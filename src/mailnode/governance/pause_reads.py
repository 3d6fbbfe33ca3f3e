"""Domain pauses as the pauses page lists them: every recent pause with its state, who asked, who approved or
denied, how many approvals it still needs, and what the reader may do with it.

Reads at a fixed number of statements whatever the number of pauses: the pauses with their approvals (one),
their stages and decisions (``approval_reads.standings``, two), the organisation's administrators (one).
``state_of`` and ``actions_for`` are pure and decide nothing the services do not: a form shown here posts to
``pauses.request``, ``pauses.lift`` or ``approvals.decide``, which check everything again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy import Connection, and_, select

from mailnode.governance import approvals as ap
from mailnode.governance.approval_reads import Standing, standings, still_needed
from mailnode.schema.governance import approvals, domain_pauses


class PauseState(StrEnum):
    """Where a pause stands: asked for, in force, lifted, or a request that was settled without placing it."""

    REQUESTED = "requested"
    IN_FORCE = "in_force"
    LIFTED = "lifted"
    DENIED = "denied"
    UNSATISFIABLE = "unsatisfiable"
    CANCELLED = "cancelled"


class PauseAction(StrEnum):
    """A form the pauses page may offer on one pause."""

    DECIDE = "decide"
    LIFT = "lift"


#: A settled approval's state to the pause's state (an approved one is placed: in force or lifted).
_SETTLED: dict[str, PauseState] = {
    ap.ApprovalState.DENIED.value: PauseState.DENIED,
    ap.ApprovalState.UNSATISFIABLE.value: PauseState.UNSATISFIABLE,
    ap.ApprovalState.CANCELLED.value: PauseState.CANCELLED,
}


def state_of(*, placed: bool, lifted: bool, approval_state: str | None) -> PauseState:
    """The pause's state from its row and its approval's state. Pure.

    Lifted and placed come from the pause row (a placed pause is the outcome of an approved approval); a
    pause never placed is ``requested`` while its approval is pending or missing, else the approval's
    settled state. An unknown approval state fails closed to ``requested`` (shown as still waiting, never
    as in force)."""
    if lifted:
        return PauseState.LIFTED
    if placed:
        return PauseState.IN_FORCE
    if approval_state is None:
        return PauseState.REQUESTED
    return _SETTLED.get(approval_state, PauseState.REQUESTED)


def actions_for(*, state: PauseState, reader_id: str, reader_is_admin: bool, requested_by: str,
                decided: bool) -> frozenset[PauseAction]:
    """The forms to show the reader on one pause. Pure.

    Deciding is for an administrator other than the one who asked who has not decided yet (the approval's
    deciders are the organisation's administrators less the requester); lifting is for any administrator
    while the pause is in force. Everyone else reads."""
    out: set[PauseAction] = set()
    if not reader_is_admin:
        return frozenset()
    if state is PauseState.REQUESTED and reader_id != requested_by and not decided:
        out.add(PauseAction.DECIDE)
    if state is PauseState.IN_FORCE:
        out.add(PauseAction.LIFT)
    return frozenset(out)


@dataclass(frozen=True)
class PauseView:
    """One pause as the page shows it (times aware UTC; people as principal ids)."""

    pause_id: str
    domain: str
    reason: str
    state: PauseState
    requested_by: str
    requested_at: datetime
    placed_at: datetime | None
    lifted_at: datetime | None
    lifted_by: str | None
    lifted_reason: str | None
    approval_id: str | None
    approved_by: tuple[str, ...]
    denied_by: tuple[str, ...]
    needed: int
    actions: frozenset[PauseAction]


@dataclass(frozen=True)
class PausesPage:
    """The pauses page's facts: the pauses (in force and asked for first, then the rest, newest first), the
    reader's standing and how many administrators other than the reader there are."""

    pauses: tuple[PauseView, ...]
    reader_is_admin: bool
    other_admins: int


_ORDER: dict[PauseState, int] = {PauseState.IN_FORCE: 0, PauseState.REQUESTED: 1, PauseState.LIFTED: 2,
                                 PauseState.DENIED: 2, PauseState.UNSATISFIABLE: 2, PauseState.CANCELLED: 2}


def read(conn: Connection, *, org_id: str, reader_id: str, limit: int) -> PausesPage:
    """The newest ``limit`` pauses of ``org_id`` (by when they were asked for) as ``reader_id`` sees them;
    every pause in force or asked for is among them whatever its age. Four statements."""
    p, a = domain_pauses.c, approvals.c
    joined = domain_pauses.outerjoin(approvals, and_(a.subject_id == p.id,
                                                     a.subject_kind == ap.SubjectKind.DOMAIN_PAUSE.value))
    cols = (domain_pauses, a.id.label("approval_id"), a.state.label("approval_state"))
    open_ = and_(p.lifted_at.is_(None), (p.placed_at.is_not(None)) | (a.state == ap.ApprovalState.PENDING.value))
    recent = select(p.id).where(p.org_id == org_id).order_by(p.requested_at.desc(), p.id.desc()).limit(limit)
    rows = conn.execute(select(*cols).select_from(joined)
                        .where(p.org_id == org_id, open_ | p.id.in_(recent.scalar_subquery()))
                        .order_by(p.requested_at.desc(), p.id.desc())).all()
    found = standings(conn, [r.approval_id for r in rows if r.approval_id])
    admins = ap.approvers(conn, org_id=org_id, scope_type="organisation", relation="org.admin", scope_id=org_id)
    is_admin = reader_id in admins
    out = []
    for r in rows:
        st = found.get(r.approval_id) if r.approval_id else None
        st = st or Standing((), ())
        state = state_of(placed=r.placed_at is not None, lifted=r.lifted_at is not None,
                         approval_state=r.approval_state)
        out.append(PauseView(
            r.id, r.domain, r.reason, state, r.requested_by, r.requested_at, r.placed_at, r.lifted_at, r.lifted_by,
            r.lifted_reason, r.approval_id, st.approved_by(), st.denied_by(),
            still_needed(st) if state is PauseState.REQUESTED else 0,
            actions_for(state=state, reader_id=reader_id, reader_is_admin=is_admin, requested_by=r.requested_by,
                        decided=st.decided_by(reader_id))))
    out.sort(key=lambda v: _ORDER[v.state])
    return PausesPage(tuple(out), is_admin, len(admins - {reader_id}))
