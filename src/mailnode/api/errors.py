"""Render every error as ``{"error", "message", "why", "fix", "detail"}`` with the error's own status.

``MailnodeError`` carries its status. The framework's request validation errors become
``E_REQUEST_INVALID`` (422) in the same shape, naming each field (``query.<name>`` for a query parameter);
a body that is not JSON at all becomes ``E_REQUEST_MALFORMED`` (400) saying where it stops being JSON. An
unexpected exception becomes ``E_INTERNAL`` (500): its text and traceback go to the node's log under a
fresh error id, and the answer carries only that id, never the exception's text (it can hold SQL,
paths or values), and does not claim to know whether anything was committed.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mailnode.errors import MailnodeError

log = logging.getLogger("mailnode.api")

#: What the framework says when it could not read a body at all (bytes that are not text, a RecursionError
#: in its decoder): FastAPI raises HTTPException(400) with this detail.
_BODY_UNREADABLE = "There was an error parsing the body"


def _field(loc: Any) -> str:
    """``("body", "to", 0)`` -> ``to.0``; ``("query", "state")`` -> ``query.state``."""
    return ".".join(str(p) for p in loc if p != "body")


def request_malformed(reason: str, position: int | None = None) -> MailnodeError:
    """The 400 ``E_REQUEST_MALFORMED`` for a body that is not JSON: ``reason`` as the decoder said it and the
    byte ``position`` where it stopped, when known."""
    at = f" at byte {position}" if position is not None else ""
    return MailnodeError(
        code="E_REQUEST_MALFORMED",
        what=f"The request body is not valid JSON: {reason}{at}.",
        why="Every route that takes a body reads it as one JSON document (RFC 8259) in UTF-8.",
        fix="Send the body as JSON with Content-Type: application/json (the schema is at /docs).",
        status=400,
        detail={"reason": reason, "position": position},
    )


def validation_error(errors: list[dict[str, Any]]) -> MailnodeError:
    """``E_REQUEST_MALFORMED`` (400) when the body did not decode, else ``E_REQUEST_INVALID`` (422) with
    ``detail.problems`` = ``[{"field", "problem"}]``, from the framework's validation errors (pure)."""
    undecodable = next((e for e in errors if e.get("type") == "json_invalid"), None)
    if undecodable is not None:
        loc = undecodable.get("loc", ())
        position = loc[-1] if loc and isinstance(loc[-1], int) else None
        reason = str((undecodable.get("ctx") or {}).get("error") or undecodable.get("msg") or "decode error")
        return request_malformed(reason, position)
    problems = [{"field": _field(e.get("loc", ())), "problem": e.get("msg", "")} for e in errors]
    return MailnodeError(
        code="E_REQUEST_INVALID",
        what="The request does not match the route's schema: "
        + "; ".join(f"{p['field'] or 'body'}: {p['problem']}" for p in problems),
        why="The route validates its body, path and query before doing anything.",
        fix="Correct the fields named; the schema is at /docs.",
        status=422,
        detail={"problems": problems},
    )


def internal_error(error_id: str) -> MailnodeError:
    """The 500 ``E_INTERNAL`` answer for an unexpected failure logged under ``error_id`` (pure)."""
    return MailnodeError(
        code="E_INTERNAL",
        what=f"The node failed unexpectedly while handling the request (error id {error_id}).",
        why="An unexpected failure, not a refusal of the request; what failed is in the node's log under "
            "this error id, not in this answer.",
        fix="Read back what the request would have changed before retrying: whether any of it was committed "
            f"is not known. An operator finds the cause with: grep {error_id} in the node's log.",
        status=500,
        detail={"error_id": error_id},
    )


def logged_internal_error(request: Request, exc: Exception) -> MailnodeError:
    """Log ``exc`` with its traceback under a fresh error id and return the ``E_INTERNAL`` (500) naming it
    (the web pages render the same error as HTML)."""
    error_id = "err_" + secrets.token_hex(8)
    log.error("E_INTERNAL %s on %s %s", error_id, request.method, request.url.path, exc_info=exc)
    return internal_error(error_id)


def install(app: FastAPI) -> None:
    """Register the exception handlers on ``app``."""

    @app.exception_handler(MailnodeError)
    async def _mailnode_error(request: Request, exc: MailnodeError) -> JSONResponse:
        return JSONResponse(exc.to_json(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        err = validation_error(list(exc.errors()))
        return JSONResponse(err.to_json(), status_code=err.status)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == _BODY_UNREADABLE:
            err = request_malformed("the body could not be decoded (not UTF-8 text, or not parseable)")
            return JSONResponse(err.to_json(), status_code=400)
        code, why = {404: ("E_NO_SUCH_ROUTE", "The route does not exist."),
                     405: ("E_METHOD_NOT_ALLOWED", "The route does not take this method.")}.get(
            exc.status_code, ("E_HTTP", "The HTTP layer refused the request before any route ran."))
        err = MailnodeError(code=code, what=f"{request.method} {request.url.path}: {exc.detail}", why=why,
                            fix="See /docs for the routes and what each takes.", status=exc.status_code)
        return JSONResponse(err.to_json(), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        err = logged_internal_error(request, exc)
        return JSONResponse(err.to_json(), status_code=500)
