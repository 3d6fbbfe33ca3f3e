"""Routes for the Butler run record (administrators; spec/butler.md §6.1).

``GET /api/butler-runs?butler_id=&limit=&cursor=`` lists runs newest first: ``{"butler_runs": [...],
"next_cursor"}``; ``GET /api/butler-runs/{id}`` shows one run with its effect rows in walk order:
``{"butler_run": {..., "effect_rows": [...]}}``. Neither ever returns the run's trigger facts (mail
content) nor what an effect bound. Anyone but an administrator gets 404 ``E_NO_SUCH_BUTLER_RUN``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode.api.deps import CallerDep, NodeDep, PageDep, paged
from mailnode.butler import record

router = APIRouter(prefix="/api/butler-runs", tags=["butlers"])


@router.get("")
def list_(node: NodeDep, caller: CallerDep, page: PageDep, butler_id: str | None = None) -> dict[str, Any]:
    """Runs newest first, optionally of one Butler."""
    with node.read() as conn:
        items = record.list_runs(conn, org_id=caller.org_id, principal_id=caller.principal_id, limit=page.limit,
                                 cursor=page.cursor, butler_id=butler_id)
    return paged("butler_runs", items, page)


@router.get("/{run_id}")
def get(run_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One run and its effect rows."""
    with node.read() as conn:
        return {"butler_run": record.get_run(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                             run_id=run_id)}
