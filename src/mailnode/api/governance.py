"""Routes for governance: policies, approvals, domain pauses and the rate breakers (seed 000; issue 5).

- ``POST /api/policies`` ``{name, outcome, conditions, stages}``, ``POST /api/policies/{id}/draft``
  ``{outcome, conditions, stages}``, ``POST /api/policies/{id}/publish``: administrators (403
  ``E_NOT_AN_ADMINISTRATOR``); ``GET /api/policies``: administrators, 404 to anyone else.
- ``GET /api/approvals`` (what the caller may decide), ``POST /api/approvals/{id}/decide``
  ``{decision: approve|deny, reason?}`` (anything else ``E_BAD_DECISION``, 422; a reason
  that is not words of at most ``budgets.APPROVAL_DECISION_REASON_MAX_CHARS`` characters
  ``E_APPROVAL_REASON_INVALID``), ``POST /api/approvals/{id}/withdraw``.
- ``POST /api/domain-pauses`` ``{domain, reason}``, ``GET /api/domain-pauses`` (in force),
  ``POST /api/domain-pauses/{id}/lift`` ``{reason?}``. No route pauses outright.
- ``GET /api/breaker-limits`` and ``PATCH /api/breaker-limits`` ``{name: integer | null}`` (null resets to
  the default): the organisation's breaker limits with defaults, sources and bounds, administrators only
  (``governance.limits``; audited ``breaker_limits.changed``).
- ``GET /api/breakers``: every reading, tripped or not, ``{"breakers": [...]}``, to administrators and to
  principals holding a relation on some mailbox (the breakers gate every mailbox's mail); anyone else 403
  ``E_BREAKERS_NOT_VISIBLE``.

Each act is one transaction; codes are documented in ``mailnode.governance``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from mailnode import authz
from mailnode.api.deps import ApprovalPageDep, CallerDep, NamePageDep, NodeDep, paged
from mailnode.api.governance_models import (
    ApprovalDecidedAnswer,
    ApprovalPage,
    ApprovalWithdrawnAnswer,
    BreakerLimitsAnswer,
    BreakerList,
    DomainPauseAskedAnswer,
    DomainPauseLiftedAnswer,
    DomainPauseList,
    PolicyAnswer,
    PolicyPage,
)
from mailnode.api.models import Strict
from mailnode.api.responses import ApprovalId, DomainPauseId, PolicyId, errors
from mailnode.governance import approvals, breakers, limits, pauses, policies
from mailnode.governance.policy import Conditions

router = APIRouter(tags=["governance"])


class ConditionsIn(Strict):
    """A policy's conditions; each null = unconstrained."""

    mailbox_id: str | None = None
    actor_id: str | None = None
    actor_kind: str | None = None
    recipient_external: bool | None = None
    is_reply: bool | None = None
    org_daily_volume_min: int | None = None

    def to_conditions(self) -> Conditions:
        """The domain value."""
        return Conditions(self.mailbox_id, self.actor_id, self.actor_kind, self.recipient_external, self.is_reply,
                          self.org_daily_volume_min)


class StageIn(Strict):
    """One approval stage: ``count`` approvers, optionally from ``team_id`` (validated by the policy plane)."""

    count: Any = None
    team_id: Any = None


class PolicyDraftIn(Strict):
    """A draft: outcome, conditions and stages."""

    outcome: str
    conditions: ConditionsIn = Field(default_factory=ConditionsIn)
    stages: list[StageIn] = Field(default_factory=list)


class PolicyIn(PolicyDraftIn):
    """A new policy: its name and first draft."""

    name: str


class DecisionIn(Strict):
    """``approve`` or ``deny`` (anything else is ``E_BAD_DECISION``) and an optional ``reason`` (words, at most
    ``budgets.APPROVAL_DECISION_REASON_MAX_CHARS`` characters; otherwise ``E_APPROVAL_REASON_INVALID``)."""

    decision: Any = None
    reason: Any = None


class PauseIn(Strict):
    """A pause request: the sending domain and a reason."""

    domain: str | None = None
    reason: str | None = None


class LiftIn(Strict):
    """A lift: an optional reason."""

    reason: str | None = None


