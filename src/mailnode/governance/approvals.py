"""The one approval machinery for every subject kind: plan, request, decide, withdraw, list.

An approval asks the relation holders of one object (its *scope*) to agree to an act on a *subject*.
``SUBJECTS`` is the registry, total over ``SubjectKind``: which relation on which kind of scope makes a
person eligible, whether the request expires, and what settling it does (``governance.effects``). Adding
a kind (the transactional issue's ``hold_lift``) is one enum member and one ``SubjectSpec``; a kind with
no spec fails closed (``E_APPROVAL_KIND_UNKNOWN``).

Eligible deciders (spec/outbound.md §6.3): the people (``users`` rows; never a Butler or an application)
holding the relation on the scope directly or through a team, de-duplicated by person, minus the actor,
minus everyone who already decided (a withdrawn decision still counts), intersected with a stage's team
roster when the stage names one. Whether the stages can be filled is ``matching.shortfall``.

Completion: every stage has at least its count of distinct standing ``approve`` decisions. The approval
row moves by a conditional UPDATE guarded on ``state = 'pending'`` and on that predicate, and the
subject's effect runs in the same transaction; the approval row is read ``FOR UPDATE`` first, so two
deciders on PostgreSQL are serialised (SQLite's ``BEGIN IMMEDIATE`` already is).

Audit: ``approval.requested`` (detail: kind, subject, scope, stages, eligible count and the kind's extras),
``approval.decided`` (outcome ``ok`` for approve, ``refused`` for deny) plus the effect's own entry,
``approval.withdrawn``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from sqlalchemy import Connection, and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from mailnode import audit, budgets
from mailnode.authz import is_admin, mailboxes_visible
from mailnode.errors import MailnodeError, conflict, invalid, not_found
from mailnode.governance import effects
from mailnode.governance.matching import Shortfall, shortfall
from mailnode.governance.policy import Stage
from mailnode.ids import new_id, parse_id
from mailnode.schema.directory import relationship_tuples, team_members, users
from mailnode.schema.governance import (
    approval_decisions,
    approval_stages,
    approvals,
    domain_pauses,
    policies,
    policy_versions,
)
from mailnode.schema.governance_supervised import supervised_grants
from mailnode.schema.outbound import send_manifests
from mailnode.schema.retention import hold_lifts, holds


class SubjectKind(StrEnum):
    """What an approval is about."""

    SEND_MANIFEST = "send_manifest"
    DOMAIN_PAUSE = "domain_pause"
    HOLD_LIFT = "hold_lift"
    SUPERVISED_READ = "supervised_read"


class ApprovalState(StrEnum):
    """An approval's state; only ``pending`` can move."""

    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    UNSATISFIABLE = "unsatisfiable"
    CANCELLED = "cancelled"


#: The two decisions there are; anything else is ``E_BAD_DECISION``.
DECISIONS: tuple[str, ...] = ("approve", "deny")

ScopeType = Literal["mailbox", "organisation"]
EffectFn = Callable[[Connection, str, datetime, str], effects.Effect]


@dataclass(frozen=True)
class SubjectSpec:
    """How one subject kind is approved.

    Attributes:
        scope_type / relation: holders of ``relation`` on the scope object decide.
        expiry_seconds: a pending request lapses this long after it was made (None: never).
        on_approved / on_denied / on_unsatisfiable: the effect of each settlement.
        race_code: when the approving effect finds its subject already moved, raise this (the decision
            is not recorded); None: the decision stands and the outcome reports ``conflict``.
    """

    scope_type: ScopeType
    relation: str
    expiry_seconds: int | None
    on_approved: EffectFn
    on_denied: EffectFn
    on_unsatisfiable: EffectFn
    race_code: str | None


def _pause_refused(conn: Connection, subject_id: str, now: datetime, note: str = "") -> effects.Effect:
    return effects.Effect(True, {"domain_paused": False})


#: Every subject kind's spec. Total over ``SubjectKind`` (a test generated from the enum checks it).
SUBJECTS: dict[SubjectKind, SubjectSpec] = {
    SubjectKind.SEND_MANIFEST: SubjectSpec("mailbox", "approval.decide", budgets.APPROVAL_SEND_EXPIRY_SECONDS,
                                           effects.send_approved, effects.send_denied,
                                           effects.send_unsatisfiable, None),
    SubjectKind.DOMAIN_PAUSE: SubjectSpec("organisation", "org.admin", None, effects.pause_placed,
                                          _pause_refused, _pause_refused, "E_DOMAIN_PAUSE_RACED"),
    SubjectKind.HOLD_LIFT: SubjectSpec("mailbox", "approval.decide", None, effects.hold_lifted,
                                       effects.hold_lift_refused, effects.hold_lift_refused, "E_HOLD_LIFT_RACED"),
    SubjectKind.SUPERVISED_READ: SubjectSpec("mailbox", "approval.decide", None, effects.supervised_granted,
                                             effects.supervised_refused, effects.supervised_refused,
                                             "E_SUPERVISED_RACED"),
}


