"""Signing in and out of the web inbox: ``/signin`` (with an API token), ``/signout``, ``/signout/everywhere``.

A person signs in once with an API token of theirs (as ``mailnode init`` prints it); the node opens a
server-side session (``directory.sessions``) and sets only its random secret as an ``HttpOnly``,
``SameSite=Lax`` cookie (``Secure`` over TLS). An application's token opens no session.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.responses import Response

from mailnode import budgets
from mailnode.directory import sessions
from mailnode.directory.tokens import authenticate
from mailnode.errors import MailnodeError
from mailnode.ids import prefix_of
from mailnode.web.render import page
from mailnode.web.session import SESSION_COOKIE, CsrfDep, PersonDep, cookie_secure, signin_location

router = APIRouter(include_in_schema=False)


def local_path(next_path: str | None) -> str:
    """``next_path`` when it is a path on this node, else ``/`` (pure; never an open redirect)."""
    if not next_path or not next_path.startswith("/") or next_path.startswith(("//", "/\\")):
        return "/"
    return next_path


def not_a_person() -> MailnodeError:
    """The 403 for an application's token offered to sign in."""
    return MailnodeError(
        code="E_SIGNIN_NOT_A_PERSON",
        what="That token belongs to an application, not a person.",
        why="The web inbox is for people; an application calls the API with its token.",
        fix="Sign in with your own token (mailnode init printed the first one; mailnode token create mints "
            "more), or with a code mailed to your address.",
        status=403,
    )


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _signed_in(request: Request, secret: str, next_path: str) -> Response:
    response = RedirectResponse(local_path(next_path), status_code=303)
    response.set_cookie(SESSION_COOKIE, secret, httponly=True, samesite="lax", secure=cookie_secure(request),
                        path="/", max_age=budgets.WEB_SESSION_ABSOLUTE_SECONDS)
    return response


@router.get("/signin", response_class=HTMLResponse)
def signin_page(request: Request, next: Annotated[str | None, Query()] = None) -> HTMLResponse:
    """The sign-in page."""
    return page(request, "signin.html", next_path=local_path(next), refusal=None)


@router.post("/signin/token")
def signin_with_token(request: Request, _csrf: CsrfDep, token: Annotated[str, Form()],
                      next: Annotated[str, Form()] = "/") -> Response:
    """Open a session with a person's API token; 303 to ``next``. ``E_UNAUTHENTICATED`` (401) for a wrong
    or revoked token, ``E_SIGNIN_NOT_A_PERSON`` (403) for an application's."""
    node = request.app.state.node
    with node.read() as conn:
        principal = authenticate(conn, f"Bearer {token.strip()}")
    if prefix_of(principal.principal_id) != "usr":
        raise not_a_person()
    with node.begin() as conn:
        _, secret = sessions.start(conn, org_id=principal.org_id, principal_id=principal.principal_id,
                                   method="token", token_id=principal.token_id, at=node.clock.now(),
                                   client=_client(request))
    return _signed_in(request, secret, next)


def _signed_out() -> Response:
    response = RedirectResponse(signin_location("/"), status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@router.post("/signout")
def signout(request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """End this session; 303 to ``/signin``."""
    node = request.app.state.node
    with node.read() as conn:
        _, session = sessions.resolve(conn, request.cookies.get(SESSION_COOKIE), node.clock.now())
    if session is not None:
        with node.begin() as conn:
            sessions.end(conn, session, node.clock.now())
    return _signed_out()


@router.post("/signout/everywhere")
def signout_everywhere(request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """End every session of this person, this one included; 303 to ``/signin``."""
    node = request.app.state.node
    with node.read() as conn:
        _, session = sessions.resolve(conn, request.cookies.get(SESSION_COOKIE), node.clock.now())
    if session is not None:
        with node.begin() as conn:
            sessions.end_everywhere(conn, session, node.clock.now())
    return _signed_out()
