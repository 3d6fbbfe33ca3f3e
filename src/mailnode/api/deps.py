"""Dependencies every router uses: the node, the authenticated caller, list paging.

``Caller`` resolves ``Authorization: Bearer`` live on each request (``E_UNAUTHENTICATED``, 401).
``Page`` clamps ``limit`` to 1..``budgets.LIST_LIMIT_MAX`` (never an error) and carries the cursor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Query, Request

from mailnode import budgets
from mailnode.directory.tokens import Principal, authenticate
from mailnode.node import Node


def get_node(request: Request) -> Node:
    """The app's ``Node``."""
    node: Node = request.app.state.node
    return node


NodeDep = Annotated[Node, Depends(get_node)]


def get_caller(node: NodeDep, authorization: Annotated[str | None, Header()] = None) -> Principal:
    """The authenticated principal; ``E_UNAUTHENTICATED`` (401) otherwise."""
    with node.read() as conn:
        return authenticate(conn, authorization)


CallerDep = Annotated[Principal, Depends(get_caller)]


@dataclass(frozen=True)
class Page:
    """A clamped page request."""

    limit: int
    cursor: str | None


def get_page(limit: int | None = Query(default=None), cursor: str | None = Query(default=None)) -> Page:
    """``limit`` clamped to 1..LIST_LIMIT_MAX (default LIST_LIMIT_DEFAULT); ``cursor`` as given."""
    n = budgets.LIST_LIMIT_DEFAULT if limit is None else max(1, min(limit, budgets.LIST_LIMIT_MAX))
    return Page(limit=n, cursor=cursor or None)


PageDep = Annotated[Page, Depends(get_page)]


def paged(noun: str, items: list[dict[str, Any]], page: Page, key: str = "id") -> dict[str, Any]:
    """``{noun: items, "next_cursor": last key or None}``; a full page implies there may be more."""
    nxt = items[-1][key] if len(items) == page.limit and items else None
    return {noun: items, "next_cursor": nxt}