def spec_of(kind: str) -> SubjectSpec:
    """The spec of a stored kind; an unknown kind raises ``E_APPROVAL_KIND_UNKNOWN`` (500, fail closed)."""
    try:
        return SUBJECTS[SubjectKind(kind)]
    except (ValueError, KeyError):
        raise MailnodeError(code="E_APPROVAL_KIND_UNKNOWN", what=f"An approval is about a {kind!r}.",
                            why="Approval subject kinds are a closed list; nothing is decided on a guess.",
                            fix="This is a defect in mailnode; report it with the approval id.", status=500,
                            detail={"subject_kind": kind}) from None


def approvers(conn: Connection, *, org_id: str, scope_type: ScopeType, relation: str, scope_id: str) -> frozenset[str]:
    """The people holding ``relation`` on the scope, directly or through a team (one statement)."""
    rt = relationship_tuples.c
    held = and_(rt.org_id == org_id, rt.object_type == scope_type, rt.object_id == scope_id, rt.relation == relation)
    direct = select(rt.subject_id).where(held)
    via_team = select(team_members.c.user_id).join(
        relationship_tuples, relationship_tuples.c.subject_id == team_members.c.team_id).where(held)
    rows = conn.execute(select(users.c.id).where(users.c.org_id == org_id,
                                                 or_(users.c.id.in_(direct), users.c.id.in_(via_team)))).all()
    return frozenset(r.id for r in rows)


def rosters(conn: Connection, team_ids: set[str]) -> dict[str, frozenset[str]]:
    """Current members of each named team (one statement; none when no team is named)."""
    if not team_ids:
        return {}
    out: dict[str, set[str]] = {t: set() for t in team_ids}
    for r in conn.execute(select(team_members.c.team_id, team_members.c.user_id)
                          .where(team_members.c.team_id.in_(sorted(team_ids)))).all():
        out[r.team_id].add(r.user_id)
    return {k: frozenset(v) for k, v in out.items()}


@dataclass(frozen=True)
class Plan:
    """What a request would ask: the stages, the eligible people (actor removed), or why it cannot.

    ``shortfall`` is None when the stages can be filled; the caller must not write a request otherwise.
    """

    kind: SubjectKind
    scope_id: str
    actor_id: str
    stages: tuple[Stage, ...]
    eligible: frozenset[str]
    shortfall: Shortfall | None

    def to_json(self) -> dict[str, Any]:
        """The API and audit shape (counts, never the people)."""
        return {"subject_kind": self.kind.value, "scope_id": self.scope_id,
                "stages": [s.to_json() for s in self.stages], "eligible": len(self.eligible),
                "shortfall": self.shortfall.to_json() if self.shortfall else None}


def plan(conn: Connection, *, org_id: str, kind: SubjectKind, scope_id: str, actor_id: str,
         stages: tuple[Stage, ...]) -> Plan:
    """Plan a request (one or two statements: the approvers, and the team rosters when a stage names a team)."""
    spec = SUBJECTS[kind]
    chain = stages or (Stage(1, 1),)
    people = approvers(conn, org_id=org_id, scope_type=spec.scope_type, relation=spec.relation,
                       scope_id=scope_id) - {actor_id}
    teams = rosters(conn, {s.team_id for s in chain if s.team_id})
    return Plan(kind, scope_id, actor_id, chain, people, shortfall(chain, people, teams))


def write_request(conn: Connection, *, org_id: str, plan: Plan, subject_id: str, now: datetime,
                  extra: dict[str, Any] | None = None) -> str:
    """Write the approval, its frozen stages and ``approval.requested``; return the ``apr_`` id.

    The caller has checked ``plan.shortfall is None`` (a request nobody can complete is never written:
    raises ``E_APPROVAL_UNSATISFIABLE``, 409, if it is not).
    """
    if plan.shortfall is not None:
        raise conflict("E_APPROVAL_UNSATISFIABLE", "The approval cannot be completed by anyone.",
                       plan.shortfall.sentence(), "Grant the relation to more people (POST /api/access).",
                       shortfall=plan.shortfall.to_json())
    spec = SUBJECTS[plan.kind]
    aid = new_id("apr")
    expires = now + timedelta(seconds=spec.expiry_seconds) if spec.expiry_seconds is not None else None
    conn.execute(approvals.insert().values(
        id=aid, org_id=org_id, subject_kind=plan.kind.value, subject_id=subject_id, scope_id=plan.scope_id,
        actor_id=plan.actor_id, state=ApprovalState.PENDING.value, requested_at=now, expires_at=expires))
    conn.execute(approval_stages.insert(), [
        {"id": new_id("ast"), "org_id": org_id, "approval_id": aid, "ordinal": s.ordinal,
         "required_count": s.count, "team_id": s.team_id} for s in plan.stages])
    audit.append(conn, org_id=org_id, at=now, action="approval.requested", actor_id=plan.actor_id, subject=aid,
                 detail={**plan.to_json(), "subject_id": subject_id,
                         "expires_at": expires.isoformat() if expires else None, **(extra or {})})
    return aid


