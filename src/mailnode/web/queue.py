"""The queue pages: ``/`` (the first mailbox's queue), ``/mailboxes/{id}`` (a view, a page, a search),
``/mailboxes/{id}/poll`` (new mail without a reload) and ``POST /mailboxes/{id}/bulk`` (claim or close).

Every page calls ``mail.queue``, the functions ``GET /api/mailboxes/{id}/queue``, ``POST /api/cases/bulk`` and
(through ``mail.queue.search_mailbox``) ``GET /api/search`` call; a refusal renders as the API's four-part
error in words (``web.errors``), and a bulk action shows each case's own refusal beside it. The poll answers
JSON: every view's count, the row keys and the rows' HTML, so the page's script replaces the rows when
they changed (``static/queue.js``, every ``budgets.QUEUE_POLL_SECONDS``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.mail import queue
from mailnode.mail.mailboxes import addresses_of
from mailnode.mail.queue_rules import VIEW_LABELS, View, age_words, parse_view
from mailnode.node import Node
from mailnode.search import run as search_run
from mailnode.search.query import FILTER_HELP
from mailnode.web.render import env, page
from mailnode.web.session import CsrfDep, PersonDep
from mailnode.web.words import automated_words, send_automated_words

router = APIRouter(include_in_schema=False)

env.filters["age_words"] = age_words
env.filters["automated_words"] = automated_words
env.filters["send_automated_words"] = send_automated_words


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def _search_cursor(cursor: str | None) -> int | None:
    """A search page's cursor (``search.run.parse_cursor``); ``E_QUEUE_CURSOR_INVALID`` (422) otherwise."""
    if not cursor:
        return None
    found = search_run.parse_cursor(cursor)
    if found is None:
        raise MailnodeError(code="E_QUEUE_CURSOR_INVALID", what=f"{cursor[:60]!r} is not a search cursor.",
                            why="Search results page by the number the previous page's Older link carries.",
                            fix="Follow the Older link, or search again.", status=422, detail={"cursor": cursor[:60]})
    return found


def _queue_page(request: Request, person: Any, mailbox_id: str | None, view_text: str | None, cursor: str | None,
                q: str | None, outcomes: list[queue.BulkOutcome] | None = None) -> HTMLResponse:
    node = _node(request)
    principal = person.principal
    with node.read() as conn:
        boxes = queue.queue_mailboxes(conn, org_id=principal.org_id, principal_id=principal.principal_id)
        if mailbox_id is None:
            if not boxes:
                return page(request, "queue/none.html", mailboxes=boxes, current=None, area="inbox")
            mailbox_id = boxes[0].id
        view = parse_view(view_text)
        results: list[dict[str, Any]] | None = None
        search_next: int | None = None
        if q and q.strip():
            results, search_next = queue.search_mailbox(
                conn, org_id=principal.org_id, principal_id=principal.principal_id, mailbox_id=mailbox_id, q=q,
                cursor=_search_cursor(cursor))
            cursor = None
        shown = queue.read_queue(conn, org_id=principal.org_id, principal_id=principal.principal_id,
                                 mailbox_id=mailbox_id, view=view, now=node.clock.now(),
                                 cursor=None if results is not None else cursor)
        addresses = addresses_of(conn, shown.mailbox_id)
        subjects = queue.case_subjects(conn, org_id=principal.org_id, principal_id=principal.principal_id,
                                       case_ids=[o.case_id for o in outcomes]) if outcomes else {}
    return page(request, "queue/queue.html", mailboxes=boxes, current=shown, views=list(View), labels=VIEW_LABELS,
                cursor=cursor, q=q or "", results=results, search_next=search_next, filter_help=FILTER_HELP,
                outcomes=outcomes, subjects=subjects, poll_seconds=budgets.QUEUE_POLL_SECONDS, addresses=addresses,
                area="inbox")


@router.get("/", response_class=HTMLResponse)
def home(request: Request, person: PersonDep) -> HTMLResponse:
    """The start page: the person's mailboxes, and the first one's queue (Unassigned); a person who may read
    no mailbox is told how to be given one."""
    return _queue_page(request, person, None, None, None, None)


@router.get("/mailboxes/{mailbox_id}", response_class=HTMLResponse)
def mailbox_queue(request: Request, mailbox_id: str, person: PersonDep, view: str | None = None,
                  cursor: str | None = None, q: str | None = None) -> HTMLResponse:
    """A mailbox's queue: the view's tabs with counts and one page of rows, or the results of ``q`` (the
    search language, limited to this mailbox unless ``mailbox:`` says otherwise)."""
    return _queue_page(request, person, mailbox_id, view, cursor, q)


@router.get("/mailboxes/{mailbox_id}/poll")
def poll(request: Request, mailbox_id: str, person: PersonDep, view: str | None = None) -> JSONResponse:
    """The first page of a view for the page's poll: ``{"counts": {view: n}, "keys": [row keys], "rows": html}``."""
    node = _node(request)
    with node.read() as conn:
        shown = queue.read_queue(conn, org_id=person.principal.org_id, principal_id=person.principal.principal_id,
                                 mailbox_id=mailbox_id, view=parse_view(view), now=node.clock.now())
        addresses = addresses_of(conn, shown.mailbox_id)
    html = env.get_template("queue/_rows.html").render(current=shown, addresses=addresses)
    return JSONResponse({"counts": {v.value: n for v, n in shown.counts.items()}, "keys": [r.key for r in shown.rows],
                         "rows": html}, headers={"Cache-Control": "no-store"})


@router.post("/mailboxes/{mailbox_id}/bulk", response_class=HTMLResponse)
def bulk(request: Request, mailbox_id: str, person: PersonDep, _csrf: CsrfDep,
         action: Annotated[str, Form()], case_id: Annotated[list[str] | None, Form()] = None,
         view: Annotated[str | None, Form()] = None) -> HTMLResponse:
    """Claim or close the ticked cases (``mail.queue.bulk``), then show the queue with each case's outcome:
    done, or its refusal in words."""
    if action not in ("claim", "close"):
        raise MailnodeError(code="E_QUEUE_BULK_ACTION_UNKNOWN", what=f"{action[:20]!r} is not a bulk action.",
                            why="The queue's bulk actions are claim and close.",
                            fix="Use the Claim or Close button.", status=422, detail={"action": action[:20]})
    node = _node(request)
    outcomes = queue.bulk(node, org_id=person.principal.org_id, principal_id=person.principal.principal_id,
                          action="claim" if action == "claim" else "close", case_ids=case_id or [])
    return _queue_page(request, person, mailbox_id, view, None, None, outcomes=outcomes)
