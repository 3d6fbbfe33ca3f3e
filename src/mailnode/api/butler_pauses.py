"""Routes for Butler pauses (administrators; seed 003 "Who places, who resumes"; spec/butler.md §9).

``GET /api/butler-pauses?in_force=&limit=&cursor=``: ``{"butler_pauses": [...], "next_cursor"}`` newest
first, each with the figure behind it and, while in force, the route that resumes it.
``POST /api/butler-pauses/{id}/resume {"reason"}``: one administrator, alone, with a non-blank reason;
``{"butler_pause": {...}}``, audited ``butler.resumed``. There is deliberately no route that places a
pause: only the node's loop detector does. Codes: ``E_BUTLER_NO_SUCH_PAUSE`` (404, also to anyone not an
administrator), ``E_BUTLER_PAUSE_REASON_REQUIRED`` (422), ``E_BUTLER_PAUSE_ALREADY_RESUMED`` (409).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from mailnode.api.deps import ButlerPausePageDep, CallerDep, NodeDep, paged
from mailnode.api.models import Strict
from mailnode.api.responses import ButlerPauseId, errors, id_field
from mailnode.butler import pause

router = APIRouter(prefix="/api/butler-pauses", tags=["butlers"])


class ResumeIn(Strict):
    """``{"reason"}``: why it is safe to run the Butler again (mandatory, not blank)."""

    reason: str = ""


class ButlerPause(BaseModel):
    """A Butler pause (``pause.pause_json``); ``resume`` is the route that resumes it while it is in force."""

    model_config = ConfigDict(extra="forbid")

    id: str = id_field("bpz")
    butler_id: str = id_field("btl")
    butler_name: str
    reason: str
    detail: str
    figure: dict[str, Any] = Field(description="the reading that tripped it; its keys depend on the reason "
                                               "(a loop: self_provoked, limit, window_seconds, chain)")
    tripped_by: str | None
    placed_at: str = Field(json_schema_extra={"format": "date-time"})
    resumed_at: str | None = Field(json_schema_extra={"format": "date-time"})
    resumed_by: str | None
    resumed_reason: str | None
    resume: str | None


class ButlerPausePage(BaseModel):
    """``GET /api/butler-pauses``: newest first, and the cursor of the next page (null at the end)."""

    model_config = ConfigDict(extra="forbid")

    butler_pauses: list[ButlerPause]
    next_cursor: str | None = id_field("bpz")


class ButlerPauseAnswer(BaseModel):
    """``{"butler_pause": ButlerPause}``: a pause resumed."""

    model_config = ConfigDict(extra="forbid")

    butler_pause: ButlerPause


@router.get("", response_model=ButlerPausePage, responses=errors(403))
def list_(node: NodeDep, caller: CallerDep, page: ButlerPausePageDep, in_force: bool = False) -> dict[str, Any]:
    """Pauses newest first, optionally only those in force."""
    with node.read() as conn:
        items = pause.list_pauses(conn, org_id=caller.org_id, principal_id=caller.principal_id, limit=page.limit,
                                  cursor=page.cursor, in_force=in_force)
    return paged("butler_pauses", items, page)


@router.post("/{pause_id}/resume", response_model=ButlerPauseAnswer, responses=errors(403, 409))
def resume(pause_id: ButlerPauseId, body: ResumeIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Resume one pause with a reason."""
    with node.begin() as conn:
        return {"butler_pause": pause.resume(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                             at=node.clock.now(), pause_id=pause_id, reason=body.reason)}