def no_approval(approval_id: str) -> MailnodeError:
    """The 404 for an approval that is absent or not the caller's to decide (the two answer alike)."""
    return not_found("E_NO_APPROVAL", f"No approval {approval_id} for you to decide.",
                     fix="List what you may decide with GET /api/approvals.", approval_id=approval_id)


def _settled(row: Any) -> MailnodeError:
    return conflict("E_APPROVAL_SETTLED", f"Approval {row.id} is {row.state}, not pending.",
                    "Only a pending approval takes decisions or withdrawals.",
                    "Nothing to do here; GET /api/approvals lists what is still pending.",
                    approval_id=row.id, state=row.state)


@dataclass
class _Standing:
    stages: list[Stage]
    approves_by_ordinal: dict[int, int] = field(default_factory=dict)
    deciders: set[str] = field(default_factory=set)
    mine: Any | None = None

    def open_stage(self) -> Stage | None:
        return next((s for s in self.stages if self.approves_by_ordinal.get(s.ordinal, 0) < s.count), None)

    def remaining(self) -> list[Stage]:
        return [Stage(s.ordinal, s.count - self.approves_by_ordinal.get(s.ordinal, 0), s.team_id)
                for s in self.stages]


def _standing(conn: Connection, approval_id: str, caller_id: str) -> _Standing:
    stages = [Stage(r.ordinal, r.required_count, r.team_id) for r in conn.execute(
        select(approval_stages).where(approval_stages.c.approval_id == approval_id)
        .order_by(approval_stages.c.ordinal)).all()]
    st = _Standing(stages)
    for d in conn.execute(select(approval_decisions).where(approval_decisions.c.approval_id == approval_id)).all():
        st.deciders.add(d.decider_id)
        if d.decider_id == caller_id:
            st.mine = d
        if d.decision == "approve" and d.withdrawn_at is None:
            st.approves_by_ordinal[d.stage_ordinal] = st.approves_by_ordinal.get(d.stage_ordinal, 0) + 1
    return st


def open_stage(conn: Connection, approval_id: str) -> tuple[Stage | None, frozenset[str]]:
    """The approval's open stage now (the first with fewer standing approvals than it needs; None when every
    stage is filled) and everyone who has decided it so far, withdrawn decisions included (two statements)."""
    st = _standing(conn, approval_id, caller_id="")
    return st.open_stage(), frozenset(st.deciders)


def _lock(conn: Connection, org_id: str, approval_id: str) -> Any:
    parse_id(approval_id, "apr", "approval_id")
    return conn.execute(select(approvals).where(approvals.c.id == approval_id, approvals.c.org_id == org_id)
                        .with_for_update()).first()


def _complete_sql(approval_id: str) -> Any:
    """True when some stage of the approval still lacks standing approvals (the negation completes it)."""
    d = approval_decisions.c
    s = approval_stages.c
    standing = (select(func.count(func.distinct(d.decider_id)))
                .where(d.approval_id == s.approval_id, d.stage_ordinal == s.ordinal, d.decision == "approve",
                       d.withdrawn_at.is_(None)).scalar_subquery())
    return select(s.id).where(s.approval_id == approval_id, standing < s.required_count).exists()


def check_reason(reason: object) -> str | None:
    """A decision's optional reason, stripped (None when absent or blank). Pure.

    Raises ``E_APPROVAL_REASON_INVALID`` (422) for a non-string, one longer than
    ``budgets.APPROVAL_DECISION_REASON_MAX_CHARS`` characters, or one carrying control characters other than
    a line break or tab (the reason is shown to people and kept in the audit chain)."""
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise invalid("E_APPROVAL_REASON_INVALID", "A decision's reason must be text.",
                      "The reason is words shown to people and kept in the audit chain.",
                      "Send \"reason\" as a string, or leave it out.", reason_type=type(reason).__name__)
    text = reason.strip()
    limit = budgets.APPROVAL_DECISION_REASON_MAX_CHARS
    if len(text) > limit:
        raise invalid("E_APPROVAL_REASON_INVALID", f"The reason is {len(text)} characters long.",
                      f"A decision's reason is at most {limit} characters.",
                      "Shorten it to a sentence or two.", length=len(text), limit=limit)
    if any(ord(c) < 32 and c not in "\n\t" or ord(c) == 127 for c in text):
        raise invalid("E_APPROVAL_REASON_INVALID", "The reason carries control characters.",
                      "A reason is plain words; control characters would garble what people read.",
                      "Remove them and send it again.")
    return text or None


