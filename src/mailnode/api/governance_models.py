"""Answer parts the governance routes share, as the OpenAPI document states them (closed models: a field
the service adds and the model lacks fails loudly, never vanishes)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.responses import id_field
from mailnode.governance.breakers import Breaker


class ApprovalStage(BaseModel):
    """One approval stage (``policy.Stage.to_json``): ``count`` distinct approvers at ``ordinal`` (1-based),
    optionally from a team."""

    model_config = ConfigDict(extra="forbid")

    ordinal: int
    count: int
    team_id: str | None = id_field("tm")


class _Answer(BaseModel):
    """An answer's part: closed (a field the service adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


_INSTANT: JsonDict = {"format": "date-time"}


class BreakerLimit(_Answer):
    """One overridable breaker limit (``limits.to_json``): ``value`` is the one in force, with its default,
    where the default came from, its unit and its inclusive bounds."""

    name: str
    value: int
    default: int
    overridden: bool
    source: str
    unit: str
    minimum: int
    maximum: int


class BreakerLimits(_Answer):
    """The organisation's breaker limits and who changed them last (null: never changed)."""

    limits: list[BreakerLimit]
    updated_by: str | None
    updated_at: str | None = Field(json_schema_extra=_INSTANT)


class BreakerLimitsAnswer(_Answer):
    """``{"breaker_limits": BreakerLimits}``."""

    breaker_limits: BreakerLimits


class DomainPauseAsked(_Answer):
    """A domain pause asked (``pauses.request``): the approval it waits on and its stages."""

    pause_id: str = id_field("dpz")
    approval_id: str = id_field("apr")
    domain: str
    reason: str
    stages: list[ApprovalStage]
    eligible: int


class DomainPauseAskedAnswer(_Answer):
    """``{"pause": DomainPauseAsked}``: ``POST /api/domain-pauses``."""

    pause: DomainPauseAsked


class DomainPause(_Answer):
    """A domain pause in force (``pauses._json``); ``age_seconds`` since it was placed."""

    pause_id: str = id_field("dpz")
    domain: str
    reason: str
    requested_by: str
    requested_at: str = Field(json_schema_extra=_INSTANT)
    placed_at: str | None = Field(json_schema_extra=_INSTANT)
    lifted_at: str | None = Field(json_schema_extra=_INSTANT)
    age_seconds: int | None


class DomainPauseList(_Answer):
    """``GET /api/domain-pauses``: the pauses in force."""

    pauses: list[DomainPause]


class DomainPauseLifted(_Answer):
    """A pause lifted (``pauses.lift``)."""

    pause_id: str = id_field("dpz")
    domain: str
    lifted_at: str = Field(json_schema_extra=_INSTANT)


class DomainPauseLiftedAnswer(_Answer):
    """``{"lifted": DomainPauseLifted}``: ``POST /api/domain-pauses/{pause_id}/lift``."""

    lifted: DomainPauseLifted


class BreakerReading(_Answer):
    """One rate breaker's reading now (``breakers.Reading.to_json``): what it observed over its window, its
    limit, whether it is armed (enough observations) and tripped, and the sentence a person reads."""

    breaker: Breaker
    observations: int
    observed: int
    limit: int
    min_observations: int | None
    window_seconds: int
    armed: bool
    unarmed_reason: str | None
    percent: int | None
    tripped: bool
    retry_after_seconds: int | None
    retry_after_exact: bool
    basis: Literal["events", "handed_over"]
    sentence: str


class BreakerList(_Answer):
    """``GET /api/breakers``: every rate breaker's reading, armed or not."""

    breakers: list[BreakerReading]
