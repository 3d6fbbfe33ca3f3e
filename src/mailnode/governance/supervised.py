"""Supervised grants: an administrator reads a mailbox's mail facts under an audited, time-limited grant.

Seed 003 "`org.admin` is the floor on `inspect`, and not the whole check" (issue 17 item 14); spec/butler.md
§8.2 (``inspect``); spec/outbound.md §6.2 (``supervised_read``). ``org.admin`` implies no mailbox read, so an
administrator inspecting a Butler run sees its content facts (``subject``, ``from``, ``return_path``,
``parse_error``) only with ``mailbox.metadata.read`` / ``mailbox.content.read`` on the delivery's mailbox, or
under a live supervised grant of either scope. The grant is a ceremony, not a relation:

1. ``request``: an administrator asks for ``scope`` (``metadata`` or ``content``) on one mailbox, for a
   stated reason and at most ``budgets.SUPERVISED_GRANT_MAX_SECONDS``. One ``supervised_grants`` row and an
   approval (kind ``supervised_read``) that ``budgets.SUPERVISED_APPROVERS`` holders of ``approval.decide``
   on the mailbox other than the one asking must approve (``POST /api/approvals/{id}/decide``), audited
   ``supervised.requested`` and ``approval.requested``. Too few such people: ``E_SUPERVISED_UNSATISFIABLE``
   (409), nothing written.
2. Approval completes: ``governance.effects.supervised_granted`` sets ``granted_at`` and ``expires_at`` and
   audits ``supervised.granted``. A denial (or an approval nobody can complete any more) sets ``refused_at``.
3. ``live_grant``: the grantee's live grant on a mailbox (``granted_at <= now < expires_at``), or None.
4. ``record_opened``: before any fact a grant opened is shown, ``supervised.opened`` is appended naming the
   grant, the mailbox and what was read, in the reader's transaction; if the trail cannot be written the read
   fails with it (the audit's exception propagates), so nothing is disclosed unrecorded. A standing relation
   records nothing (the product's rule for metadata reads).

Codes: ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_SUCH_MAILBOX`` (404), ``E_SUPERVISED_SCOPE_UNKNOWN``,
``E_SUPERVISED_REASON_REQUIRED``, ``E_SUPERVISED_DURATION_INVALID``, ``E_BUDGET_EXCEEDED`` (422),
``E_SUPERVISED_UNSATISFIABLE`` (409).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from mailnode import audit, budgets
from mailnode.authz import is_admin
from mailnode.errors import MailnodeError, invalid, limit_exceeded, not_an_administrator, not_found
from mailnode.governance import approvals as ap
from mailnode.governance.policy import Stage
from mailnode.ids import new_id, parse_id
from mailnode.schema.governance_supervised import SUPERVISED_SCOPES, supervised_grants
from mailnode.schema.mail import mailboxes

_G = supervised_grants.c
#: The one stage a supervised grant's approval has (reference: SUPERVISED_STAGES = [2]).
SUPERVISED_STAGES: tuple[Stage, ...] = (Stage(1, budgets.SUPERVISED_APPROVERS),)


def grant_json(row: Any, now: datetime | None = None) -> dict[str, Any]:
    """A grant as the API shows it; ``live`` is whether it opens reads at ``now`` (when given)."""
    def iso(v: datetime | None) -> str | None:
        return v.isoformat() if v is not None else None

    out = {"id": row.id, "mailbox_id": row.mailbox_id, "grantee_id": row.grantee_id, "scope": row.scope,
           "reason": row.reason, "duration_seconds": row.duration_seconds, "requested_at": iso(row.requested_at),
           "granted_at": iso(row.granted_at), "expires_at": iso(row.expires_at), "refused_at": iso(row.refused_at)}
    if now is not None:
        out["live"] = is_live(row.granted_at, row.expires_at, now)
    return out


def is_live(granted_at: datetime | None, expires_at: datetime | None, now: datetime) -> bool:
    """Whether a grant opens reads at ``now`` (pure): granted, and ``granted_at <= now < expires_at``."""
    return granted_at is not None and expires_at is not None and granted_at <= now < expires_at


def request(conn: Connection, *, org_id: str, actor_id: str, at: datetime, mailbox_id: str, scope: str,
            reason: str, duration_seconds: int) -> dict[str, Any]:
    """Ask for a supervised grant for ``actor_id`` (see the module docstring); returns ``{supervised_grant,
    approval_id, stages, eligible}``. Raises the module's codes; nothing is written when it raises."""
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("ask for a supervised grant")
    parse_id(mailbox_id, "mbx", "mailbox_id")
    if conn.execute(select(mailboxes.c.id).where(mailboxes.c.id == mailbox_id,
                                                 mailboxes.c.org_id == org_id)).first() is None:
        raise not_found("E_NO_SUCH_MAILBOX", f"No mailbox {mailbox_id}.", fix="List mailboxes: GET /api/mailboxes.",
                        mailbox_id=mailbox_id)
    if scope not in SUPERVISED_SCOPES:
        raise invalid("E_SUPERVISED_SCOPE_UNKNOWN", f"{scope[:50]!r} is not a supervised scope.",
                      "A grant opens metadata (subject lines, sender addresses) or content.",
                      f"Send scope one of: {', '.join(SUPERVISED_SCOPES)}.", scope=scope[:50])
    why = (reason or "").strip()
    if not why:
        raise invalid("E_SUPERVISED_REASON_REQUIRED", "A supervised grant needs a reason.",
                      "The deciders decide on it, and it stays on the trail beside every read it opens.",
                      'Send {"reason": "..."}.', mailbox_id=mailbox_id)
    if len(why) > budgets.SUPERVISED_REASON_MAX_CHARS:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "SUPERVISED_REASON_MAX_CHARS", budgets.SUPERVISED_REASON_MAX_CHARS,
                             len(why), "Say it in fewer words.")
    if isinstance(duration_seconds, bool) or not 1 <= duration_seconds <= budgets.SUPERVISED_GRANT_MAX_SECONDS:
        raise invalid("E_SUPERVISED_DURATION_INVALID", f"A grant of {duration_seconds} seconds cannot be asked for.",
                      f"A supervised grant lives between 1 second and SUPERVISED_GRANT_MAX_SECONDS "
                      f"({budgets.SUPERVISED_GRANT_MAX_SECONDS}) from its approval.",
                      "Send duration_seconds within that range; a longer need is a new request.",
                      duration_seconds=duration_seconds, max=budgets.SUPERVISED_GRANT_MAX_SECONDS)
    plan = ap.plan(conn, org_id=org_id, kind=ap.SubjectKind.SUPERVISED_READ, scope_id=mailbox_id, actor_id=actor_id,
                   stages=SUPERVISED_STAGES)
    if plan.shortfall is not None:
        raise MailnodeError(
            code="E_SUPERVISED_UNSATISFIABLE",
            what=f"A supervised grant on mailbox {mailbox_id} needs {budgets.SUPERVISED_APPROVERS} deciders other "
                 f"than you; it has {len(plan.eligible)}.",
            why="Reading a mailbox's mail under supervision is agreed by two people other than the reader.",
            fix="Grant approval.decide on the mailbox to more people (POST /api/access), then ask again.",
            status=409, detail={"mailbox_id": mailbox_id, "eligible": len(plan.eligible),
                                "needed": budgets.SUPERVISED_APPROVERS})
    gid = new_id("sgr")
    conn.execute(supervised_grants.insert().values(
        id=gid, org_id=org_id, mailbox_id=mailbox_id, grantee_id=actor_id, scope=scope, reason=why,
        duration_seconds=duration_seconds, requested_at=at))
    audit.append(conn, org_id=org_id, at=at, action="supervised.requested", actor_id=actor_id, subject=gid,
                 detail={"mailbox_id": mailbox_id, "scope": scope, "reason": why, "duration_seconds": duration_seconds})
    aid = ap.write_request(conn, org_id=org_id, plan=plan, subject_id=gid, now=at,
                           extra={"mailbox_id": mailbox_id, "scope": scope, "reason": why})
    row = conn.execute(select(supervised_grants).where(_G.id == gid)).one()
    return {"supervised_grant": grant_json(row, at), "approval_id": aid,
            "stages": [s.to_json() for s in plan.stages], "eligible": len(plan.eligible)}