def decide(conn: Connection, *, org_id: str, approval_id: str, caller_id: str, decision: object,
           now: datetime, reason: object = None) -> dict[str, Any]:
    """Record ``caller_id``'s ``approve`` or ``deny`` and, when it settles the approval, apply its effect.

    ``reason`` (optional words, ``check_reason``) is kept in ``approval.decided``'s audit detail and the
    outcome; it is checked first, so a bad one writes nothing (``E_APPROVAL_REASON_INVALID``, 422).

    Checks in order (spec/outbound.md §6.5): ``E_BAD_DECISION`` (422), ``E_NO_APPROVAL`` (404: absent or
    the caller is not an eligible decider), ``E_APPROVER_IS_ACTOR``, ``E_APPROVAL_SETTLED``,
    ``E_ALREADY_DECIDED``, ``E_APPROVAL_COMPLETE``, ``E_APPROVER_NOT_IN_TEAM`` (409). A kind whose effect
    lost a race raises its ``race_code`` (409) and records nothing. Returns the decision outcome:
    ``{approval_id, subject_kind, subject_id, decision, reason, stage_ordinal, approval_state, completed,
    open_stage, conflict, ...effect report}``.
    """
    words = check_reason(reason)
    if decision not in DECISIONS:
        raise invalid("E_BAD_DECISION", f"{decision!r} is not a decision.",
                      "A decision is approve or deny; there is no default.",
                      "Send {\"decision\": \"approve\"} or {\"decision\": \"deny\"}.", decision=str(decision)[:40])
    row = _lock(conn, org_id, approval_id)
    if row is None:
        raise no_approval(approval_id)
    spec = spec_of(row.subject_kind)
    eligible = approvers(conn, org_id=org_id, scope_type=spec.scope_type, relation=spec.relation,
                         scope_id=row.scope_id)
    if caller_id not in eligible:
        raise no_approval(approval_id)
    if caller_id == row.actor_id:
        raise conflict("E_APPROVER_IS_ACTOR", "You asked for this approval, so you cannot decide it.",
                       "Dual control: the person who asks is never one who agrees (or refuses).",
                       "Another eligible person decides it; GET /api/approvals shows them the request.",
                       approval_id=approval_id)
    if row.state != ApprovalState.PENDING.value:
        raise _settled(row)
    st = _standing(conn, approval_id, caller_id)
    if st.mine is not None:
        raise conflict("E_ALREADY_DECIDED", f"You already decided approval {approval_id}.",
                       "One decision per person, and a withdrawn approval still counts as yours.",
                       "Nothing to do; another eligible person may decide.", approval_id=approval_id)
    stage = st.open_stage()
    if stage is None:
        raise conflict("E_APPROVAL_COMPLETE", f"Every stage of approval {approval_id} is already filled.",
                       "A pending approval with no open stage should have completed; this is a defect.",
                       "Report it with the approval id.", approval_id=approval_id)
    if stage.team_id is not None and caller_id not in rosters(conn, {stage.team_id}).get(stage.team_id, frozenset()):
        raise conflict("E_APPROVER_NOT_IN_TEAM", f"Stage {stage.ordinal} needs a member of team {stage.team_id}.",
                       "The open stage names a team and you are not in it now.",
                       "Ask a member of that team to decide (GET /api/teams/{id}).",
                       approval_id=approval_id, team_id=stage.team_id)
    try:
        with conn.begin_nested():
            conn.execute(approval_decisions.insert().values(
                id=new_id("apd"), org_id=org_id, approval_id=approval_id, stage_ordinal=stage.ordinal,
                decider_id=caller_id, decision=decision, decided_at=now))
    except IntegrityError:
        raise conflict("E_ALREADY_DECIDED", f"You already decided approval {approval_id}.",
                       "One decision per person.", "Nothing to do.", approval_id=approval_id) from None
    a = approvals.c
    state = ApprovalState.PENDING
    effect: effects.Effect | None = None
    if decision == "deny":
        conn.execute(update(approvals).where(a.id == approval_id, a.state == ApprovalState.PENDING.value)
                     .values(state=ApprovalState.DENIED.value, resolved_at=now))
        state = ApprovalState.DENIED
        effect = spec.on_denied(conn, row.subject_id, now, f"{caller_id} refused it at stage {stage.ordinal}.")
    else:
        done = conn.execute(update(approvals)
                            .where(a.id == approval_id, a.state == ApprovalState.PENDING.value,
                                   ~_complete_sql(approval_id))
                            .values(state=ApprovalState.APPROVED.value, resolved_at=now))
        if done.rowcount == 1:
            state = ApprovalState.APPROVED
            effect = spec.on_approved(conn, row.subject_id, now, "")
            if not effect.applied and spec.race_code is not None:
                raise conflict(spec.race_code, f"Approval {approval_id} completed but its subject had moved.",
                               "Another act settled the subject first; nothing was recorded.",
                               "Read the subject again (GET /api/domain-pauses, GET /api/holds) "
                               "and ask again if still needed.",
                               approval_id=approval_id, subject_id=row.subject_id)
    detail = {"subject_kind": row.subject_kind, "subject_id": row.subject_id, "decision": decision,
              "stage": stage.ordinal, "approval_state": state.value, "reason": words}
    audit.append(conn, org_id=org_id, at=now, action="approval.decided", actor_id=caller_id, subject=approval_id,
                 outcome="ok" if decision == "approve" else "refused", detail=detail)
    if effect is not None and effect.applied and effect.audit_action:
        audit.append(conn, org_id=org_id, at=now, action=effect.audit_action, actor_id=caller_id,
                     subject=effect.audit_subject, detail={**effect.audit_detail, "approval_id": approval_id})
    after = _standing(conn, approval_id, caller_id) if state is ApprovalState.PENDING else None
    nxt = after.open_stage() if after else None
    return {"approval_id": approval_id, "subject_kind": row.subject_kind, "subject_id": row.subject_id,
            "decision": decision, "reason": words, "stage_ordinal": stage.ordinal,
            "approval_state": state.value, "completed": state is ApprovalState.APPROVED,
            "open_stage": nxt.to_json() if nxt else None,
            "conflict": "subject_moved" if effect is not None and not effect.applied else None,
            **(effect.report if effect is not None else {})}


