"""The Butler editor: ``/butlers/{id}/edit`` with the checker's findings beside their nodes, the price against the
pot, a dry run over a message the Butler already ran on, and publish with a diff against the live version.

``POST /butlers/{id}/check`` (the page's script, debounced by ``budgets.WEB_BUTLER_CHECK_DEBOUNCE_MS``) runs
``butler.check.check`` on the text being typed, the checker ``PUT /api/butlers/{id}/draft`` runs, and answers
``{"ok", "findings", "html"}`` (the outline fragment). ``POST /butlers/{id}/draft {source}`` is
``lifecycle.save_draft``; ``POST /butlers/{id}/dry-run {run_id}`` is ``simulate.simulate`` over the saved
draft (``POST /api/butlers/{id}/simulate``); ``POST /butlers/{id}/publish`` is ``lifecycle.publish``. The dry
run walks the recorded facts of a run, so the messages offered are the deliveries Butlers ran on
(``record.list_runs``), each named by its Message-ID key. Administrators only, as the API; refusals are the
API's errors with their status.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from mailnode import budgets
from mailnode.butler import check, lifecycle, record, simulate
from mailnode.errors import MailnodeError
from mailnode.node import Node
from mailnode.web.butler_view import document_diff, outline, price_reading
from mailnode.web.render import env, page
from mailnode.web.session import CsrfDep, PersonDep, WebPerson

router = APIRouter(include_in_schema=False)


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def _checked(source: str, pot: int) -> dict[str, Any]:
    """The checker's answer on ``source`` as the page shows it: ``ok``, the outline and the price reading."""
    result = check.check(source, pot=pot)
    return {"ok": result.ok, "findings": result.findings, "outline": outline(source, result.findings),
            "price": price_reading(result, pot)}


def editor_page(request: Request, person: WebPerson, butler_id: str, *, source: str | None = None,
                refusal: MailnodeError | None = None, report: dict[str, Any] | None = None,
                picked: str | None = None, done: str | None = None) -> HTMLResponse:
    """The editor for ``butler_id``: ``source`` is the text in the box (default the draft, else the live
    source); ``report`` a dry run's report; ``refusal`` an action's refusal (its status is the page's)."""
    node = _node(request)
    p = person.principal
    pot = node.settings.butler_run_pot
    with node.read() as conn:
        butler = lifecycle.get_butler(conn, org_id=p.org_id, principal_id=p.principal_id, butler_id=butler_id)
        runs = record.list_runs(conn, org_id=p.org_id, principal_id=p.principal_id,
                                limit=budgets.WEB_BUTLER_RECENT_RUNS, cursor=None)
    draft, live = butler["draft"], butler["live"]
    stored = (draft or live or {}).get("source") or ""
    text = stored if source is None else source
    diff = document_diff(live["source"] if live else None, draft["source"], pot) if draft else []
    return page(request, "butlers/edit.html", status_code=refusal.status if refusal else 200, butler=butler,
                source=text, checked=_checked(text, pot), runs=runs, report=report, picked=picked,
                refusal=refusal, done=done, diff=diff, debounce_ms=budgets.WEB_BUTLER_CHECK_DEBOUNCE_MS,
                area="butlers")


@router.get("/butlers/{butler_id}/edit", response_class=HTMLResponse)
def edit(request: Request, butler_id: str, person: PersonDep, done: str | None = None) -> HTMLResponse:
    """The editor with the stored draft (or the live source), its findings, price, the dry run and the diff."""
    return editor_page(request, person, butler_id, done=done)


@router.post("/butlers/{butler_id}/check")
def check_source(request: Request, butler_id: str, person: PersonDep, _csrf: CsrfDep,
                 source: Annotated[str, Form()] = "") -> JSONResponse:
    """Check the text being typed (writes nothing): ``{"ok", "findings": [{code, node, what, why, fix}], "html"}``.

    The Butler is read first so that someone who may not see it gets the API's ``E_NO_SUCH_BUTLER`` (404), answered
    as the API's JSON error (``{"error", "message", "why", "fix"}``) for the script to show.
    """
    node = _node(request)
    p = person.principal
    try:
        with node.read() as conn:
            lifecycle.get_butler(conn, org_id=p.org_id, principal_id=p.principal_id, butler_id=butler_id)
    except MailnodeError as err:
        return JSONResponse({"error": err.code, "message": err.what, "why": err.why, "fix": err.fix},
                            status_code=err.status)
    checked = _checked(source, node.settings.butler_run_pot)
    html = env.get_template("butlers/_check.html").render(checked=checked)
    return JSONResponse({"ok": checked["ok"], "findings": [f.to_json() for f in checked["findings"]], "html": html},
                        headers={"Cache-Control": "no-store"})


@router.post("/butlers/{butler_id}/draft", response_class=HTMLResponse)
def save_draft(request: Request, butler_id: str, person: PersonDep, _csrf: CsrfDep,
               source: Annotated[str, Form()] = "") -> HTMLResponse:
    """Save the text as the draft (``lifecycle.save_draft``); a refusal keeps the text in the box."""
    node = _node(request)
    p = person.principal
    try:
        with node.begin() as conn:
            lifecycle.save_draft(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(),
                                 butler_id=butler_id, source=source, pot=node.settings.butler_run_pot)
    except MailnodeError as err:
        try:
            return editor_page(request, person, butler_id, source=source, refusal=err)
        except MailnodeError:
            # Someone who may not even read the page gets the action's own refusal, on its own.
            raise err from None
    return RedirectResponse(f"/butlers/{butler_id}/edit?done=saved", status_code=303)  # type: ignore[return-value]


@router.post("/butlers/{butler_id}/dry-run", response_class=HTMLResponse)
def dry_run(request: Request, butler_id: str, person: PersonDep, _csrf: CsrfDep,
            run_id: Annotated[str, Form()] = "") -> HTMLResponse:
    """The dry run of the saved draft (or live version) over the picked run's message; writes nothing."""
    node = _node(request)
    p = person.principal
    try:
        with node.read() as conn:
            report = asyncio.run(simulate.simulate(conn, org_id=p.org_id, principal_id=p.principal_id,
                                                   butler_id=butler_id, run_id=run_id,
                                                   pot=node.settings.butler_run_pot))
    except MailnodeError as err:
        try:
            return editor_page(request, person, butler_id, refusal=err, picked=run_id)
        except MailnodeError:
            # Someone who may not even read the page gets the action's own refusal, on its own.
            raise err from None
    return editor_page(request, person, butler_id, report=report, picked=run_id)


@router.post("/butlers/{butler_id}/publish", response_class=HTMLResponse)
def publish(request: Request, butler_id: str, person: PersonDep, _csrf: CsrfDep) -> HTMLResponse:
    """Publish the draft (``lifecycle.publish``); the Butler's page after it, or the editor with the refusal."""
    node = _node(request)
    p = person.principal
    try:
        with node.begin() as conn:
            lifecycle.publish(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(),
                              butler_id=butler_id, pot=node.settings.butler_run_pot)
    except MailnodeError as err:
        try:
            return editor_page(request, person, butler_id, refusal=err)
        except MailnodeError:
            # Someone who may not even read the page gets the action's own refusal, on its own.
            raise err from None
    return RedirectResponse(f"/butlers/{butler_id}?done=published", status_code=303)  # type: ignore[return-value]
