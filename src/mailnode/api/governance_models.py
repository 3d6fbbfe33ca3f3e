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


class PolicyConditions(_Answer):
    """A policy version's conditions (``policy.Conditions.to_json``); each null is unconstrained."""

    mailbox_id: str | None = id_field("mbx")
    actor_id: str | None
    actor_kind: str | None
    recipient_external: bool | None
    is_reply: bool | None
    org_daily_volume_min: int | None


class PolicyVersion(_Answer):
    """One version of a policy (``policies._version_json``): the draft has no ``version`` number yet."""

    id: str
    version: int | None = Field(description="1, 2, ... once published; null for the draft")
    state: str = Field(description="draft | published | superseded")
    outcome: str = Field(description="allow | hold | require_approval | deny")
    conditions: PolicyConditions
    stages: list[ApprovalStage]
    canonical_sha256: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    published_at: str | None = Field(json_schema_extra=_INSTANT)
    superseded_at: str | None = Field(json_schema_extra=_INSTANT)


class Policy(_Answer):
    """A policy with every version, draft first, then newest version first (``policies.get``)."""

    id: str = id_field("pol")
    name: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    versions: list[PolicyVersion]


class PolicyAnswer(_Answer):
    """``{"policy": Policy}``: ``POST /api/policies``, ``.../draft``, ``.../publish``."""

    policy: Policy


class PolicyListed(Policy):
    """A policy as ``GET /api/policies`` lists it: with ``cursor``, its name, the key of the next page."""

    cursor: str


class PolicyPage(_Answer):
    """One page of ``GET /api/policies``, by name; ``next_cursor`` is the last name (null at the end)."""

    policies: list[PolicyListed]
    next_cursor: str | None


class ApprovalDomainPause(_Answer):
    """What a ``domain_pause`` approval asks: the pause, its domain and reason."""

    pause_id: str = id_field("dpz")
    domain: str
    reason: str


class ApprovalHoldLiftHold(_Answer):
    """The legal hold a lift would lift: its mailbox, matter, window and whether it is still in force."""

    id: str = id_field("hld")
    mailbox_id: str | None = id_field("mbx")
    matter_id: str | None
    from_date: str | None = Field(json_schema_extra=_INSTANT)
    to_date: str | None = Field(json_schema_extra=_INSTANT)
    placed_by: str | None
    placed_at: str | None = Field(json_schema_extra=_INSTANT)
    in_force: bool


class ApprovalHoldLift(_Answer):
    """What a ``hold_lift`` approval asks (``approvals._hold_lift``)."""

    lift_id: str
    reason: str | None
    requested_by: str | None
    requested_at: str | None = Field(json_schema_extra=_INSTANT)
    hold: ApprovalHoldLiftHold


class ApprovalSupervised(_Answer):
    """What a ``supervised_read`` approval asks (``approvals._supervised``): who would read which mailbox's
    mail facts, in which scope, for how long (seconds) and why."""

    grant_id: str
    mailbox_id: str = id_field("mbx")
    grantee_id: str
    scope: str
    reason: str | None
    duration_seconds: int
    requested_at: str | None = Field(json_schema_extra=_INSTANT)


class PendingApproval(_Answer):
    """A pending approval the caller may decide (``approvals._json``), with what it asks: ``domain_pause``,
    ``hold_lift`` or ``supervised`` by its kind, null for the other kinds."""

    id: str = id_field("apr")
    subject_kind: str = Field(description="send_manifest | domain_pause | hold_lift | supervised_read")
    subject_id: str
    scope_id: str = Field(description="the mailbox, or the organisation, whose deciders may decide it")
    actor_id: str = Field(description="who asked (never a decider of it)")
    state: str
    requested_at: str = Field(json_schema_extra=_INSTANT)
    resolved_at: str | None = Field(json_schema_extra=_INSTANT)
    expires_at: str | None = Field(json_schema_extra=_INSTANT)
    stages: list[ApprovalStage] = Field(description="each stage's approvals still needed")
    open_stage: ApprovalStage | None
    decided_by_me: bool
    domain_pause: ApprovalDomainPause | None
    hold_lift: ApprovalHoldLift | None
    supervised: ApprovalSupervised | None


class ApprovalPage(_Answer):
    """One page of ``GET /api/approvals``, oldest first; ``next_cursor`` is the last id (null at the end)."""

    approvals: list[PendingApproval]
    next_cursor: str | None = id_field("apr")


class ApprovalShortfall(_Answer):
    """Why a stage can no longer be filled (``matching.Shortfall.to_json``)."""

    ordinal: int
    required: int
    available: int
    short: int
    team_id: str | None = id_field("tm")


class _EffectReport(_Answer):
    """What the decision's effect did (``governance.effects``): only the keys of the approval's kind appear
    (the route answers with ``response_model_exclude_unset``, so an absent key stays absent)."""

    manifest_state: str | None = Field(default=None, description="send_manifest: the send's state now")
    domain_paused: bool | None = Field(default=None, description="domain_pause: whether the pause is placed")
    pause_id: str | None = id_field("dpz", default=None)
    domain: str | None = Field(default=None)
    hold_lifted: bool | None = Field(default=None, description="hold_lift: whether the hold was lifted")
    hold_id: str | None = id_field("hld", default=None)
    supervised_granted: bool | None = Field(default=None, description="supervised_read: whether it opened")
    grant_id: str | None = Field(default=None)
    expires_at: str | None = Field(default=None, json_schema_extra=_INSTANT)


class ApprovalDecided(_EffectReport):
    """A decision recorded (``approvals.decide``) and, when it settled the approval, its effect."""

    approval_id: str = id_field("apr")
    subject_kind: str
    subject_id: str
    decision: Literal["approve", "deny"]
    reason: str | None = Field(description="the decider's words, when given (kept in approval.decided)")
    stage_ordinal: int
    approval_state: str = Field(description="pending | approved | denied")
    completed: bool
    open_stage: ApprovalStage | None
    conflict: Literal["subject_moved"] | None = Field(description="the effect found the subject moved")


class ApprovalDecidedAnswer(_Answer):
    """``{"decided": ApprovalDecided}``: ``POST /api/approvals/{approval_id}/decide``."""

    decided: ApprovalDecided


class ApprovalWithdrawn(_EffectReport):
    """A standing approval withdrawn (``approvals.withdraw``) and, when that left it unfillable, the effect."""

    approval_id: str = id_field("apr")
    approval_state: str = Field(description="pending | unsatisfiable")
    stage_ordinal: int
    shortfall: ApprovalShortfall | None


class ApprovalWithdrawnAnswer(_Answer):
    """``{"withdrawn": ApprovalWithdrawn}``: ``POST /api/approvals/{approval_id}/withdraw``."""

    withdrawn: ApprovalWithdrawn
