"""Routes for an organisation's content retention (spec/transactional.md §5; issue 9).

- ``GET /api/settings/retention``: ``{"retention": {inbound_raw_seconds, sealed_body_seconds,
  ceiling_seconds}}``, administrators (403 ``E_NOT_AN_ADMINISTRATOR`` otherwise).
- ``PATCH /api/settings/retention`` with any of the three (seconds): administrators; each value a JSON
  integer (``true``, ``"10"`` or ``10.5``: ``E_REQUEST_INVALID``, 422) of at most
  ``budgets.RETENTION_SECONDS_MAX`` (``E_BUDGET_EXCEEDED``, 422, naming the limit), each kind's retention
  above zero and at most the ceiling (``E_RETENTION_INCOHERENT``, 422). A refusal writes nothing.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.models import Strict
from mailnode.api.responses import errors
from mailnode.retention import io as retention_io

router = APIRouter(tags=["retention"])


class RetentionPatch(Strict):
    """Any of the three settings, seconds. Strict integers: pydantic's lax ``int`` would read ``true`` as 1
    second and ``"10"`` as 10; the bounds are ``retention.rules.check_changes``'."""

    inbound_raw_seconds: StrictInt | None = None
    sealed_body_seconds: StrictInt | None = None
    ceiling_seconds: StrictInt | None = None


class RetentionSettings(BaseModel):
    """The organisation's retention (``retention.io.settings_json``), in seconds."""

    model_config = ConfigDict(extra="forbid")

    inbound_raw_seconds: int = Field(description="how long a received message's raw bytes are kept")
    sealed_body_seconds: int = Field(description="how long a sealed send's body is kept")
    ceiling_seconds: int = Field(description="the most any kind may be kept")


class RetentionAnswer(BaseModel):
    """``{"retention": RetentionSettings}``."""

    model_config = ConfigDict(extra="forbid")

    retention: RetentionSettings


@router.get("/api/settings/retention", response_model=RetentionAnswer, responses=errors(403))
def get_retention(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The organisation's retention settings."""
    with node.read() as conn:
        return {"retention": retention_io.get_settings(conn, org_id=caller.org_id, actor_id=caller.principal_id)}


@router.patch("/api/settings/retention", response_model=RetentionAnswer, responses=errors(403))
def patch_retention(body: RetentionPatch, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Change some of the retention settings."""
    with node.begin() as conn:
        return {"retention": retention_io.update_settings(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                                          changes=body.model_dump(), now=node.clock.now())}