def withdraw(conn: Connection, *, org_id: str, approval_id: str, caller_id: str, now: datetime) -> dict[str, Any]:
    """Withdraw the caller's standing ``approve``; when the rest can no longer be filled, settle it
    ``unsatisfiable`` and apply that effect (a send becomes ``withheld/approval_unsatisfiable``).

    Raises ``E_NO_APPROVAL`` (404), ``E_APPROVAL_SETTLED``, ``E_NOTHING_TO_WITHDRAW``, ``E_WITHDRAW_RACED``
    (409). The withdrawer can never decide this approval again. Returns ``{approval_id, approval_state,
    stage_ordinal, shortfall, ...effect report}``.
    """
    row = _lock(conn, org_id, approval_id)
    if row is None:
        raise no_approval(approval_id)
    spec = spec_of(row.subject_kind)
    st = _standing(conn, approval_id, caller_id)
    if st.mine is None:
        raise no_approval(approval_id)
    if row.state != ApprovalState.PENDING.value:
        raise _settled(row)
    if st.mine.decision != "approve" or st.mine.withdrawn_at is not None:
        raise conflict("E_NOTHING_TO_WITHDRAW", f"You hold no standing approval on {approval_id}.",
                       "Only your own approve, not yet withdrawn, can be withdrawn.", "Nothing to do.",
                       approval_id=approval_id)
    d = approval_decisions.c
    done = conn.execute(update(approval_decisions).where(d.id == st.mine.id, d.withdrawn_at.is_(None))
                        .values(withdrawn_at=now))
    if done.rowcount != 1:
        raise conflict("E_WITHDRAW_RACED", "Your approval changed while it was being withdrawn.",
                       "Another request touched the same decision.", "Read GET /api/approvals and retry.",
                       approval_id=approval_id)
    ordinal = st.mine.stage_ordinal
    st = _standing(conn, approval_id, caller_id)
    pool = approvers(conn, org_id=org_id, scope_type=spec.scope_type, relation=spec.relation,
                     scope_id=row.scope_id) - {row.actor_id} - st.deciders
    remaining = st.remaining()
    short = shortfall(remaining, pool, rosters(conn, {s.team_id for s in remaining if s.team_id and s.count > 0}))
    state = ApprovalState.PENDING
    report: dict[str, Any] = {}
    if short is not None:
        a = approvals.c
        moved = conn.execute(update(approvals).where(a.id == approval_id, a.state == ApprovalState.PENDING.value)
                             .values(state=ApprovalState.UNSATISFIABLE.value, resolved_at=now))
        if moved.rowcount == 1:
            state = ApprovalState.UNSATISFIABLE
            report = spec.on_unsatisfiable(conn, row.subject_id, now, short.sentence()).report
    audit.append(conn, org_id=org_id, at=now, action="approval.withdrawn", actor_id=caller_id, subject=approval_id,
                 detail={"subject_kind": row.subject_kind, "subject_id": row.subject_id, "stage": ordinal,
                         "left_unsatisfiable": short is not None,
                         "shortfall": short.to_json() if short else None})
    return {"approval_id": approval_id, "approval_state": state.value, "stage_ordinal": ordinal,
            "shortfall": short.to_json() if short else None, **report}


