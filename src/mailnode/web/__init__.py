"""The web inbox: pages for people at ``/``, served by the same app as the API (which stays under ``/api``).

One module of routes per domain, each an ``APIRouter`` named ``router`` listed in ``ROUTERS``; pages call the
same service functions as ``mailnode.api`` (never a second implementation of a rule). ``install`` is called
at the end of ``mailnode.app.create_app``.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from mailnode.web import (
    butlers,
    composer,
    controls,
    conversation,
    errors,
    limits,
    people,
    queue,
    sends,
    signin,
    waiting,
)
from mailnode.web.headers import PageSecurityHeaders
from mailnode.web.render import STATIC

#: Every web router module, included in this order (each has ``router``).
ROUTERS = (queue, signin, conversation, composer, waiting, sends, limits, controls, butlers, people)


def install(app: FastAPI) -> None:
    """Add the pages, ``/static``, the page error renderer and the page security headers to ``app``."""
    errors.install(app)
    for module in ROUTERS:
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(PageSecurityHeaders)