def list_grants(conn: Connection, *, org_id: str, actor_id: str, now: datetime) -> list[dict[str, Any]]:
    """The organisation's supervised grants, newest first (administrators; ``E_NOT_AN_ADMINISTRATOR`` else)."""
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("list supervised grants")
    rows = conn.execute(select(supervised_grants).where(_G.org_id == org_id)
                        .order_by(_G.requested_at.desc(), _G.id.desc())
                        .limit(budgets.LIST_LIMIT_MAX)).all()
    return [grant_json(r, now) for r in rows]


def live_grant(conn: Connection, *, org_id: str, grantee_id: str, mailbox_id: str, now: datetime) -> Any | None:
    """The grantee's live grant on the mailbox (any scope: each opens the facts a run records), the one
    expiring last; None when there is none (one statement)."""
    return conn.execute(select(supervised_grants).where(
        _G.org_id == org_id, _G.grantee_id == grantee_id, _G.mailbox_id == mailbox_id,
        _G.granted_at.is_not(None), _G.granted_at <= now, _G.expires_at > now)
        .order_by(_G.expires_at.desc()).limit(1)).first()


def record_opened(conn: Connection, *, org_id: str, reader_id: str, at: datetime, grant: Any, subject: str,
                  what: str, fields: list[str]) -> None:
    """Append ``supervised.opened`` before the facts a grant opened are shown (one statement; raises with the
    audit when the trail cannot be written, so the caller discloses nothing)."""
    audit.append(conn, org_id=org_id, at=at, action="supervised.opened", actor_id=reader_id, subject=subject,
                 detail={"grant_id": grant.id, "mailbox_id": grant.mailbox_id, "scope": grant.scope, "what": what,
                         "fields": fields, "reason": grant.reason})
