"""Routes for the audit trail: ``GET /api/audit`` and ``POST /api/audit/verify`` (administrators)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict
from sqlalchemy import select

from mailnode import audit, budgets
from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.responses import errors, id_field
from mailnode.authz import require_admin

router = APIRouter(prefix="/api/audit", tags=["audit"])

_INSTANT: JsonDict = {"format": "date-time"}


class _Answer(BaseModel):
    """An answer's part: closed (a field the route adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


class AuditEntry(_Answer):
    """One entry of the hash-chained trail, as stored (``audit.audit_entries``)."""

    id: str = id_field("aud")
    seq: int = Field(ge=1, description="the entry's place in the organisation's chain")
    at: str = Field(json_schema_extra=_INSTANT)
    actor_id: str | None
    actor_kind: str
    action: str
    subject: str | None
    outcome: str
    detail: str | None = Field(description="the entry's detail as recorded (JSON text), or null")
    hash: str


class AuditPage(_Answer):
    """``GET /api/audit``: entries newest first and the sequence number to continue below (null at the end)."""

    entries: list[AuditEntry]
    next_cursor: int | None


class BrokenLink(_Answer):
    """The first link of the chain that does not hold."""

    seq: int | None
    id: str | None
    reason: str | None


class Verification(_Answer):
    """``audit.VerifyResult.to_json``: rows checked, whether the chain is intact, and the first break."""

    checked: int
    intact: bool
    broken_at: BrokenLink | None


class VerificationAnswer(_Answer):
    """``{"verification": Verification}``: ``POST /api/audit/verify``."""

    verification: Verification


@router.get("", response_model=AuditPage, responses=errors(403))
def list_entries(node: NodeDep, caller: CallerDep, action: str | None = None, limit: int | None = None,
                 cursor: Annotated[int | None, Query(ge=0, le=budgets.AUDIT_CURSOR_MAX)] = None) -> dict[str, Any]:
    """Entries newest first; ``cursor`` is a sequence number to continue below (0..``AUDIT_CURSOR_MAX``, else
    422 ``E_REQUEST_INVALID`` naming ``query.cursor``); ``action`` filters."""
    n = budgets.AUDIT_LIST_MAX if limit is None else max(1, min(limit, budgets.AUDIT_LIST_MAX))
    t = audit.audit_entries
    with node.read() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, "read the audit trail")
        q = select(t).where(t.c.org_id == caller.org_id)
        if action:
            q = q.where(t.c.action == action)
        if cursor is not None:
            q = q.where(t.c.seq < cursor)
        rows = conn.execute(q.order_by(t.c.seq.desc()).limit(n)).all()
    entries = [{"id": r.id, "seq": r.seq, "at": r.at.isoformat(), "actor_id": r.actor_id, "actor_kind": r.actor_kind,
                "action": r.action, "subject": r.subject, "outcome": r.outcome, "detail": r.detail,
                "hash": r.hash} for r in rows]
    return {"entries": entries, "next_cursor": rows[-1].seq if len(rows) == n and rows else None}


@router.post("/verify", response_model=VerificationAnswer, responses=errors(403))
def verify(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Verify the hash chain; reports the first broken link with its sequence number. The verdict is appended
    as ``audit.verified`` (``audit.record_verification``), so the Limits and health page shows the last one
    without walking the chain. The walk is a read; only the record takes the write transaction."""
    with node.read() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, "verify the audit trail")
        result = audit.verify(conn, caller.org_id)
    with node.begin() as conn:
        audit.record_verification(conn, caller.org_id, result, actor_id=caller.principal_id, now=node.clock.now())
    return {"verification": result.to_json()}
