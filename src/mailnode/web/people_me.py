"""``/people/me``: the signed-in person's contact address with its verification, their open sessions and their
API tokens, and the mailboxes they may know of (saying which they may not read).

The contact address is set and verified through ``codes.verification_io`` (``POST /api/me/contact-email`` and
``.../verify``); tokens through ``directory.tokens`` (``POST``/``GET``/``DELETE /api/tokens``); sessions through
``directory.sessions`` (``list_open``, ``end_one``, ``end_others``; sessions are the web's own, the API has
none). A minted token is shown once, in the answer to the form, with ``Cache-Control: no-store``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from mailnode import authz, budgets
from mailnode.codes import verification_io
from mailnode.directory import sessions, tokens
from mailnode.errors import MailnodeError
from mailnode.mail.mailboxes import list_mailboxes
from mailnode.node import Node
from mailnode.web.render import page
from mailnode.web.session import CsrfDep, PersonDep, WebPerson

router = APIRouter(include_in_schema=False)


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def _me(request: Request, person: WebPerson, *, refusal: MailnodeError | None = None,
        minted: dict[str, Any] | None = None, notice: str | None = None) -> HTMLResponse:
    node = _node(request)
    p = person.principal
    now = node.clock.now()
    with node.read() as conn:
        contact = verification_io.contact_json(conn, p.principal_id)
        open_sessions = sessions.list_open(conn, org_id=p.org_id, principal_id=p.principal_id, at=now)
        my_tokens = tokens.list_tokens(conn, org_id=p.org_id, principal_id=p.principal_id)
        is_admin = authz.is_admin(conn, p.org_id, p.principal_id)
        # One more than shown, to say honestly whether more exist.
        boxes = list_mailboxes(conn, org_id=p.org_id, principal_id=p.principal_id,
                               limit=budgets.WEB_PEOPLE_ROWS_MAX + 1, cursor=None)
        readable = authz.mailboxes_visible(conn, p.org_id, p.principal_id, authz.METADATA_READERS)
    response = page(request, "people/me.html", status_code=refusal.status if refusal else 200, area="people",
                    subarea="me", contact=contact, sessions=open_sessions, tokens=my_tokens, is_admin=is_admin,
                    boxes=boxes[:budgets.WEB_PEOPLE_ROWS_MAX],
                    more_boxes=len(boxes) > budgets.WEB_PEOPLE_ROWS_MAX, readable=readable,
                    this_session=person.session_id,
                    this_token=p.token_id or None, refusal=refusal, minted=minted, notice=notice,
                    rows_max=budgets.WEB_PEOPLE_ROWS_MAX)
    if minted is not None:
        response.headers["Cache-Control"] = "no-store"
    return response


def _act(request: Request, person: WebPerson, work: Callable[[], Any]) -> Response:
    """Run ``work``; 303 back to ``/people/me`` when it succeeded, else the page with the refusal."""
    try:
        work()
    except MailnodeError as exc:
        return _me(request, person, refusal=exc)
    return RedirectResponse("/people/me", status_code=303)


@router.get("/people/me", response_class=HTMLResponse)
def me(request: Request, person: PersonDep) -> HTMLResponse:
    """The signed-in person's own page: contact address (verified or not), open sessions, tokens, and the
    mailboxes they may know of."""
    return _me(request, person)


@router.post("/people/me/contact-email", response_class=HTMLResponse)
def set_contact_email(request: Request, person: PersonDep, _csrf: CsrfDep,
                      address: Annotated[str, Form()] = "") -> HTMLResponse:
    """Set the contact address and mail it a code (``verification_io.request_code``, as
    ``POST /api/me/contact-email``); the page then asks for the code."""
    p = person.principal
    try:
        sent = verification_io.request_code(_node(request), org_id=p.org_id, user_id=p.principal_id,
                                            address=address)
    except MailnodeError as exc:
        return _me(request, person, refusal=exc)
    return _me(request, person, notice=f"A code was mailed to {sent['contact_email']['address']}. "
                                       "Type it below to verify the address.")


@router.post("/people/me/contact-email/verify", response_class=HTMLResponse)
def verify_contact_email(request: Request, person: PersonDep, _csrf: CsrfDep,
                         code: Annotated[str, Form()] = "") -> HTMLResponse:
    """Check a code (``verification_io.verify_code``, as ``POST /api/me/contact-email/verify``)."""
    p = person.principal
    try:
        verification_io.verify_code(_node(request), org_id=p.org_id, user_id=p.principal_id, code=code.strip())
    except MailnodeError as exc:
        return _me(request, person, refusal=exc)
    return _me(request, person, notice="Your contact address is verified.")


@router.post("/people/me/sessions/{session_id}/end")
def end_session(session_id: str, request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """End one of the person's sessions (``sessions.end_one``); ending this one signs this browser out."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            sessions.end_one(conn, org_id=p.org_id, principal_id=p.principal_id, session_id=session_id,
                             at=node.clock.now())
    return _act(request, person, work)


@router.post("/people/me/sessions/end-others")
def end_other_sessions(request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """End every open session of the person except this one (``sessions.end_others``)."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            sessions.end_others(conn, org_id=p.org_id, principal_id=p.principal_id, session_id=person.session_id,
                                at=node.clock.now())
    return _act(request, person, work)


@router.post("/people/me/tokens", response_class=HTMLResponse)
def mint_token(request: Request, person: PersonDep, _csrf: CsrfDep, label: Annotated[str, Form()] = "") -> HTMLResponse:
    """Mint a token for the person (``tokens.mint_own_token``, as ``POST /api/tokens``); shown once."""
    node = _node(request)
    try:
        with node.begin() as conn:
            made = tokens.mint_own_token(conn, person.principal, at=node.clock.now(), label=label)
    except MailnodeError as exc:
        return _me(request, person, refusal=exc)
    return _me(request, person, minted={"for": made["label"], "token": made["token"], "token_id": made["id"]})


@router.post("/people/me/tokens/{token_id}/revoke")
def revoke_token(token_id: str, request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """Revoke one of the person's tokens and those minted from it (``tokens.revoke_token``, as
    ``DELETE /api/tokens/{id}``). Revoking the token this session was opened with ends this session."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            tokens.revoke_token(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(),
                                token_id=token_id)
    return _act(request, person, work)