def cancel_pending(conn: Connection, *, kind: SubjectKind, subject_id: str, now: datetime) -> bool:
    """Settle a pending approval ``cancelled`` because its subject was stopped (a send cancelled).

    For the outbound cancel path, inside its transaction. Returns True when one moved.
    """
    a = approvals.c
    done = conn.execute(update(approvals).where(a.subject_kind == kind.value, a.subject_id == subject_id,
                                                a.state == ApprovalState.PENDING.value)
                        .values(state=ApprovalState.CANCELLED.value, resolved_at=now))
    return done.rowcount == 1


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _hold_lift(conn: Connection, lift_id: str) -> dict[str, Any] | None:
    """What a ``hold_lift`` approval asks, for its decider (one statement): the lift's ``reason``, who asked
    and when, and the hold it would lift (its mailbox, matter, window in ISO 8601 UTC, and whether it is
    still in force). None when the lift row is gone."""
    h, lf = holds.c, hold_lifts.c
    r = conn.execute(select(lf.id, lf.reason, lf.requested_by, lf.requested_at, h.id.label("hold_id"), h.mailbox_id,
                            h.matter_id, h.from_date, h.to_date, h.placed_by, h.placed_at, h.lifted_at)
                     .join(holds, holds.c.id == lf.hold_id).where(lf.id == lift_id)).first()
    if r is None:
        return None
    return {"lift_id": r.id, "reason": r.reason, "requested_by": r.requested_by,
            "requested_at": _iso(r.requested_at),
            "hold": {"id": r.hold_id, "mailbox_id": r.mailbox_id, "matter_id": r.matter_id,
                     "from_date": _iso(r.from_date), "to_date": _iso(r.to_date), "placed_by": r.placed_by,
                     "placed_at": _iso(r.placed_at), "in_force": r.lifted_at is None}}


def _supervised(conn: Connection, grant_id: str) -> dict[str, Any] | None:
    """What a ``supervised_read`` approval asks, for its decider (one statement): who would read which
    mailbox's mail facts, in which scope, for how long and why. None when the grant row is gone."""
    g = supervised_grants.c
    r = conn.execute(select(supervised_grants).where(g.id == grant_id)).first()
    if r is None:
        return None
    return {"grant_id": r.id, "mailbox_id": r.mailbox_id, "grantee_id": r.grantee_id, "scope": r.scope,
            "reason": r.reason, "duration_seconds": r.duration_seconds, "requested_at": _iso(r.requested_at)}


def _json(row: Any, stages: list[Stage], st: _Standing | None, pause: Any | None,
          lift: dict[str, Any] | None = None, supervised: dict[str, Any] | None = None) -> dict[str, Any]:
    nxt = st.open_stage() if st else None
    return {"id": row.id, "subject_kind": row.subject_kind, "subject_id": row.subject_id, "scope_id": row.scope_id,
            "actor_id": row.actor_id, "state": row.state, "requested_at": row.requested_at.isoformat(),
            "resolved_at": row.resolved_at.isoformat() if row.resolved_at else None,
            "expires_at": row.expires_at.isoformat() if row.expires_at else None,
            "stages": [s.to_json() for s in stages], "open_stage": nxt.to_json() if nxt else None,
            "decided_by_me": bool(st and st.mine is not None),
            "domain_pause": ({"pause_id": pause.id, "domain": pause.domain, "reason": pause.reason}
                             if pause is not None else None),
            "hold_lift": lift, "supervised": supervised}


def pending_for(conn: Connection, *, org_id: str, caller_id: str, limit: int,
                cursor: str | None) -> list[dict[str, Any]]:
    """Pending approvals the caller may decide (scopes where they hold the kind's relation, not their own
    requests), oldest first by id after ``cursor``.

    Each carries what it asks, so a decider needs no other lookup: ``domain_pause`` (``{pause_id, domain,
    reason}``) for a domain pause, ``hold_lift`` (``{lift_id, reason, requested_by, requested_at, hold:
    {id, mailbox_id, matter_id, from_date, to_date, placed_by, placed_at, in_force}}``) for a hold lift
    (spec/outbound.md §7), ``supervised`` (``{grant_id, mailbox_id, grantee_id, scope, reason,
    duration_seconds, requested_at}``) for a supervised grant; null for other kinds."""
    scopes = set(mailboxes_visible(conn, org_id, caller_id, ("approval.decide",)))
    if is_admin(conn, org_id, caller_id):
        scopes.add(org_id)
    if not scopes:
        return []
    a = approvals.c
    q = select(approvals).where(a.org_id == org_id, a.state == ApprovalState.PENDING.value,
                                a.scope_id.in_(sorted(scopes)), a.actor_id != caller_id)
    if cursor:
        q = q.where(a.id > cursor)
    out: list[dict[str, Any]] = []
    for row in conn.execute(q.order_by(a.id).limit(limit)).all():
        spec = spec_of(row.subject_kind)
        if (spec.scope_type == "organisation") != (row.scope_id == org_id):
            continue
        st = _standing(conn, row.id, caller_id)
        pause = None
        if row.subject_kind == SubjectKind.DOMAIN_PAUSE.value:
            pause = conn.execute(select(domain_pauses).where(domain_pauses.c.id == row.subject_id)).first()
        lift = _hold_lift(conn, row.subject_id) if row.subject_kind == SubjectKind.HOLD_LIFT.value else None
        grant = (_supervised(conn, row.subject_id) if row.subject_kind == SubjectKind.SUPERVISED_READ.value
                 else None)
        out.append(_json(row, st.stages, st, pause, lift, grant))
    return out


