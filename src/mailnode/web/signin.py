"""Signing in and out of the web inbox: ``/signin`` with an API token or a mailed code, ``/signout`` and
``/signout/everywhere``.

A person signs in once with an API token of theirs (as ``mailnode init`` prints it), or with a one-time
code mailed to their verified contact address (``codes.signin``: the realtime mail path of
verification codes, refused with the vague words while the provider breaker is shut). The node then opens
a server-side session (``directory.sessions``) and sets only its random secret as an ``HttpOnly``,
``SameSite=Lax`` cookie (``Secure`` over TLS). An application's token opens no session. Every attempt that
opens no session, and every code asked for, counts against the per-client and per-address limits
(``directory.signin_attempts``), checked before any other work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.responses import Response

from mailnode import budgets
from mailnode.addresses import normalise_address
from mailnode.codes import signin as signin_codes
from mailnode.directory import sessions, signin_attempts
from mailnode.directory.tokens import authenticate
from mailnode.errors import MailnodeError
from mailnode.ids import prefix_of
from mailnode.node import Node
from mailnode.web.render import page
from mailnode.web.session import (
    SESSION_COOKIE,
    CsrfDep,
    PersonDep,
    SigninCsrfDep,
    cookie_secure,
    signin_location,
)

router = APIRouter(include_in_schema=False)

T = TypeVar("T")


def local_path(next_path: str | None) -> str:
    """``next_path`` when it is a path on this node, else ``/`` (pure; never an open redirect)."""
    if not next_path or not next_path.startswith("/") or next_path.startswith(("//", "/\\")):
        return "/"
    return next_path


def not_a_person() -> MailnodeError:
    """The 403 ``E_SIGNIN_NOT_A_PERSON`` for an application's token offered to sign in."""
    return MailnodeError(
        code="E_SIGNIN_NOT_A_PERSON",
        what="That token belongs to an application, not a person.",
        why="The web inbox is for people; an application calls the API with its token.",
        fix="Sign in with your own token (mailnode init printed the first one; mailnode token create mints "
            "more), or with a code mailed to your address.",
        status=403,
    )


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _attempt(request: Request, method: str, address: str | None, work: Callable[[], T]) -> T:
    """Run ``work`` as one sign-in attempt of ``method``: refused first when the limits are reached
    (``E_SIGNIN_RATE_LIMITED``, 429); a refusal of ``work`` is recorded as an attempt and raised."""
    node = _node(request)
    client = _client(request)
    with node.read() as conn:
        signin_attempts.check(conn, client=client, address=address, now=node.clock.now())
    try:
        return work()
    except MailnodeError as exc:
        with node.begin() as conn:
            signin_attempts.record(conn, client=client, address=address, method=method, outcome=exc.code,
                                   at=node.clock.now())
        raise


def _signed_in(request: Request, secret: str, next_path: str) -> Response:
    response = RedirectResponse(local_path(next_path), status_code=303)
    response.set_cookie(SESSION_COOKIE, secret, httponly=True, samesite="lax", secure=cookie_secure(request),
                        path="/", max_age=budgets.WEB_SESSION_ABSOLUTE_SECONDS)
    return response


def _start(request: Request, *, org_id: str, principal_id: str, method: str, token_id: str | None) -> str:
    """Open the new session; a live session this browser still holds is signed out first (one browser,
    one session: signing in as someone else leaves nothing open behind)."""
    node = _node(request)
    with node.read() as conn:
        _, previous = sessions.resolve(conn, request.cookies.get(SESSION_COOKIE), node.clock.now())
    with node.begin() as conn:
        if previous is not None:
            sessions.end(conn, org_id=previous.principal.org_id, principal_id=previous.principal.principal_id,
                         session_id=previous.id, at=node.clock.now())
        _, secret = sessions.start(conn, org_id=org_id, principal_id=principal_id, method=method,
                                   token_id=token_id, at=node.clock.now(), client=_client(request))
    return secret


def _signin_page(request: Request, next_path: str, refusal: MailnodeError | None = None,
                 address: str = "") -> HTMLResponse:
    return page(request, "signin.html", status_code=refusal.status if refusal else 200,
                next_path=local_path(next_path), refusal=refusal, address=address)


def _code_page(request: Request, next_path: str, address: str, refusal: MailnodeError | None = None) -> HTMLResponse:
    return page(request, "signin_code.html", status_code=refusal.status if refusal else 200,
                next_path=local_path(next_path), refusal=refusal, address=address)


