"""Routes for supervised grants (issue 17 item 14; ``mailnode.governance.supervised``).

``POST /api/supervised-grants {mailbox_id, scope, reason, duration_seconds}`` (administrators) asks for a
time-limited grant for the caller, answered 201 ``{supervised_grant, approval_id, stages, eligible}``; two
holders of ``approval.decide`` on the mailbox decide it at ``POST /api/approvals/{id}/decide``.
``GET /api/supervised-grants`` lists the organisation's grants (administrators), each with ``live``.
Codes: ``mailnode.governance.supervised``'s.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.governance_models import ApprovalStage
from mailnode.api.models import Strict
from mailnode.api.responses import errors, id_field
from mailnode.governance import supervised

router = APIRouter(prefix="/api/supervised-grants", tags=["governance"])


class SupervisedGrantIn(Strict):
    """``{mailbox_id, scope, reason, duration_seconds}``: what to read, why and for how long (seconds)."""

    mailbox_id: str
    scope: str
    reason: str = ""
    duration_seconds: int


_INSTANT: JsonDict = {"format": "date-time"}


class SupervisedGrant(BaseModel):
    """A supervised grant (``supervised.grant_json``); ``live``: it opens reads now."""

    model_config = ConfigDict(extra="forbid")

    id: str = id_field("sgr")
    mailbox_id: str = id_field("mbx")
    grantee_id: str
    scope: str
    reason: str
    duration_seconds: int
    requested_at: str | None = Field(json_schema_extra=_INSTANT)
    granted_at: str | None = Field(json_schema_extra=_INSTANT)
    expires_at: str | None = Field(json_schema_extra=_INSTANT)
    refused_at: str | None = Field(json_schema_extra=_INSTANT)
    live: bool


class SupervisedGrantAsked(BaseModel):
    """``POST /api/supervised-grants``: the grant asked, the approval it waits on, its stages."""

    model_config = ConfigDict(extra="forbid")

    supervised_grant: SupervisedGrant
    approval_id: str = id_field("apr")
    stages: list[ApprovalStage]
    eligible: int


class SupervisedGrantList(BaseModel):
    """``GET /api/supervised-grants``: newest first."""

    model_config = ConfigDict(extra="forbid")

    supervised_grants: list[SupervisedGrant]


@router.post("", status_code=201, response_model=SupervisedGrantAsked, responses=errors(403, 409))
def request(body: SupervisedGrantIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Ask for a supervised grant for yourself; nothing opens until two deciders approve it."""
    with node.begin() as conn:
        return supervised.request(conn, org_id=caller.org_id, actor_id=caller.principal_id, at=node.clock.now(),
                                  mailbox_id=body.mailbox_id, scope=body.scope, reason=body.reason,
                                  duration_seconds=body.duration_seconds)


@router.get("", response_model=SupervisedGrantList, responses=errors(403))
def list_(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The organisation's supervised grants, newest first (at most ``budgets.LIST_LIMIT_MAX``)."""
    with node.read() as conn:
        return {"supervised_grants": supervised.list_grants(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                                            now=node.clock.now())}
