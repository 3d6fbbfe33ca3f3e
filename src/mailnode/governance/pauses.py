"""The domain pause: a latched refusal on a sending domain, placed by two administrators, lifted by one.

Placing stops a customer's mail, so it takes ceremony; lifting restores it, so one administrator may
do it alone (seed 000, "ceremony to place, one administrator to lift"). There is no act that pauses
outright.

- ``request`` (``POST /api/domain-pauses``): an administrator writes the request row (``placed_at``
  NULL) and a ``domain_pause`` approval of one stage of ``budgets.DOMAIN_PAUSE_APPROVERS`` other
  administrators, in one transaction. With fewer than that many other administrators it refuses
  ``E_DOMAIN_PAUSE_UNSATISFIABLE`` before writing anything, naming what a lone administrator can still
  do. ``E_DOMAIN_ALREADY_PAUSED`` / ``E_DOMAIN_PAUSE_PENDING`` (409) when one is in force or asked for.
- two others approve (``governance.approvals.decide``): ``placed_at`` is set, ``domain.pause_placed``;
  a denial leaves the row, ``placed_at`` NULL for ever, as the record of a refused request.
- ``lift`` (``POST /api/domain-pauses/{id}/lift``): one administrator, reason optional, a conditional
  UPDATE and ``domain.pause_lifted``.

Domains are IDNA-normalised and lower-cased (``directory.domains.normalise_domain``; spec/outbound.md
Part A 15); an address given instead of a domain is reduced to its domain.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, select, update

from mailnode import audit, budgets
from mailnode.authz import is_admin
from mailnode.directory.domains import normalise_domain
from mailnode.errors import MailnodeError, conflict, invalid, not_an_administrator, not_found
from mailnode.governance import approvals as ap
from mailnode.governance.policy import Stage
from mailnode.ids import new_id, parse_id
from mailnode.schema.governance import approvals, domain_pauses

#: The stages of every pause request: one stage of two other administrators.
PAUSE_STAGES: tuple[Stage, ...] = (Stage(1, budgets.DOMAIN_PAUSE_APPROVERS),)


def _json(row: Any, now: datetime | None = None) -> dict[str, Any]:
    age = int((now - row.placed_at).total_seconds()) if now is not None and row.placed_at is not None else None
    return {"pause_id": row.id, "domain": row.domain, "reason": row.reason, "requested_by": row.requested_by,
            "requested_at": row.requested_at.isoformat(),
            "placed_at": row.placed_at.isoformat() if row.placed_at else None,
            "lifted_at": row.lifted_at.isoformat() if row.lifted_at else None,
            "age_seconds": age}


def _domain(value: object) -> str:
    text = str(value or "").strip()
    if "@" in text:
        text = text.rpartition("@")[2]
    if not text:
        raise invalid("E_DOMAIN_PAUSE_DOMAIN_REQUIRED", "The pause names no domain.",
                      "A pause stops the mail of one sending domain.",
                      "Send {\"domain\": \"example.org\", \"reason\": \"...\"}.")
    return normalise_domain(text)


def request(conn: Connection, *, org_id: str, actor_id: str, domain: object, reason: object,
            now: datetime) -> dict[str, Any]:
    """Ask two other administrators to pause ``domain``; returns ``{pause_id, approval_id, domain, reason,
    stages, eligible}``.

    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_DOMAIN_PAUSE_DOMAIN_REQUIRED`` / ``E_DOMAIN_MALFORMED`` /
    ``E_DOMAIN_PAUSE_REASON_REQUIRED`` (422), ``E_DOMAIN_PAUSE_UNSATISFIABLE``, ``E_DOMAIN_ALREADY_PAUSED``,
    ``E_DOMAIN_PAUSE_PENDING`` (409). Nothing is written when it raises.
    """
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("ask for a domain pause")
    name = _domain(domain)
    why = str(reason or "").strip()
    if not why:
        raise invalid("E_DOMAIN_PAUSE_REASON_REQUIRED", "A pause request needs a reason.",
                      "The approvers decide on the reason; it is stored with the request.",
                      "Send a non-blank reason.", domain=name)
    p = domain_pauses.c
    in_force = conn.execute(select(p.id).where(p.org_id == org_id, p.domain == name, p.placed_at.is_not(None),
                                               p.lifted_at.is_(None))).first()
    if in_force is not None:
        raise conflict("E_DOMAIN_ALREADY_PAUSED", f"Sending from {name} is already paused.",
                       "One pause per domain is in force at a time.",
                       "See GET /api/domain-pauses; lift it with POST /api/domain-pauses/{id}/lift.",
                       domain=name, pause_id=in_force.id)
    pending = conn.execute(select(p.id).join(approvals, and_(
                               approvals.c.subject_id == p.id,
                               approvals.c.subject_kind == ap.SubjectKind.DOMAIN_PAUSE.value))
                           .where(p.org_id == org_id, p.domain == name, approvals.c.state == "pending")).first()
    if pending is not None:
        raise conflict("E_DOMAIN_PAUSE_PENDING", f"A pause of {name} is already waiting for approval.",
                       "One request per domain is open at a time.",
                       "Approve or deny it: GET /api/approvals, POST /api/approvals/{id}/decide.",
                       domain=name, pause_id=pending.id)
    plan = ap.plan(conn, org_id=org_id, kind=ap.SubjectKind.DOMAIN_PAUSE, scope_id=org_id, actor_id=actor_id,
                   stages=PAUSE_STAGES)
    if plan.shortfall is not None:
        raise MailnodeError(
            code="E_DOMAIN_PAUSE_UNSATISFIABLE",
            what=f"Pausing {name} needs {budgets.DOMAIN_PAUSE_APPROVERS} other administrators; "
                 f"this organisation has {len(plan.eligible)}.",
            why="A pause stops a customer's mail, so two administrators other than the one asking must agree; "
                "until it is placed the domain keeps sending.",
            fix="Alone you can still stop this mail: publish a policy that denies it (POST /api/policies, then "
                "POST /api/policies/{id}/publish) and cancel the sends in flight (POST /api/sends/{id}/cancel); "
                "or make more administrators (POST /api/access with relation org.admin).",
            status=409, detail={"domain": name, "other_administrators": len(plan.eligible),
                                "needed": budgets.DOMAIN_PAUSE_APPROVERS})
    pid = new_id("dpz")
    conn.execute(domain_pauses.insert().values(id=pid, org_id=org_id, domain=name, reason=why, requested_by=actor_id,
                                               requested_at=now))
    aid = ap.write_request(conn, org_id=org_id, plan=plan, subject_id=pid, now=now,
                           extra={"domain": name, "reason": why})
    return {"pause_id": pid, "approval_id": aid, "domain": name, "reason": why,
            "stages": [s.to_json() for s in plan.stages], "eligible": len(plan.eligible)}


def lift(conn: Connection, *, org_id: str, actor_id: str, pause_id: str, reason: object, now: datetime
         ) -> dict[str, Any]:
    """Lift a pause in force (one administrator, reason optional); returns ``{pause_id, domain, lifted_at}``.

    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_DOMAIN_PAUSE`` (404), ``E_DOMAIN_PAUSE_NOT_PLACED``,
    ``E_DOMAIN_PAUSE_ALREADY_LIFTED`` (409, also when another lift won the race).
    """
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("lift a domain pause")
    parse_id(pause_id, "dpz", "pause_id")
    p = domain_pauses.c
    row = conn.execute(select(domain_pauses).where(p.id == pause_id, p.org_id == org_id)).first()
    if row is None:
        raise not_found("E_NO_DOMAIN_PAUSE", f"No domain pause {pause_id}.",
                        fix="List pauses in force with GET /api/domain-pauses.", pause_id=pause_id)
    if row.placed_at is None:
        raise conflict("E_DOMAIN_PAUSE_NOT_PLACED", f"The pause of {row.domain} was asked for but never placed.",
                       "Only a pause in force can be lifted; a request is settled by its approvers.",
                       "Decide the request with POST /api/approvals/{id}/decide.", pause_id=pause_id)
    note = str(reason).strip() if reason is not None and str(reason).strip() else None
    done = conn.execute(update(domain_pauses).where(p.id == pause_id, p.placed_at.is_not(None), p.lifted_at.is_(None))
                        .values(lifted_at=now, lifted_by=actor_id, lifted_reason=note))
    if done.rowcount != 1:
        raise conflict("E_DOMAIN_PAUSE_ALREADY_LIFTED", f"The pause of {row.domain} is already lifted.",
                       "A pause is lifted once.", "Nothing to do; GET /api/domain-pauses lists those in force.",
                       pause_id=pause_id)
    audit.append(conn, org_id=org_id, at=now, action="domain.pause_lifted", actor_id=actor_id, subject=pause_id,
                 detail={"pause_id": pause_id, "domain": row.domain, "placed_at": row.placed_at.isoformat(),
                         "reason": note})
    return {"pause_id": pause_id, "domain": row.domain, "lifted_at": now.isoformat()}


def in_force(conn: Connection, *, org_id: str, now: datetime) -> list[dict[str, Any]]:
    """Every pause in force, by domain, with its reason and age (one statement)."""
    p = domain_pauses.c
    rows = conn.execute(select(domain_pauses).where(p.org_id == org_id, p.placed_at.is_not(None),
                                                    p.lifted_at.is_(None)).order_by(p.domain)).all()
    return [_json(r, now) for r in rows]


def pending_requests(conn: Connection, *, org_id: str) -> list[dict[str, Any]]:
    """Pause requests whose approval is still pending, oldest first (one statement)."""
    p = domain_pauses.c
    rows = conn.execute(select(domain_pauses, approvals.c.id.label("approval_id"))
                        .join(approvals, and_(approvals.c.subject_id == p.id,
                                              approvals.c.subject_kind == ap.SubjectKind.DOMAIN_PAUSE.value))
                        .where(p.org_id == org_id, approvals.c.state == "pending")
                        .order_by(p.requested_at, p.id)).all()
    return [{**_json(r), "approval_id": r.approval_id} for r in rows]
