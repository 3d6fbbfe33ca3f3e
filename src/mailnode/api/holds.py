"""Routes for legal holds (spec/outbound.md §7; issue 9).

- ``POST /api/holds`` ``{mailbox_id, matter_id?, from_date?, to_date?}``: one administrator, in force at once;
  a date-only bound is a whole UTC day (``to_date`` 2026-01-31 covers mail dated up to 23:59:59.999999Z).
- ``POST /api/holds/{id}/lift`` ``{reason}``: asks two other deciders of the held mailbox (a ``hold_lift``
  approval decided at ``POST /api/approvals/{id}/decide``); the hold stays in force until they approve.
- ``GET /api/holds``: administrators (403 ``E_NOT_AN_ADMINISTRATOR`` to anyone else).

Codes are documented in ``mailnode.retention.holds``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.deps import CallerDep, HoldPageDep, NodeDep, paged
from mailnode.api.governance_models import ApprovalStage
from mailnode.api.models import Strict
from mailnode.api.responses import HoldId, errors, id_field
from mailnode.retention import holds

router = APIRouter(tags=["holds"])


class HoldIn(Strict):
    """A hold: the mailbox (required), an optional matter reference (printable text, at most
    ``HOLD_MATTER_ID_MAX_CHARS`` characters) and window (ISO 8601; open when left out). The fields are
    checked by ``retention.holds.check_place_input``, so a missing one is named the same way as a schema
    refusal (``E_REQUEST_INVALID``)."""

    mailbox_id: Any = None
    matter_id: Any = None
    from_date: Any = None
    to_date: Any = None


class HoldLiftIn(Strict):
    """A lift request: the reason the deciders decide on."""

    reason: Any = None


_INSTANT: JsonDict = {"format": "date-time"}


class _Answer(BaseModel):
    """An answer's part: closed (a field the service adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


class Hold(_Answer):
    """A legal hold (``holds.hold_json``): a null bound is unbounded; ``in_force`` until it is lifted."""

    id: str = id_field("hld")
    mailbox_id: str = id_field("mbx")
    matter_id: str | None
    from_date: str | None = Field(json_schema_extra=_INSTANT)
    to_date: str | None = Field(json_schema_extra=_INSTANT)
    placed_by: str
    placed_at: str | None = Field(json_schema_extra=_INSTANT)
    lifted_at: str | None = Field(json_schema_extra=_INSTANT)
    lifted_reason: str | None
    lift_id: str | None
    in_force: bool


class HoldAnswer(_Answer):
    """``{"hold": Hold}``: ``POST /api/holds``."""

    hold: Hold


class HoldPage(_Answer):
    """``GET /api/holds``: one page, and the cursor of the next (null at the end)."""

    holds: list[Hold]
    next_cursor: str | None = id_field("hld")


class Lift(_Answer):
    """A lift asked (``holds.request_lift``): the approval it waits on and its stages."""

    hold_id: str = id_field("hld")
    lift_id: str = id_field("hlf")
    approval_id: str = id_field("apr")
    reason: str
    stages: list[ApprovalStage]
    eligible: int = Field(description="how many deciders other than the asker may approve")


class LiftAnswer(_Answer):
    """``{"lift": Lift}``: ``POST /api/holds/{hold_id}/lift`` (202: the lift waits for its approvals)."""

    lift: Lift


@router.post("/api/holds", status_code=201, response_model=HoldAnswer, responses=errors(403))
def place_hold(body: HoldIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Place a legal hold at once."""
    with node.begin() as conn:
        return {"hold": holds.place(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                    mailbox_id=body.mailbox_id, matter_id=body.matter_id,
                                    from_date=body.from_date, to_date=body.to_date, now=node.clock.now())}


@router.post("/api/holds/{hold_id}/lift", status_code=202, response_model=LiftAnswer, responses=errors(403, 409))
def lift_hold(hold_id: HoldId, node: NodeDep, caller: CallerDep, body: HoldLiftIn | None = None) -> dict[str, Any]:
    """Ask two other deciders to lift a hold."""
    with node.begin() as conn:
        return {"lift": holds.request_lift(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                           hold_id=hold_id, reason=body.reason if body else None,
                                           now=node.clock.now())}


@router.get("/api/holds", response_model=HoldPage, responses=errors(403))
def list_holds(node: NodeDep, caller: CallerDep, page: HoldPageDep) -> dict[str, Any]:
    """Every hold, in force or lifted."""
    with node.read() as conn:
        items = holds.list_(conn, org_id=caller.org_id, actor_id=caller.principal_id, limit=page.limit,
                            cursor=page.cursor)
    return paged("holds", items, page)
