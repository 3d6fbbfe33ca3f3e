"""Answer parts the governance routes share, as the OpenAPI document states them (closed models: a field
the service adds and the model lacks fails loudly, never vanishes)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mailnode.api.responses import id_field


class ApprovalStage(BaseModel):
    """One approval stage (``policy.Stage.to_json``): ``count`` distinct approvers at ``ordinal`` (1-based),
    optionally from a team."""

    model_config = ConfigDict(extra="forbid")

    ordinal: int
    count: int
    team_id: str | None = id_field("tm")
