"""Who is looking at a page: the signed-in person (``PersonDep``) and the CSRF check (``CsrfDep``).

A page request resolves the session cookie live on every request (``directory.sessions``). Without a live
session a page is answered 303 to ``/signin?next=<path>``. Every state-changing request (POST) carries the
session's CSRF token in the form field ``csrf_token`` or the header ``X-CSRF-Token``; without it the answer
is 403 ``E_CSRF_INVALID``. The sign-in forms themselves, sent before any session exists, use
``SigninCsrfDep``: a double-submit value, a random cookie ``mailnode_presession`` that the form repeats.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, Request

from mailnode import budgets
from mailnode.directory import sessions
from mailnode.directory.tokens import Principal
from mailnode.errors import MailnodeError
from mailnode.node import Node

#: The cookie holding a session's random secret.
SESSION_COOKIE = "mailnode_session"
#: The cookie holding the double-submit CSRF value of a browser that is not signed in yet.
PRESESSION_COOKIE = "mailnode_presession"


@dataclass(frozen=True)
class WebPerson:
    """The signed-in person of a page request."""

    principal: Principal
    session_id: str
    csrf_token: str
    display_name: str


class SignInRequired(Exception):
    """A page was asked for without a live session; answered 303 to ``/signin?next=<next_path>``."""

    def __init__(self, next_path: str, reason: sessions.SessionState) -> None:
        super().__init__(next_path)
        self.next_path, self.reason = next_path, reason


def signin_location(next_path: str) -> str:
    """``/signin?next=<next_path>`` (the path URL-quoted; only a local path is kept)."""
    safe = next_path if next_path.startswith("/") and not next_path.startswith("//") else "/"
    return "/signin?next=" + quote(safe, safe="/")


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def current_person(request: Request) -> WebPerson:
    """The live session's person (and records the request on it); ``SignInRequired`` (303) otherwise."""
    node = _node(request)
    now = node.clock.now()
    with node.read() as conn:
        state, session = sessions.resolve(conn, request.cookies.get(SESSION_COOKIE), now)
    if session is None:
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise SignInRequired(path if request.method == "GET" else "/", state)
    if sessions.needs_touch(session, now):
        with node.begin() as conn:
            sessions.touch(conn, session, now)
    person = WebPerson(principal=session.principal, session_id=session.id, csrf_token=session.csrf_token,
                       display_name=session.display_name)
    request.state.web_person = person
    return person


PersonDep = Annotated[WebPerson, Depends(current_person)]


def csrf_invalid(why: str) -> MailnodeError:
    """The 403 ``E_CSRF_INVALID`` answer."""
    return MailnodeError(
        code="E_CSRF_INVALID",
        what="The request changes something but does not carry this page's CSRF token.",
        why=why,
        fix="Submit the form from the node's own page (reload it first); a script sends the token from "
            "<meta name=\"csrf-token\"> in the X-CSRF-Token header.",
        status=403,
    )


async def _sent_token(request: Request) -> str:
    header = request.headers.get("x-csrf-token")
    if header:
        return header
    ctype = request.headers.get("content-type", "")
    if ctype.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        form = await request.form()
        value = form.get("csrf_token")
        return value if isinstance(value, str) else ""
    return ""


def _compare(sent: str, expected: str | None) -> None:
    if not sent:
        raise csrf_invalid("No csrf_token form field and no X-CSRF-Token header was sent.")
    if not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise csrf_invalid("The token sent is not this session's (it may come from another site, or from a "
                           "page of a session that has ended).")


async def check_csrf(request: Request) -> None:
    """Refuse a state-changing request that does not carry the session's CSRF token: 403
    ``E_CSRF_INVALID`` (also without a live session). Uses the person ``PersonDep`` resolved when the route
    declares it first, else resolves the session itself."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    sent = await _sent_token(request)
    person: WebPerson | None = getattr(request.state, "web_person", None)
    if person is not None:
        expected: str | None = person.csrf_token
    else:
        node = _node(request)
        with node.read() as conn:
            _, session = sessions.resolve(conn, request.cookies.get(SESSION_COOKIE), node.clock.now())
        expected = session.csrf_token if session is not None else None
    _compare(sent, expected)


async def check_signin_csrf(request: Request) -> None:
    """The CSRF check of the sign-in forms, sent before any session exists: the form must repeat the
    ``mailnode_presession`` cookie's value (double submit); else 403 ``E_CSRF_INVALID``."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    _compare(await _sent_token(request), request.cookies.get(PRESESSION_COOKIE))


CsrfDep = Annotated[None, Depends(check_csrf)]
SigninCsrfDep = Annotated[None, Depends(check_signin_csrf)]


def presession_token(request: Request) -> str:
    """The double-submit CSRF value of a browser not signed in: the cookie's, or a new one that
    ``render.page`` sets as the cookie on its response."""
    value = request.cookies.get(PRESESSION_COOKIE)
    if not value:
        value = secrets.token_urlsafe(budgets.WEB_SESSION_SECRET_BYTES)
        request.state.new_presession = value
    return value


def cookie_secure(request: Request) -> bool:
    """Whether cookies get ``Secure``: the request came over TLS."""
    return request.url.scheme == "https"
