"""``GET /api/search?q=…&limit=&cursor=``: messages and sends of the mailboxes the caller may read.

The query language is ``search.query`` (words, ``"phrases"``, ``from:`` ``to:`` ``subject:`` ``mailbox:``
``is:`` ``has:`` ``state:`` ``before:`` ``after:``); a query it cannot read is 422 with a code naming the
token (``E_SEARCH_*``). Results are newest first, ``{"results": [...], "next_cursor": ...}``; ``limit`` is
clamped to 1..``budgets.LIST_LIMIT_MAX``; a cursor that is not a ``next_cursor`` is 422
``E_REQUEST_INVALID`` naming ``query.cursor``. Who sees what: ``search.run``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from mailnode import budgets
from mailnode.api.deps import CallerDep, NodeDep, query_invalid
from mailnode.search import run
from mailnode.search.query import parse_query

router = APIRouter(prefix="/api", tags=["search"])


def _cursor(cursor: str | None = Query(default=None)) -> int | None:
    if not cursor:
        return None
    found = run.parse_cursor(cursor)
    if found is None:
        raise query_invalid("cursor", cursor, f"{cursor[:100]!r} is not a search cursor; pass back the "
                            "next_cursor of the previous page unchanged")
    return found


@router.get("/search")
def search(q: str, node: NodeDep, caller: CallerDep,
           cursor: Annotated[int | None, Depends(_cursor)], limit: int | None = None) -> dict[str, Any]:
    """Search the mailboxes the caller may read (``mailbox.content.read``); see the module docstring."""
    query = parse_query(q)
    size = budgets.LIST_LIMIT_DEFAULT if limit is None else max(1, min(limit, budgets.LIST_LIMIT_MAX))
    with node.read() as conn:
        results, nxt = run.search(conn, org_id=caller.org_id, principal_id=caller.principal_id, query=query,
                                  limit=size, cursor=cursor)
    return {"results": results, "next_cursor": str(nxt) if nxt is not None else None}
