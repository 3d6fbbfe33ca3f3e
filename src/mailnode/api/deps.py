"""Dependencies every router uses: the node, the authenticated caller, list paging, strict queries.

``Caller`` resolves ``Authorization: Bearer`` live on each request (``E_UNAUTHENTICATED``, 401).
``Page`` clamps ``limit`` to 1..``budgets.LIST_LIMIT_MAX`` (never an error) and carries the cursor, which
each list checks is the kind of key that list pages by (``id_pages``, ``run_pages``, ``name_pages``).
``refuse_unknown_query`` (installed on the whole app) refuses a query parameter the route does not declare.
Every query refusal is ``query_invalid``'s ``RequestValidationError``, rendered by ``api.errors`` as 422
``E_REQUEST_INVALID`` with ``detail.problems[].field`` = ``query.<name>``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials

from mailnode import budgets
from mailnode.addresses import normalise_address
from mailnode.api.responses import bearer
from mailnode.directory.tokens import Principal, authenticate
from mailnode.errors import MailnodeError
from mailnode.ids import PREFIXES, ULID_PATTERN, id_pattern, is_id
from mailnode.node import Node


def get_node(request: Request) -> Node:
    """The app's ``Node``."""
    node: Node = request.app.state.node
    return node


NodeDep = Annotated[Node, Depends(get_node)]


def get_caller(node: NodeDep, authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
               _scheme: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)] = None) -> Principal:
    """The authenticated principal; ``E_UNAUTHENTICATED`` (401) otherwise. ``_scheme`` only marks every route
    that depends on this with the document's ``bearer`` security scheme (``api.responses.bearer``); the
    header is read and refused by ``authenticate`` alone."""
    with node.read() as conn:
        return authenticate(conn, authorization)


CallerDep = Annotated[Principal, Depends(get_caller)]


@dataclass(frozen=True)
class Page:
    """A clamped page request."""

    limit: int
    cursor: str | None


def query_invalid(name: str, value: Any, problem: str) -> RequestValidationError:
    """The refusal of query parameter ``name``: 422 ``E_REQUEST_INVALID`` naming ``query.<name>``."""
    return RequestValidationError([{"type": "value_error", "loc": ("query", name), "msg": problem,
                                    "input": str(value)[:100]}])


def _id_problem(value: str, prefixes: tuple[str, ...]) -> str | None:
    if any(is_id(value, p) for p in prefixes):
        return None
    kinds = " or ".join(f"a {PREFIXES[p]} id ({p}_ followed by 26 Crockford base32 characters)" for p in prefixes)
    return f"{value[:100]!r} is not {kinds}"


def id_filter(value: str | None, name: str, *prefixes: str) -> str | None:
    """``value`` (a query filter naming an object by id) when it is an id of one of ``prefixes``, or None when
    absent; otherwise ``query_invalid`` (422 ``E_REQUEST_INVALID`` naming ``query.<name>``)."""
    if not value:
        return None
    problem = _id_problem(value, prefixes)
    if problem is not None:
        raise query_invalid(name, value, problem + "; copy it from the listing that returned it")
    return value


def address_filter(value: str | None, name: str) -> str | None:
    """``value`` (a query filter naming an email address) as its key (``addresses.NormalisedAddress.key``: the
    whole address lower-cased), or None when absent; otherwise ``query_invalid`` (422 ``E_REQUEST_INVALID``
    naming ``query.<name>``, with the address check's reason)."""
    if not value:
        return None
    try:
        return normalise_address(value, name).key
    except MailnodeError as exc:
        raise query_invalid(name, value, f"{value[:100]!r} is not an email address: {exc.why}") from None


def _clamp(limit: int | None) -> int:
    return budgets.LIST_LIMIT_DEFAULT if limit is None else max(1, min(limit, budgets.LIST_LIMIT_MAX))


def _cursor_refused(cursor: str, problem: str) -> RequestValidationError:
    return query_invalid("cursor", cursor, f"{problem}; pass back the next_cursor of the previous page unchanged")


def id_pages(prefix: str) -> Callable[..., Page]:
    """The page dependency of a list keyed by ``prefix`` ids: the cursor must be such an id (else 422)."""

    def get_page(limit: int | None = Query(default=None),
                 cursor: str | None = Query(default=None, json_schema_extra={"pattern": id_pattern(prefix)})) -> Page:
        problem = _id_problem(cursor, (prefix,)) if cursor else None
        if cursor and problem is not None:
            raise _cursor_refused(cursor, problem)
        return Page(limit=_clamp(limit), cursor=cursor or None)

    return get_page


