"""Routes of the suppression list (issue 20, ``outbound.suppression``): administrators only.

``GET /api/suppressions`` (newest first, cursor paged; ``q`` a part of the address, ``exact=true`` the whole
address, ``reason`` one reason), ``POST /api/suppressions`` (add, ``manual``), ``GET`` and ``DELETE
/api/suppressions/{address}`` (read; remove with a required ``reason``, audited), ``GET
/api/suppressions/export.csv`` and ``POST /api/suppressions/import`` (a CSV body; all or nothing). Every route
answers 403 ``E_NOT_AN_ADMINISTRATOR`` to anyone but an administrator (``authz.require_admin``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from mailnode.api.deps import CallerDep, NodeDep, Page, id_pages, query_invalid
from mailnode.api.models import Strict
from mailnode.api.responses import errors, text_response
from mailnode.authz import require_admin
from mailnode.outbound import suppression
from mailnode.outbound.suppression import ListFilter, parse_csv

router = APIRouter(prefix="/api/suppressions", tags=["suppressions"])

_ACT = "manage the suppression list"
SuppressionPageDep = Annotated[Page, Depends(id_pages("sup"))]


class SuppressionOut(BaseModel):
    """One address on the list."""

    id: str = Field(pattern=r"^sup_[0-9A-HJKMNP-TV-Z]{26}$")
    address: str
    reason: suppression.Reason
    created_at: str = Field(description="ISO 8601 UTC.")
    event_id: str | None = Field(description="The delivery event that caused an automatic row.")
    send_id: str | None
    recipient_id: str | None
    added_by: str | None = Field(description="The principal who added a manual or imported row.")
    note: str | None


class SuppressionAnswer(BaseModel):
    """``{"suppression": ...}``."""

    suppression: SuppressionOut


class SuppressionPage(BaseModel):
    """One page, newest first; ``next_cursor`` is the last id when the page is full, else null."""

    suppressions: list[SuppressionOut]
    next_cursor: str | None


class ImportAnswer(BaseModel):
    """What an import did: addresses added, and those already on the list (kept as they were)."""

    added: int
    already: int


class SuppressionIn(Strict):
    """An address an administrator puts on the list, with an optional note."""

    address: str
    note: str | None = None


@router.get("", response_model=SuppressionPage, responses=errors(403))
def list_suppressions(node: NodeDep, caller: CallerDep, page: SuppressionPageDep, q: str | None = None,
                      exact: bool = False, reason: suppression.Reason | None = None) -> dict[str, Any]:
    """The organisation's list, newest first, after ``cursor`` (a ``sup_`` id), filtered by ``q`` (a part of
    the address, or with ``exact=true`` the whole address) and ``reason``."""
    with node.read() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, _ACT)
        rows = suppression.list_page(conn, org_id=caller.org_id, filters=ListFilter(q=q, exact=exact, reason=reason),
                                     limit=page.limit, cursor=page.cursor)
    items = [r.to_json() for r in rows]
    return {"suppressions": items, "next_cursor": items[-1]["id"] if len(items) == page.limit and items else None}


@router.post("", status_code=201, response_model=SuppressionAnswer, responses=errors(403))
def add_suppression(body: SuppressionIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Put an address on the list (``manual``), audited ``suppression.added``; an address already there keeps
    its row and is answered as it is."""
    with node.begin() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, _ACT)
        row = suppression.add_manual(conn, org_id=caller.org_id, actor_id=caller.principal_id, address=body.address,
                                     at=node.clock.now(), note=body.note)
    return {"suppression": row.to_json()}


@router.get("/export.csv", response_class=Response, responses={
    **text_response("text/csv", "the list as CSV"), **errors(403)})
def export_suppressions(node: NodeDep, caller: CallerDep) -> Response:
    """The whole list as CSV (``outbound.suppression.CSV_COLUMNS``), oldest first."""
    with node.read() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, _ACT)
        text = suppression.export_csv(conn, org_id=caller.org_id)
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": 'attachment; filename="suppressions.csv"'})


@router.post("/import", response_model=ImportAnswer, responses=errors(403, 413), openapi_extra={
    "requestBody": {"required": True, "content": {"text/csv": {"schema": {"type": "string"}}}}})
async def import_suppressions(request: Request, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Add every address of a CSV body (a header row naming ``address``; ``reason`` and ``note`` optional, the
    columns ``export.csv`` writes), all or nothing: one bad line is 422 ``E_SUPPRESSION_IMPORT_BAD_LINE`` naming
    it, and nothing is written. Audited once, ``suppression.imported``."""
    data = await request.body()
    with node.read() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, _ACT)
    rows = parse_csv(data)
    with node.begin() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, _ACT)
        result = suppression.import_rows(conn, org_id=caller.org_id, actor_id=caller.principal_id, rows=rows,
                                         at=node.clock.now())
    return result.to_json()


@router.get("/{address}", response_model=SuppressionAnswer, responses=errors(403, 404))
def get_suppression(address: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The list's row for ``address`` (compared as the node compares recipients: the whole address
    lower-cased); 404 ``E_NO_SUCH_SUPPRESSION`` when it is not on the list."""
    with node.read() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, _ACT)
        row = suppression.get(conn, org_id=caller.org_id, address=address)
    if row is None:
        raise suppression.no_such_suppression(address)
    return {"suppression": row.to_json()}


@router.delete("/{address}", response_model=SuppressionAnswer, responses=errors(403, 404))
def remove_suppression(address: str, node: NodeDep, caller: CallerDep,
                       reason: str | None = Query(default=None)) -> dict[str, Any]:
    """Take ``address`` off the list with a ``reason`` (required: 422
    ``E_SUPPRESSION_REMOVAL_REASON_MISSING``), audited ``suppression.removed``; answers the removed row."""
    if reason is not None and "\x00" in reason:
        raise query_invalid("reason", reason, "the reason holds a NUL character")
    with node.begin() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, _ACT)
        row = suppression.remove(conn, org_id=caller.org_id, actor_id=caller.principal_id, address=address,
                                 reason=reason or "", at=node.clock.now())
    return {"suppression": row.to_json()}
