"""Security headers on every page (not on ``/api``): a strict CSP, no framing, no referrer, no sniffing.

The CSP allows only the node's own scripts, styles and frames (``'self'``), images from the node and
``data:`` URLs, no inline script or style, and no framing of a page by anyone (``frame-ancestors 'none'``
plus ``X-Frame-Options: DENY`` for older browsers). The one exception is a route marked ``framed``: a
message's sanitised HTML, shown in a sandboxed frame of the conversation page, sets its own stricter CSP.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailnode.web.errors import is_page

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; "
       "frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'")

#: The headers every page carries (ASCII names, lower-case, as ASGI sends them).
PAGE_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
)


#: The headers of a page that is itself shown in a frame of the node's own pages (a message's HTML): it
#: carries its own, stricter CSP (``frame-ancestors 'self'``, ``sandbox``), so only these are added.
FRAMED_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-frame-options", b"SAMEORIGIN"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
)


def framed_by_us(scope: Scope) -> bool:
    """Whether the matched route's endpoint is marked ``own_frame_policy`` (see ``framed``). Pure."""
    route = scope.get("route")
    return bool(getattr(getattr(route, "endpoint", None), "own_frame_policy", False))


def framed(endpoint: Any) -> Any:
    """Mark a page route whose response is shown in a frame of the node's own pages and sets its own CSP
    (which must say ``frame-ancestors 'self'``); the middleware then keeps that CSP and adds
    ``FRAMED_HEADERS`` instead of ``PAGE_HEADERS``."""
    endpoint.own_frame_policy = True
    return endpoint


class PageSecurityHeaders:
    """ASGI middleware adding ``PAGE_HEADERS`` to every response of a page path (``errors.is_page``) and
    ``no-referrer`` / ``nosniff`` to ``/static`` files."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            # The router has matched by now, so ``is_page`` sees the route.
            if message["type"] == "http.response.start":
                if is_page(scope) and framed_by_us(scope):
                    extra = FRAMED_HEADERS
                elif is_page(scope):
                    extra = PAGE_HEADERS
                elif str(scope["path"]).startswith("/static/"):
                    extra = PAGE_HEADERS[2:]
                else:
                    extra = ()
                names = {name for name, _ in extra}
                kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
                message = {**message, "headers": kept + list(extra)}
            await send(message)

        await self.app(scope, receive, send_with_headers)
