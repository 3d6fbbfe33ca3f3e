"""``GET /api/search?q=…&limit=&cursor=``: messages and sends of the mailboxes the caller may read.

The query language is ``search.query`` (words, ``"phrases"``, ``from:`` ``to:`` ``subject:`` ``mailbox:``
``is:`` ``has:`` ``state:`` ``before:`` ``after:``); a query it cannot read is 422 with a code naming the
token (``E_SEARCH_*``). Results are newest first, ``{"results": [...], "next_cursor": ...}``; ``limit`` is
clamped to 1..``budgets.LIST_LIMIT_MAX``; a cursor that is not a ``next_cursor`` is 422
``E_REQUEST_INVALID`` naming ``query.cursor``. Who sees what: ``search.run``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from mailnode import budgets
from mailnode.api.deps import CallerDep, NodeDep, query_invalid
from mailnode.api.responses import id_field
from mailnode.search import run
from mailnode.search.query import parse_query

router = APIRouter(prefix="/api", tags=["search"])


class SearchResult(BaseModel):
    """One message or send found (``search.run.search``); ``date`` is when it was received or sealed (ISO
    8601 UTC), ``state`` a send's state now (null for a message). Closed: a field the service adds must be
    added here too."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    kind: Literal["message", "send"]
    id: str = Field(description="the message's msg_ id or the send's snd_ id")
    mailbox_id: str = id_field("mbx")
    conversation_id: str | None = id_field("cnv")
    case_id: str | None = id_field("cas")
    subject: str
    from_: str = Field(alias="from", description="the sender's address")
    to: list[str] = Field(description="the recipients' addresses")
    snippet: str
    date: str = Field(json_schema_extra={"format": "date-time"})
    attachments: int
    automated: bool
    state: str | None


class SearchPage(BaseModel):
    """``GET /api/search``: one page, newest first, and the cursor of the next (null at the end)."""

    model_config = ConfigDict(extra="forbid")

    results: list[SearchResult]
    next_cursor: str | None = Field(pattern="^[0-9]+$")


def _cursor(cursor: str | None = Query(default=None)) -> int | None:
    if not cursor:
        return None
    found = run.parse_cursor(cursor)
    if found is None:
        raise query_invalid("cursor", cursor, f"{cursor[:100]!r} is not a search cursor; pass back the "
                            "next_cursor of the previous page unchanged")
    return found


@router.get("/search", response_model=SearchPage)
def search(q: str, node: NodeDep, caller: CallerDep,
           cursor: Annotated[int | None, Depends(_cursor)], limit: int | None = None) -> dict[str, Any]:
    """Search the mailboxes the caller may read (``mailbox.content.read``); see the module docstring."""
    query = parse_query(q)
    size = budgets.LIST_LIMIT_DEFAULT if limit is None else max(1, min(limit, budgets.LIST_LIMIT_MAX))
    with node.read() as conn:
        results, nxt = run.search(conn, org_id=caller.org_id, principal_id=caller.principal_id, query=query,
                                  limit=size, cursor=cursor)
    return {"results": results, "next_cursor": str(nxt) if nxt is not None else None}
