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

from mailnode.api.deps import CallerDep, HoldPageDep, NodeDep, paged
from mailnode.api.models import Strict
from mailnode.api.responses import HoldId
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


@router.post("/api/holds", status_code=201)
def place_hold(body: HoldIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Place a legal hold at once."""
    with node.begin() as conn:
        return {"hold": holds.place(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                    mailbox_id=body.mailbox_id, matter_id=body.matter_id,
                                    from_date=body.from_date, to_date=body.to_date, now=node.clock.now())}


@router.post("/api/holds/{hold_id}/lift", status_code=202)
def lift_hold(hold_id: HoldId, node: NodeDep, caller: CallerDep, body: HoldLiftIn | None = None) -> dict[str, Any]:
    """Ask two other deciders to lift a hold."""
    with node.begin() as conn:
        return {"lift": holds.request_lift(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                           hold_id=hold_id, reason=body.reason if body else None,
                                           now=node.clock.now())}


@router.get("/api/holds")
def list_holds(node: NodeDep, caller: CallerDep, page: HoldPageDep) -> dict[str, Any]:
    """Every hold, in force or lifted."""
    with node.read() as conn:
        items = holds.list_(conn, org_id=caller.org_id, actor_id=caller.principal_id, limit=page.limit,
                            cursor=page.cursor)
    return paged("holds", items, page)
