"""Render every error as ``{"error", "message", "why", "fix", "detail"}`` with the error's own status.

``MailnodeError`` carries its status; the framework's request validation errors become
``E_REQUEST_INVALID`` (422) in the same shape; an unexpected exception becomes ``E_INTERNAL`` (500) and
is logged with its traceback (never swallowed).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mailnode.errors import MailnodeError

log = logging.getLogger("mailnode.api")


def install(app: FastAPI) -> None:
    """Register the exception handlers on ``app``."""

    @app.exception_handler(MailnodeError)
    async def _mailnode_error(request: Request, exc: MailnodeError) -> JSONResponse:
        return JSONResponse(exc.to_json(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"field": ".".join(str(p) for p in e.get("loc", ()) if p != "body"), "problem": e.get("msg", "")}
            for e in exc.errors()
        ]
        err = MailnodeError(
            code="E_REQUEST_INVALID",
            what="The request does not match the route's schema: "
            + "; ".join(f"{p['field'] or 'body'}: {p['problem']}" for p in problems),
            why="The route validates its body, path and query before doing anything.",
            fix="Correct the fields named; the schema is at /docs.",
            status=422,
            detail={"problems": problems},
        )
        return JSONResponse(err.to_json(), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "E_NO_SUCH_ROUTE", 405: "E_METHOD_NOT_ALLOWED"}.get(exc.status_code, "E_HTTP")
        err = MailnodeError(code=code, what=f"{request.method} {request.url.path}: {exc.detail}",
                            why="The route or method does not exist.", fix="See /docs for the routes.",
                            status=exc.status_code)
        return JSONResponse(err.to_json(), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("E_INTERNAL on %s %s", request.method, request.url.path)
        err = MailnodeError(code="E_INTERNAL", what="The node failed while handling the request.",
                            why=f"{type(exc).__name__}: {exc}", fix="Nothing was committed; retry, and see the node's log.",
                            status=500)
        return JSONResponse(err.to_json(), status_code=500)