#: The pattern of a Butler run id as a cursor: a version id, then ``-<trigger key>`` (``run_pages``).
RUN_CURSOR_PATTERN = f"^btv_{ULID_PATTERN}(-.*)?$"


def run_pages(limit: int | None = Query(default=None),
              cursor: str | None = Query(default=None, json_schema_extra={"pattern": RUN_CURSOR_PATTERN})) -> Page:
    """The page dependency of Butler runs, keyed by run ids (``<btv id>-<trigger key>``, documented as
    ``RUN_CURSOR_PATTERN``; else 422)."""
    if cursor and not is_id(cursor.partition("-")[0], "btv"):
        raise _cursor_refused(cursor, f"{cursor[:100]!r} is not a Butler run id (btv_...-<trigger key>)")
    return Page(limit=_clamp(limit), cursor=cursor or None)


def name_pages(limit: int | None = Query(default=None), cursor: str | None = Query(default=None)) -> Page:
    """The page dependency of a list keyed by names: one printable line of at most
    ``budgets.NAME_CURSOR_MAX_CHARS`` characters (else 422)."""
    if cursor and len(cursor) > budgets.NAME_CURSOR_MAX_CHARS:
        raise _cursor_refused(cursor, f"the cursor is {len(cursor)} characters; no name is longer than "
                              f"NAME_CURSOR_MAX_CHARS ({budgets.NAME_CURSOR_MAX_CHARS})")
    if cursor and any(unicodedata.category(c)[0] == "C" for c in cursor):
        raise _cursor_refused(cursor, "the cursor holds a control character, which no name does")
    return Page(limit=_clamp(limit), cursor=cursor or None)


#: Each list's paging, by the kind of key its cursor is (a route declares exactly one).
UserPageDep = Annotated[Page, Depends(id_pages("usr"))]
TeamPageDep = Annotated[Page, Depends(id_pages("tm"))]
GrantPageDep = Annotated[Page, Depends(id_pages("rt"))]
MailboxPageDep = Annotated[Page, Depends(id_pages("mbx"))]
MessagePageDep = Annotated[Page, Depends(id_pages("msg"))]
CasePageDep = Annotated[Page, Depends(id_pages("cas"))]
EventPageDep = Annotated[Page, Depends(id_pages("sev"))]
DraftPageDep = Annotated[Page, Depends(id_pages("dft"))]
SendPageDep = Annotated[Page, Depends(id_pages("snd"))]
ApprovalPageDep = Annotated[Page, Depends(id_pages("apr"))]
HoldPageDep = Annotated[Page, Depends(id_pages("hld"))]
ButlerPausePageDep = Annotated[Page, Depends(id_pages("bpz"))]
RunPageDep = Annotated[Page, Depends(run_pages)]
NamePageDep = Annotated[Page, Depends(name_pages)]

#: Query parameter names each route declares, by route (computed once per route).
_DECLARED: dict[int, frozenset[str]] = {}


def _declared_query(route: APIRoute) -> frozenset[str]:
    names = _DECLARED.get(id(route))
    if names is None:
        found: set[str] = set()
        stack = [route.dependant]
        while stack:
            dep = stack.pop()
            found.update(q.alias for q in dep.query_params)
            stack.extend(dep.dependencies)
        names = _DECLARED[id(route)] = frozenset(found)
    return names


#: What a refused ``q`` adds: lists do not search; the one search is ``GET /api/search`` (issue 15).
_SEARCH_HINT = "; lists do not search: to search, use GET /api/search?q= (it takes mailbox:, is:open ...)"


def refuse_unknown_query(request: Request) -> None:
    """Refuse a query parameter the matched route does not declare: 422 ``E_REQUEST_INVALID`` naming
    ``query.<name>`` and listing what the route takes. A typo (``?stat=open``) would otherwise be ignored
    and answer an unfiltered list that looks filtered. A ``q`` (the search parameter of other mail systems'
    lists) is refused the same way, pointing to ``GET /api/search``."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    declared = _declared_query(route)
    unknown = sorted(k for k in request.query_params if k not in declared)
    if unknown:
        takes = ", ".join(sorted(declared)) or "no query parameters"
        raise RequestValidationError([{"type": "value_error", "loc": ("query", k),
                                       "msg": f"unknown query parameter; this route takes: {takes}"
                                              + (_SEARCH_HINT if k == "q" else ""),
                                       "input": request.query_params.get(k, "")[:100]} for k in unknown])


def paged(noun: str, items: list[dict[str, Any]], page: Page, key: str = "id") -> dict[str, Any]:
    """``{noun: items, "next_cursor": last key or None}``; a full page implies there may be more."""
    nxt = items[-1][key] if len(items) == page.limit and items else None
    return {noun: items, "next_cursor": nxt}
