"""Butlers: the list, a Butler's page with its versions, runs and pauses, and disable / enable / resume (issue 21).

``GET /butlers`` lists the organisation's Butlers (``lifecycle.list_butlers``, the function behind
``GET /api/butlers``) with their state in words (``web.butler_view.state_words``), their last runs and what those
spent (``record.list_runs``, as ``GET /api/butler-runs?butler_id=``). ``GET /butlers/{id}`` shows one
(``lifecycle.get_butler``): live version, draft, version history, recent runs and its pauses
(``pause.list_pauses``). ``POST /butlers/{id}/disable {reason}`` and ``POST /butlers/{id}/enable {reason?}`` are
``lifecycle.disable`` / ``lifecycle.enable`` (the API's ``/api/butlers/{id}/disable|enable``);
``POST /butlers/{id}/pauses/{pause_id}/resume {reason}`` is ``pause.resume`` (``/api/butler-pauses/{id}/resume``).
There is no form that places a pause: seed 003 gives that act to the node alone; a person stops a Butler by
disabling it, with a reason.

Only administrators see Butlers (anyone else gets the API's ``E_NO_SUCH_BUTLER``, 404); a refused action shows
the API's four-part error above the page, with its status. The editor (``web.butler_editor``) and a run's page
(``web.butler_run_page``) are included in this router.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from mailnode import budgets
from mailnode.butler import lifecycle, pause, record
from mailnode.errors import MailnodeError
from mailnode.node import Node
from mailnode.web import butler_editor, butler_run_page
from mailnode.web.butler_view import state_words
from mailnode.web.render import page
from mailnode.web.session import CsrfDep, PersonDep, WebPerson

router = APIRouter(include_in_schema=False)


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def _spend(runs: list[dict[str, Any]]) -> int | None:
    """Statements spent by the runs that state a spend; None when none does (never a reassuring 0)."""
    spent = [r["statements_spent"] for r in runs if r.get("statements_spent") is not None]
    return sum(spent) if spent else None


@router.get("/butlers", response_class=HTMLResponse)
def butlers_list(request: Request, person: PersonDep, cursor: str | None = None) -> HTMLResponse:
    """The organisation's Butlers by name, each with its state, last runs and their spend (administrators)."""
    node = _node(request)
    p = person.principal
    with node.read() as conn:
        items = lifecycle.list_butlers(conn, org_id=p.org_id, principal_id=p.principal_id,
                                       limit=budgets.WEB_BUTLERS_PER_PAGE + 1, cursor=cursor)
        more = len(items) > budgets.WEB_BUTLERS_PER_PAGE
        items = items[:budgets.WEB_BUTLERS_PER_PAGE]
        rows = []
        for item in items:
            runs = record.list_runs(conn, org_id=p.org_id, principal_id=p.principal_id,
                                    limit=budgets.WEB_BUTLER_LAST_RUNS, cursor=None, butler_id=item["id"])
            rows.append({"butler": item, "state": state_words(item), "runs": runs, "spend": _spend(runs)})
    return page(request, "butlers/list.html", rows=rows, next_cursor=items[-1]["name"] if more else None,
                last_runs=budgets.WEB_BUTLER_LAST_RUNS, area="butlers")


def detail_page(request: Request, person: WebPerson, butler_id: str, refusal: MailnodeError | None = None,
                done: str | None = None) -> HTMLResponse:
    """A Butler's page (also after an action: ``done`` says what happened, ``refusal`` what was refused)."""
    node = _node(request)
    p = person.principal
    with node.read() as conn:
        butler = lifecycle.get_butler(conn, org_id=p.org_id, principal_id=p.principal_id, butler_id=butler_id)
        runs = record.list_runs(conn, org_id=p.org_id, principal_id=p.principal_id,
                                limit=budgets.WEB_BUTLER_RECENT_RUNS, cursor=None, butler_id=butler_id)
        pauses = [x for x in pause.list_pauses(conn, org_id=p.org_id, principal_id=p.principal_id,
                                               limit=budgets.WEB_BUTLER_RECENT_RUNS, cursor=None)
                  if x["butler_id"] == butler_id]
    in_force = next((x for x in pauses if x["resumed_at"] is None), None)
    state = state_words({**butler, "pause": in_force})
    return page(request, "butlers/detail.html", status_code=refusal.status if refusal else 200, butler=butler,
                runs=runs, pauses=pauses, in_force=in_force, state=state, refusal=refusal, done=done,
                spend=_spend(runs), area="butlers")


@router.get("/butlers/{butler_id}", response_class=HTMLResponse)
def butler_page(request: Request, butler_id: str, person: PersonDep, done: str | None = None) -> HTMLResponse:
    """One Butler: state, live version and draft, version history, recent runs and pauses, and its switches."""
    return detail_page(request, person, butler_id, done=done)


def _act(request: Request, person: WebPerson, butler_id: str, done: str, action: Any) -> HTMLResponse:
    """Run ``action(conn)`` in a write transaction; the Butler's page after it (303), or with the refusal."""
    node = _node(request)
    try:
        with node.begin() as conn:
            action(conn, node)
    except MailnodeError as err:
        try:
            return detail_page(request, person, butler_id, refusal=err)
        except MailnodeError:
            # Someone who may not even read the page gets the action's own refusal, on its own.
            raise err from None
    return RedirectResponse(f"/butlers/{butler_id}?done={done}", status_code=303)  # type: ignore[return-value]


@router.post("/butlers/{butler_id}/disable", response_class=HTMLResponse)
def disable(request: Request, butler_id: str, person: PersonDep, _csrf: CsrfDep,
            reason: Annotated[str, Form()] = "") -> HTMLResponse:
    """Disable the Butler with a reason (``lifecycle.disable``); refusals as the API's."""
    p = person.principal
    return _act(request, person, butler_id, "disabled", lambda conn, node: lifecycle.disable(
        conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(), butler_id=butler_id, reason=reason))


@router.post("/butlers/{butler_id}/enable", response_class=HTMLResponse)
def enable(request: Request, butler_id: str, person: PersonDep, _csrf: CsrfDep,
           reason: Annotated[str, Form()] = "") -> HTMLResponse:
    """Enable a disabled Butler with an optional reason (``lifecycle.enable``); a pause in force stays in force."""
    p = person.principal
    return _act(request, person, butler_id, "enabled", lambda conn, node: lifecycle.enable(
        conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(), butler_id=butler_id, reason=reason))


@router.post("/butlers/{butler_id}/pauses/{pause_id}/resume", response_class=HTMLResponse)
def resume(request: Request, butler_id: str, pause_id: str, person: PersonDep, _csrf: CsrfDep,
           reason: Annotated[str, Form()] = "") -> HTMLResponse:
    """Resume the node's pause with a reason (``pause.resume``: one administrator, reason mandatory)."""
    p = person.principal
    return _act(request, person, butler_id, "resumed", lambda conn, node: pause.resume(
        conn, org_id=p.org_id, principal_id=p.principal_id, at=node.clock.now(), pause_id=pause_id, reason=reason))


router.include_router(butler_editor.router)
router.include_router(butler_run_page.router)