@router.post("/api/policies", status_code=201, response_model=PolicyAnswer, responses=errors(403, 404, 409))
def create_policy(body: PolicyIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Create a policy and its first draft."""
    with node.begin() as conn:
        return {"policy": policies.create(conn, org_id=caller.org_id, actor_id=caller.principal_id, name=body.name,
                                          outcome=body.outcome, conditions=body.conditions.to_conditions(),
                                          stages=[s.model_dump() for s in body.stages], now=node.clock.now())}


@router.post("/api/policies/{policy_id}/draft", response_model=PolicyAnswer, responses=errors(403))
def draft_policy(policy_id: PolicyId, body: PolicyDraftIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Replace the policy's draft."""
    with node.begin() as conn:
        return {"policy": policies.edit_draft(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                              policy_id=policy_id, outcome=body.outcome,
                                              conditions=body.conditions.to_conditions(),
                                              stages=[s.model_dump() for s in body.stages], now=node.clock.now())}


@router.post("/api/policies/{policy_id}/publish", response_model=PolicyAnswer, responses=errors(403, 409))
def publish_policy(policy_id: PolicyId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Publish the draft (supersedes the live version)."""
    with node.begin() as conn:
        return {"policy": policies.publish(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                           policy_id=policy_id, now=node.clock.now())}


@router.get("/api/policies", response_model=PolicyPage, responses=errors(404))
def list_policies(node: NodeDep, caller: CallerDep, page: NamePageDep) -> dict[str, Any]:
    """Every policy with its versions, by name."""
    with node.read() as conn:
        items = policies.list_all(conn, org_id=caller.org_id, actor_id=caller.principal_id, limit=page.limit,
                                  cursor=page.cursor)
    return paged("policies", items, page, key="cursor")


@router.get("/api/approvals", response_model=ApprovalPage)
def list_approvals(node: NodeDep, caller: CallerDep, page: ApprovalPageDep) -> dict[str, Any]:
    """Pending approvals the caller may decide."""
    with node.read() as conn:
        items = approvals.pending_for(conn, org_id=caller.org_id, caller_id=caller.principal_id, limit=page.limit,
                                      cursor=page.cursor)
    return paged("approvals", items, page)


# ``response_model_exclude_unset``: the effect's report keys are those of the approval's kind only.
@router.post("/api/approvals/{approval_id}/decide", response_model=ApprovalDecidedAnswer,
             response_model_exclude_unset=True, responses=errors(409))
def decide(approval_id: ApprovalId, body: DecisionIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Approve or deny; completion and its effect commit together."""
    with node.begin() as conn:
        return {"decided": approvals.decide(conn, org_id=caller.org_id, approval_id=approval_id,
                                            caller_id=caller.principal_id, decision=body.decision,
                                            now=node.clock.now(), reason=body.reason)}


@router.post("/api/approvals/{approval_id}/withdraw", response_model=ApprovalWithdrawnAnswer,
             response_model_exclude_unset=True, responses=errors(409))
def withdraw(approval_id: ApprovalId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Withdraw the caller's standing approval."""
    with node.begin() as conn:
        return {"withdrawn": approvals.withdraw(conn, org_id=caller.org_id, approval_id=approval_id,
                                                caller_id=caller.principal_id, now=node.clock.now())}


@router.post("/api/domain-pauses", status_code=201, response_model=DomainPauseAskedAnswer, responses=errors(403, 409))
def request_pause(body: PauseIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Ask two other administrators to pause a sending domain."""
    with node.begin() as conn:
        return {"pause": pauses.request(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                        domain=body.domain, reason=body.reason, now=node.clock.now())}


@router.get("/api/domain-pauses", response_model=DomainPauseList, responses=errors(403))
def list_pauses(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Every pause in force, by domain, with its reason and age."""
    with node.read() as conn:
        return {"pauses": pauses.in_force(conn, org_id=caller.org_id, now=node.clock.now())}


@router.post("/api/domain-pauses/{pause_id}/lift", response_model=DomainPauseLiftedAnswer, responses=errors(403, 409))
def lift_pause(pause_id: DomainPauseId, node: NodeDep, caller: CallerDep, body: LiftIn | None = None) -> dict[str, Any]:
    """Lift a pause in force (one administrator)."""
    with node.begin() as conn:
        return {"lifted": pauses.lift(conn, org_id=caller.org_id, actor_id=caller.principal_id, pause_id=pause_id,
                                      reason=body.reason if body else None, now=node.clock.now())}


class BreakerLimitsIn(Strict):
    """Limits to change: an integer sets one, null resets it to its default, an absent one is unchanged.
    Values are checked by ``governance.limits.check_changes`` (so ``true`` or ``"10"`` is refused there)."""

    volume_max_recipients: Any = None
    bounce_max_percent: Any = None
    bounce_min_observations: Any = None
    complaint_max_percent: Any = None
    complaint_min_observations: Any = None


@router.get("/api/breaker-limits", response_model=BreakerLimitsAnswer, responses=errors(403))
def get_breaker_limits(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The organisation's breaker limits, each with its default, source and bounds (administrators)."""
    with node.read() as conn:
        return {"breaker_limits": limits.read(conn, org_id=caller.org_id, actor_id=caller.principal_id)}


@router.patch("/api/breaker-limits", response_model=BreakerLimitsAnswer, responses=errors(403))
def patch_breaker_limits(body: BreakerLimitsIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Set or reset some breaker limits (administrators); audited ``breaker_limits.changed``."""
    with node.begin() as conn:
        return {"breaker_limits": limits.change(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                                changes=body.model_dump(exclude_unset=True),
                                                now=node.clock.now())}


@router.get("/api/breakers", response_model=BreakerList, responses=errors(403))
def list_breakers(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Every rate breaker's reading right now, armed or not (no pause data: see /api/domain-pauses).

    Administrators and principals holding a relation on some mailbox; anyone else 403
    ``E_BREAKERS_NOT_VISIBLE`` (``authz.sees_breakers``)."""
    signals = breakers.delivery_signals_of(node.settings.transport)
    with node.read() as conn:
        authz.require_breakers_visible(conn, caller.org_id, caller.principal_id)
        state = breakers.evaluate(conn, org_id=caller.org_id, now=node.clock.now(), delivery_signals=signals)
    return {"breakers": [r.to_json() for r in state.readings]}
