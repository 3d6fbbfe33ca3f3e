"""A bound on the nesting of JSON request bodies: 422 ``E_JSON_TOO_DEEP`` before anything decodes them.

Python's JSON decoder recurses once per array or object level, so a body of 100,000 nested ``[`` raised
RecursionError inside the framework's body parsing or the webhook's own decoding, a 500 (issue 14 item 6).
``JSONNestingLimit`` (ASGI middleware, installed by ``mailnode.app.create_app`` inside ``RequestBodyLimit``, so
the body it reads is already bounded by ``budgets.API_REQUEST_MAX_BYTES``) reads the body, measures its
nesting with ``nesting_over`` (brackets inside strings do not count) and answers 422 in the node's error
shape when it passes ``budgets.JSON_NESTING_MAX``; otherwise the body reaches the application unchanged,
so the webhook signature still verifies over the same bytes. It runs before authentication and before the
webhook signature check: what it refuses was never decoded, and nothing was written.
"""

from __future__ import annotations

import re

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailnode import budgets
from mailnode.errors import MailnodeError

#: A JSON string (RFC 8259 §7): brackets inside it are text, not nesting. An unterminated string runs to the
#: end of the body (``\Z``, after at most one dangling backslash) so that every opening quote matches: a
#: pattern that could fail after scanning to the end would rescan from every later quote, quadratic in the
#: body (``"`` followed by 40,000 ``\"`` took 20 s of CPU). ``DOTALL`` lets an escape take a newline too.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
#: Every byte that is not a bracket, for ``bytes.translate`` to delete.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPENERS = frozenset(b"[{")


def nesting_over(body: bytes, limit: int) -> int | None:
    """The nesting depth reached once it passes ``limit`` (``limit + 1``), or None when ``body`` nests at most
    ``limit`` levels of arrays and objects. Pure; brackets inside JSON strings are not counted; a body that
    is not JSON is measured all the same (its decoding fails later, with its own error)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return None
    depth = 0
    for byte in _STRING.sub(b"", body).translate(None, _NOT_BRACKETS):
        if byte in _OPENERS:
            depth += 1
            if depth > limit:
                return depth
        elif depth > 0:
            depth -= 1
    return None


def too_deep(limit: int) -> MailnodeError:
    """The 422 ``E_JSON_TOO_DEEP`` for a body nesting more than ``limit`` levels."""
    return MailnodeError(
        code="E_JSON_TOO_DEEP",
        what=f"The request body nests arrays and objects more than JSON_NESTING_MAX ({limit}) levels deep.",
        why="No route takes a body nested that deeply, and decoding one costs a level of recursion per level.",
        fix="Send the body the route documents (see /docs); flatten the structure.",
        status=422,
        detail={"limit_name": "JSON_NESTING_MAX", "limit": limit, "observed_at_least": limit + 1},
    )


class JSONNestingLimit:
    """ASGI middleware answering 422 ``E_JSON_TOO_DEEP`` for a request body nested over ``limit`` levels."""

    def __init__(self, app: ASGIApp, limit: int = budgets.JSON_NESTING_MAX) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body, refuse it when too deep, else replay it to the application unchanged."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        chunks: list[bytes] = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        if nesting_over(b"".join(chunks), self.limit) is not None:
            error = too_deep(self.limit)
            await JSONResponse(error.to_json(), status_code=error.status)(scope, receive, send)
            return
        replay = iter(messages)

        async def replayed() -> Message:
            # After the collected messages, the server's own receive (a disconnect, when it comes).
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)