@dataclass(frozen=True)
class Scopes:
    """Where a person may decide: the mailboxes where they hold ``approval.decide`` and whether they are an
    administrator (which makes the organisation a scope)."""

    mailboxes: frozenset[str]
    admin: bool


def scopes_of(conn: Connection, *, org_id: str, caller_id: str) -> Scopes:
    """The caller's decision scopes (two statements)."""
    return Scopes(frozenset(mailboxes_visible(conn, org_id, caller_id, ("approval.decide",))),
                  is_admin(conn, org_id, caller_id))


def _waiting_where(org_id: str, caller_id: str, scopes: Scopes) -> Any:
    """The predicate of an approval waiting on the caller: pending, in one of their scopes of the right type
    for its kind, not their own request, and not decided by them yet (a withdrawn decision still counts)."""
    a, d = approvals.c, approval_decisions.c
    org_kinds = [k.value for k, s in SUBJECTS.items() if s.scope_type == "organisation"]
    mailbox_kinds = [k.value for k, s in SUBJECTS.items() if s.scope_type == "mailbox"]
    in_scope = []
    if scopes.admin:
        in_scope.append(and_(a.subject_kind.in_(org_kinds), a.scope_id == org_id))
    if scopes.mailboxes:
        in_scope.append(and_(a.subject_kind.in_(mailbox_kinds), a.scope_id.in_(sorted(scopes.mailboxes))))
    mine = select(d.id).where(d.approval_id == a.id, d.decider_id == caller_id).exists()
    return and_(a.org_id == org_id, a.state == ApprovalState.PENDING.value, a.actor_id != caller_id,
                or_(*in_scope), ~mine)


def count_waiting(conn: Connection, *, org_id: str, caller_id: str, scopes: Scopes) -> int:
    """How many approvals wait on the caller's decision (one statement; none without a scope)."""
    if not scopes.admin and not scopes.mailboxes:
        return 0
    return int(conn.execute(select(func.count()).select_from(approvals)
                            .where(_waiting_where(org_id, caller_id, scopes))).scalar_one())


def waiting_on(conn: Connection, *, org_id: str, caller_id: str, scopes: Scopes, limit: int) -> list[dict[str, Any]]:
    """The approvals waiting on the caller's decision (``count_waiting``'s rows), oldest first, at most ``limit``.

    Each is ``pending_for``'s shape (``domain_pause``, ``hold_lift``, ``supervised`` as there) plus
    ``actor_name`` (the requester's name or address; a Butler's or application's id as it is) and ``send``
    for a ``send_manifest`` approval: ``{id, mailbox_id, subject, from, to, cc, bcc, policy_versions,
    state, state_reason, asked_by}``. A fixed number of statements whatever ``limit`` (at most eight)."""
    if not scopes.admin and not scopes.mailboxes:
        return []
    a = approvals.c
    rows = conn.execute(select(approvals).where(_waiting_where(org_id, caller_id, scopes))
                        .order_by(a.requested_at, a.id).limit(limit)).all()
    if not rows:
        return []
    ids = [r.id for r in rows]
    by_kind: dict[str, list[str]] = {}
    for r in rows:
        by_kind.setdefault(r.subject_kind, []).append(r.subject_id)
    stages: dict[str, list[Stage]] = {i: [] for i in ids}
    for s in conn.execute(select(approval_stages).where(approval_stages.c.approval_id.in_(ids))
                          .order_by(approval_stages.c.approval_id, approval_stages.c.ordinal)).all():
        stages[s.approval_id].append(Stage(s.ordinal, s.required_count, s.team_id))
    standing = {i: _Standing(stages[i]) for i in ids}
    d = approval_decisions.c
    for dec in conn.execute(select(approval_decisions).where(d.approval_id.in_(ids))).all():
        st = standing[dec.approval_id]
        st.deciders.add(dec.decider_id)
        if dec.decision == "approve" and dec.withdrawn_at is None:
            st.approves_by_ordinal[dec.stage_ordinal] = st.approves_by_ordinal.get(dec.stage_ordinal, 0) + 1
    pauses = {p.id: p for p in conn.execute(select(domain_pauses).where(
        domain_pauses.c.id.in_(by_kind.get(SubjectKind.DOMAIN_PAUSE.value, [])))).all()} \
        if SubjectKind.DOMAIN_PAUSE.value in by_kind else {}
    lifts = _hold_lifts(conn, by_kind.get(SubjectKind.HOLD_LIFT.value, []))
    grants = _supervised_many(conn, by_kind.get(SubjectKind.SUPERVISED_READ.value, []))
    sends = _sends(conn, by_kind.get(SubjectKind.SEND_MANIFEST.value, []))
    names = _names(conn, org_id, {r.actor_id for r in rows})
    out: list[dict[str, Any]] = []
    for row in rows:
        item = _json(row, stages[row.id], standing[row.id], pauses.get(row.subject_id), lifts.get(row.subject_id),
                     grants.get(row.subject_id))
        item["actor_name"] = names.get(row.actor_id, row.actor_id)
        item["send"] = sends.get(row.subject_id)
        out.append(item)
    return out


