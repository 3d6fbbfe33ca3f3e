"""A Butler run's page: ``/butlers/runs/{id}`` with its effects, costs, refusals, failure detail and the replays
the API offers.

The page is ``butler.replay.inspect`` (``GET /api/butler-runs/{id}/inspect``, in a write transaction because a
supervised grant's opening is recorded before content is shown). ``POST /butlers/runs/{id}/rerun`` is the API's
``POST /api/butler-runs/{id}/replay {"mode": "re-run"}`` (``replay.open_rerun``, then ``replay.start`` in this
process's executor; ``E_EXECUTOR_NOT_RUNNING`` (503) without one, nothing written).
``POST /butlers/runs/{id}/sends/{send_id}/retry {mode, reason, accept_duplicate_risk}`` is
``POST /api/sends/{id}/retry`` (``outbound.retry``), offered per send exactly as the inspection's retry offer
says. Administrators only (others get ``E_NO_SUCH_BUTLER_RUN``, 404); refusals are the API's errors.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from mailnode import runtime
from mailnode.butler import replay
from mailnode.errors import MailnodeError
from mailnode.node import Node
from mailnode.outbound import retry, submit
from mailnode.outbound.workflows import wake
from mailnode.web.butler_view import reason_words
from mailnode.web.render import env, page
from mailnode.web.session import CsrfDep, PersonDep, WebPerson

router = APIRouter(include_in_schema=False)

env.filters["reason_words"] = reason_words


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def run_page(request: Request, person: WebPerson, run_id: str, refusal: MailnodeError | None = None,
             done: str | None = None) -> HTMLResponse:
    """The run's inspection as a page; ``refusal`` an action's refusal, ``done`` what an action did."""
    node = _node(request)
    p = person.principal
    with node.begin() as conn:
        inspection: dict[str, Any] = replay.inspect(conn, org_id=p.org_id, principal_id=p.principal_id, run_id=run_id,
                                                    pot=node.settings.butler_run_pot, at=node.clock.now())
    return page(request, "butlers/run.html", status_code=refusal.status if refusal else 200, i=inspection,
                refusal=refusal, done=done, area="butlers")


@router.get("/butlers/runs/{run_id}", response_class=HTMLResponse)
def run(request: Request, run_id: str, person: PersonDep, done: str | None = None) -> HTMLResponse:
    """A run: its state and failure detail, the program it walked, its trigger facts (or why they are hidden),
    its effects with their costs, refusals and sends with their retry offers, its replays and the re-run offer."""
    return run_page(request, person, run_id, done=done)


@router.post("/butlers/runs/{run_id}/rerun", response_class=HTMLResponse)
def rerun(request: Request, run_id: str, person: PersonDep, _csrf: CsrfDep) -> HTMLResponse:
    """Re-run the run over its recorded facts (every judgement asked again); the new run's page."""
    node = _node(request)
    p = person.principal
    try:
        with node.begin() as conn:
            opened = replay.open_rerun(conn, org_id=p.org_id, principal_id=p.principal_id, run_id=run_id,
                                       at=node.clock.now(), pot=node.settings.butler_run_pot)
            if not runtime.is_launched():
                raise MailnodeError(code="E_EXECUTOR_NOT_RUNNING", what="This process runs no durable executor.",
                                    why="A re-run is a Butler run, and runs execute in the durable executor.",
                                    fix="Ask the node started with mailnode serve.", status=503)
    except MailnodeError as err:
        try:
            return run_page(request, person, run_id, refusal=err)
        except MailnodeError:
            # Someone who may not even read the page gets the action's own refusal, on its own.
            raise err from None
    replay.start(node, opened["run_id"])
    return RedirectResponse(f"/butlers/runs/{opened['run_id']}?done=rerun", status_code=303)  # type: ignore[return-value]


@router.post("/butlers/runs/{run_id}/sends/{send_id}/retry", response_class=HTMLResponse)
def retry_send(request: Request, run_id: str, send_id: str, person: PersonDep, _csrf: CsrfDep,
               mode: Annotated[str, Form()] = "", reason: Annotated[str, Form()] = "",
               accept_duplicate_risk: Annotated[bool, Form()] = False) -> HTMLResponse:
    """Retry a send the run proposed as the same effect, or resend it accepting the duplicate risk."""
    node = _node(request)
    p = person.principal
    try:
        checked = retry.check_mode(mode)
        if checked == "retry-effect":
            with node.begin() as conn:
                retry.retry_effect(conn, org_id=p.org_id, principal_id=p.principal_id, at=node.clock.now(),
                                   send_id=send_id)
            wake(send_id, 0.0)
        else:
            sealed = retry.resend_may_duplicate(node, org_id=p.org_id, principal_id=p.principal_id, send_id=send_id,
                                                reason=reason, accept_duplicate_risk=accept_duplicate_risk)
            submit.wake_at(node, sealed.id, sealed.release_at)
    except MailnodeError as err:
        try:
            return run_page(request, person, run_id, refusal=err)
        except MailnodeError:
            # Someone who may not even read the page gets the action's own refusal, on its own.
            raise err from None
    return RedirectResponse(f"/butlers/runs/{run_id}?done={checked}", status_code=303)  # type: ignore[return-value]
