"""Errors on pages: a refusal in a page route renders ``error.html`` with its four parts in words.

``install`` wraps the API's exception handlers (``mailnode.api.errors``): a request of an API route (and of
a path under ``NOT_PAGES`` no route matched) still gets the JSON body; a page route, or another unmatched
path, is a page and gets ``error.html`` with the error's
code, what happened, why and the fix, and the error's own status. A page asked for without a live session
(``SignInRequired``) is answered 303 to ``/signin?next=<path>``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import Scope

from mailnode.api.errors import logged_internal_error, validation_error
from mailnode.errors import MailnodeError
from mailnode.web.render import page
from mailnode.web.session import SignInRequired, signin_location

#: Paths that are not pages when no route matched them: the API, its OpenAPI documents, the metrics and the
#: static files keep their own answers.
NOT_PAGES = ("/api/", "/docs", "/redoc", "/openapi.json", "/static/", "/metrics")

Handler = Callable[[Request, Any], Awaitable[Response]]


def is_page(scope: Scope) -> bool:
    """Whether the request of ``scope`` is for a page of the web inbox (pure): its matched route's endpoint
    lives in ``mailnode.web``; a path no route matched is a page unless it is under ``NOT_PAGES``."""
    route = scope.get("route")
    if isinstance(route, APIRoute):
        return str(getattr(route.endpoint, "__module__", "")).startswith("mailnode.web.")
    path = str(scope.get("path", ""))
    return path != "/api" and not path.startswith(NOT_PAGES)


def error_page(request: Request, err: MailnodeError) -> Response:
    """``error.html`` for ``err`` with its status."""
    return page(request, "error.html", status_code=err.status, error=err)


def install(app: FastAPI) -> None:
    """Wrap the app's handlers so pages render their errors as HTML (call after ``api.errors.install``)."""
    api: dict[Any, Handler] = dict(app.exception_handlers)

    def wrap(kind: Any, to_error: Callable[[Request, Any], MailnodeError | None]) -> None:
        api_handler = api[kind]

        async def handler(request: Request, exc: Any) -> Response:
            if not is_page(request.scope):
                return await api_handler(request, exc)
            err = to_error(request, exc)
            if err is None:
                return await api_handler(request, exc)
            return error_page(request, err)

        app.add_exception_handler(kind, handler)

    wrap(MailnodeError, lambda request, exc: exc)
    wrap(RequestValidationError, lambda request, exc: validation_error(list(exc.errors())))

    def http_error(request: Request, exc: StarletteHTTPException) -> MailnodeError:
        code, what = {404: ("E_NO_SUCH_PAGE", f"There is no page at {request.url.path}."),
                      405: ("E_METHOD_NOT_ALLOWED", f"{request.method} is not taken by {request.url.path}.")}.get(
            exc.status_code, ("E_HTTP", f"{request.method} {request.url.path}: {exc.detail}"))
        return MailnodeError(code=code, what=what, why="The web inbox has no such page or action.",
                             fix="Start again from the inbox at /.", status=exc.status_code)

    wrap(StarletteHTTPException, http_error)
    # An unexpected failure: logged under an error id, and the page says only that id (never the text).
    wrap(Exception, logged_internal_error)

    async def sign_in_first(request: Request, exc: Exception) -> Response:
        next_path = exc.next_path if isinstance(exc, SignInRequired) else "/"
        return RedirectResponse(signin_location(next_path), status_code=303)

    app.add_exception_handler(SignInRequired, sign_in_first)
