"""A bound on HTTP request bodies: 413 ``E_REQUEST_TOO_LARGE`` before a route reads more than it may.

FastAPI and uvicorn bound no request body by default, and a route's JSON body is read whole into memory
before the route runs, so a 30 MB ``POST /api/mail`` would be read, parsed and only then refused by the
seal. ``RequestBodyLimit`` (ASGI middleware, installed by ``mailnode.app.create_app``) answers 413 in the
node's error shape, without calling the application, when:

- the request declares a ``Content-Length`` over ``limit`` (nothing of the body is read), or
- a body without one (chunked) runs over ``limit`` as it arrives (what arrived is dropped).

A body within the bound reaches the application unchanged (a chunked one is collected first and replayed,
so a route that hashes the raw bytes, such as the webhook signature check, sees the same bytes). The
limit is ``budgets.API_REQUEST_MAX_BYTES``; the seal's own limits on the Subject and body apply after.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailnode import budgets
from mailnode.errors import MailnodeError


def request_too_large(observed: int, limit: int, *, declared: bool) -> MailnodeError | None:
    """The 413 ``E_REQUEST_TOO_LARGE`` for a body of ``observed`` bytes over ``limit``; None within it. Pure.

    ``declared``: ``observed`` is the request's ``Content-Length`` (else: the bytes received so far).
    ``detail``: ``limit_name`` (``API_REQUEST_MAX_BYTES``), ``limit``, ``observed``, ``declared``.
    """
    if observed <= limit:
        return None
    how = "declares" if declared else "sent at least"
    return MailnodeError(
        code="E_REQUEST_TOO_LARGE",
        what=f"API_REQUEST_MAX_BYTES is {limit} bytes; this request {how} {observed}.",
        why="The API reads a request body into memory before any route runs, so it bounds the body; the "
            f"largest mail a send may carry is SEND_BODY_MAX_BYTES ({budgets.SEND_BODY_MAX_BYTES} bytes of text).",
        fix="Send a smaller request: shorten the body, or link to the content instead of sending it.",
        status=413,
        detail={"limit_name": "API_REQUEST_MAX_BYTES", "limit": limit, "observed": observed, "declared": declared},
    )


def declared_length(headers: Headers) -> int | None:
    """The request's ``Content-Length`` as a non-negative int, or None when absent or unreadable (the
    server refuses an unreadable one itself; the body is then counted as it arrives). Pure."""
    value = headers.get("content-length")
    if value is None or not value.strip().isdigit():
        return None
    return int(value.strip())


class RequestBodyLimit:
    """ASGI middleware answering 413 ``E_REQUEST_TOO_LARGE`` for an HTTP request body over ``limit`` bytes."""

    def __init__(self, app: ASGIApp, limit: int = budgets.API_REQUEST_MAX_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413 in the node's error shape without calling the application."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = declared_length(Headers(scope=scope))
        if declared is not None:
            refusal = request_too_large(declared, self.limit, declared=True)
            if refusal is not None:
                await _refuse(refusal, scope, receive, send)
                return
            # The server holds the body to its declared length; nothing more can arrive.
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        received = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            received += len(message.get("body", b""))
            refusal = request_too_large(received, self.limit, declared=False)
            if refusal is not None:
                await _refuse(refusal, scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replay = iter(messages)

        async def replayed() -> Message:
            # After the collected messages, the server's own receive (a disconnect, when it comes).
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)


async def _refuse(error: MailnodeError, scope: Scope, receive: Receive, send: Send) -> None:
    await JSONResponse(error.to_json(), status_code=error.status, headers={"connection": "close"})(scope, receive, send)