@router.get("/signin", response_class=HTMLResponse)
def signin_page(request: Request, next: Annotated[str | None, Query()] = None) -> HTMLResponse:
    """The sign-in page: a token form and a form to ask for a code."""
    return _signin_page(request, next or "/")


@router.post("/signin/token", response_model=None)
def signin_with_token(request: Request, _csrf: SigninCsrfDep, token: Annotated[str, Form()],
                      next: Annotated[str, Form()] = "/") -> Response:
    """Open a session with a person's API token; 303 to ``next``. Refusals are shown on the sign-in page
    with their status: ``E_UNAUTHENTICATED`` (401, a wrong or revoked token), ``E_SIGNIN_NOT_A_PERSON``
    (403, an application's), ``E_SIGNIN_RATE_LIMITED`` (429)."""
    node = _node(request)

    def work() -> tuple[str, str, str]:
        with node.read() as conn:
            principal = authenticate(conn, f"Bearer {token.strip()}")
        if prefix_of(principal.principal_id) != "usr":
            raise not_a_person()
        return principal.org_id, principal.principal_id, principal.token_id

    try:
        org_id, principal_id, token_id = _attempt(request, "token", None, work)
    except MailnodeError as exc:
        return _signin_page(request, next, exc)
    secret = _start(request, org_id=org_id, principal_id=principal_id, method="token", token_id=token_id)
    return _signed_in(request, secret, next)


def _normalised(address: str) -> str:
    return normalise_address(address.strip(), "address").address.lower()


@router.post("/signin/code", response_class=HTMLResponse)
def ask_for_code(request: Request, _csrf: SigninCsrfDep, address: Annotated[str, Form()],
                 next: Annotated[str, Form()] = "/") -> HTMLResponse:
    """Mail a one-time code to ``address`` when it is a person's verified contact address, then show the
    form to type it. The page reads the same whether or not the address is anyone's. Refusals (on the
    sign-in page, with their status): ``E_SIGNIN_CODE_UNAVAILABLE`` (503, vague), ``E_SIGNIN_CODE_COOLDOWN``
    / ``_DAILY_CAP`` / ``E_SIGNIN_RATE_LIMITED`` (429), an address that is not one (422)."""
    node = _node(request)
    try:
        normalised = _normalised(address)
    except MailnodeError as exc:
        return _signin_page(request, next, exc, address=address)

    def work() -> None:
        signin_codes.request(node, address=normalised)
        with node.begin() as conn:
            signin_attempts.record(conn, client=_client(request), address=normalised, method="code_request",
                                   outcome="code_requested", at=node.clock.now())

    try:
        _attempt(request, "code_request", normalised, work)
    except MailnodeError as exc:
        return _signin_page(request, next, exc, address=normalised)
    return _code_page(request, next, normalised)


@router.post("/signin/code/check", response_model=None)
def signin_with_code(request: Request, _csrf: SigninCsrfDep, address: Annotated[str, Form()],
                     code: Annotated[str, Form()], next: Annotated[str, Form()] = "/") -> Response:
    """Open a session with the code mailed to ``address``; 303 to ``next``. Refusals are shown on the code
    page with their status: ``E_SIGNIN_CODE_WRONG`` / ``_EXPIRED`` / ``_ATTEMPTS_EXHAUSTED`` (422),
    ``E_SIGNIN_CODE_REQUEST_NEW`` (409), ``E_SIGNIN_RATE_LIMITED`` (429)."""
    node = _node(request)
    try:
        normalised = _normalised(address)
        person = _attempt(request, "code", normalised, lambda: signin_codes.check(node, address=normalised,
                                                                                  code=code.strip()))
    except MailnodeError as exc:
        return _code_page(request, next, address, exc)
    secret = _start(request, org_id=person.org_id, principal_id=person.user_id, method="code", token_id=None)
    return _signed_in(request, secret, next)


def _signed_out() -> Response:
    response = RedirectResponse(signin_location("/"), status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@router.post("/signout")
def signout(request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """End this session; 303 to ``/signin``."""
    node = _node(request)
    with node.begin() as conn:
        sessions.end(conn, org_id=person.principal.org_id, principal_id=person.principal.principal_id,
                     session_id=person.session_id, at=node.clock.now())
    return _signed_out()


@router.post("/signout/everywhere")
def signout_everywhere(request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """End every session of this person, this one included; 303 to ``/signin``."""
    node = _node(request)
    with node.begin() as conn:
        sessions.end_everywhere(conn, org_id=person.principal.org_id, principal_id=person.principal.principal_id,
                                session_id=person.session_id, at=node.clock.now())
    return _signed_out()