def _hold_lifts(conn: Connection, lift_ids: list[str]) -> dict[str, dict[str, Any]]:
    """``_hold_lift`` of many lifts in one statement (none when there are none)."""
    if not lift_ids:
        return {}
    h, lf = holds.c, hold_lifts.c
    out: dict[str, dict[str, Any]] = {}
    for r in conn.execute(select(lf.id, lf.reason, lf.requested_by, lf.requested_at, h.id.label("hold_id"),
                                 h.mailbox_id, h.matter_id, h.from_date, h.to_date, h.placed_by, h.placed_at,
                                 h.lifted_at)
                          .join(holds, holds.c.id == lf.hold_id).where(lf.id.in_(lift_ids))).all():
        out[r.id] = {"lift_id": r.id, "reason": r.reason, "requested_by": r.requested_by,
                     "requested_at": _iso(r.requested_at),
                     "hold": {"id": r.hold_id, "mailbox_id": r.mailbox_id, "matter_id": r.matter_id,
                              "from_date": _iso(r.from_date), "to_date": _iso(r.to_date), "placed_by": r.placed_by,
                              "placed_at": _iso(r.placed_at), "in_force": r.lifted_at is None}}
    return out


def _supervised_many(conn: Connection, grant_ids: list[str]) -> dict[str, dict[str, Any]]:
    """``_supervised`` of many grants in one statement (none when there are none)."""
    if not grant_ids:
        return {}
    g = supervised_grants.c
    return {r.id: {"grant_id": r.id, "mailbox_id": r.mailbox_id, "grantee_id": r.grantee_id, "scope": r.scope,
                   "reason": r.reason, "duration_seconds": r.duration_seconds,
                   "requested_at": _iso(r.requested_at)}
            for r in conn.execute(select(supervised_grants).where(g.id.in_(grant_ids))).all()}


def _sends(conn: Connection, send_ids: list[str]) -> dict[str, dict[str, Any]]:
    """What a ``send_manifest`` approval asks, per send (two statements: the sends, and the policy versions
    bound on them; metadata only, never the body). ``asked_by`` lists the bound versions whose outcome is
    ``require_approval``: ``{policy_id, name, version}``, the policy's reason for asking."""
    if not send_ids:
        return {}
    m = send_manifests.c
    rows = conn.execute(select(m.id, m.mailbox_id, m.subject, m.envelope_from, m.to_addresses, m.cc_addresses,
                               m.bcc_addresses, m.policy_versions, m.state, m.state_reason)
                        .where(m.id.in_(send_ids))).all()
    version_ids = sorted({v for r in rows for v in (r.policy_versions or [])})
    pv = policy_versions.c
    asking = {v.id: {"policy_id": v.policy_id, "name": v.name, "version": v.version} for v in conn.execute(
        select(pv.id, pv.policy_id, pv.version, policies.c.name).join(policies, policies.c.id == pv.policy_id)
        .where(pv.id.in_(version_ids), pv.outcome == "require_approval")).all()} if version_ids else {}
    return {r.id: {"id": r.id, "mailbox_id": r.mailbox_id, "subject": r.subject, "from": r.envelope_from,
                   "to": r.to_addresses, "cc": r.cc_addresses, "bcc": r.bcc_addresses,
                   "policy_versions": r.policy_versions, "state": r.state, "state_reason": r.state_reason,
                   "asked_by": [asking[v] for v in (r.policy_versions or []) if v in asking]}
            for r in rows}


def _names(conn: Connection, org_id: str, ids: set[str]) -> dict[str, str]:
    """People's names (or addresses when unnamed) by id (one statement); other principals are left out."""
    people = sorted(i for i in ids if i.startswith("usr_"))
    if not people:
        return {}
    return {r.id: (r.name or r.email) for r in conn.execute(
        select(users.c.id, users.c.name, users.c.email).where(users.c.org_id == org_id, users.c.id.in_(people)))}
