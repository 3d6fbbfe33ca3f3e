"""``GET /api/provider-status``: each transport's provider breaker and quota reading (administrators).

Operational posture is not for every caller (seed 002 keeps it default-denied): a person whose code could
not be sent reads the vague 503, not why. ``quota_percent`` is null, never 0, without a reading today.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.responses import errors
from mailnode.governance import provider_io
from mailnode.governance.provider import BreakerState, PauseKind

router = APIRouter(prefix="/api", tags=["provider"])

_INSTANT: JsonDict = {"format": "date-time"}


class Ceilings(BaseModel):
    """The day's reading at which each class of mail stops (deferrable: the daily limit, or null)."""

    model_config = ConfigDict(extra="forbid")

    realtime: int
    correspondence: int
    deferrable: int | None


class ProviderReading(BaseModel):
    """One transport's breaker and quota reading (``provider_io.to_json``), instants in ISO 8601 UTC."""

    model_config = ConfigDict(extra="forbid")

    transport: str
    state: BreakerState
    pause_kind: PauseKind | None
    pause_error: str | None
    paused_at: str | None = Field(json_schema_extra=_INSTANT)
    unavailable_until: str | None = Field(json_schema_extra=_INSTANT)
    last_success_at: str | None = Field(json_schema_extra=_INSTANT)
    daily_used: int | None
    daily_observed_at: str | None = Field(json_schema_extra=_INSTANT)
    daily_limit: int | None
    quota_percent: float | None = Field(description="null, never 0, without a reading today")
    ceilings: Ceilings


class ProviderStatusAnswer(BaseModel):
    """``{"providers": [...]}``."""

    model_config = ConfigDict(extra="forbid")

    providers: list[ProviderReading]


@router.get("/provider-status", response_model=ProviderStatusAnswer, responses=errors(403))
def provider_status(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """``{"providers": [...]}``: every stored transport, and the configured one even before its first answer."""
    with node.read() as conn:
        return {"providers": provider_io.status_of(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                                   settings=node.settings, now=node.clock.now())}
