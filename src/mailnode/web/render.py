"""Rendering pages: one Jinja2 environment over ``web/templates/`` (autoescape on) and ``page``.

Every page gets ``person`` (the signed-in ``WebPerson`` or None), ``csrf_token`` (the session's, or before
sign-in the double-submit value, whose cookie ``page`` sets), ``static(path)`` (the URL of a file in
``web/static/``), ``areas`` and ``area`` (the site navigation, ``web.nav``; ``area`` None unless the page
names its own) and ``waiting_count`` (what waits on the person, or None when it cannot be counted).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from mailnode.web import nav
from mailnode.web.session import PRESESSION_COOKIE, WebPerson, cookie_secure, presession_token

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True),
                  undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def static(path: str) -> str:
    """The URL of ``web/static/<path>``."""
    return "/static/" + path.lstrip("/")


def person_of(request: Request) -> WebPerson | None:
    """The page's signed-in person when ``PersonDep`` resolved one for this request, else None."""
    person: WebPerson | None = getattr(request.state, "web_person", None)
    return person


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render ``template`` with ``context`` plus ``person``, ``csrf_token``, ``static`` and ``request``."""
    person = person_of(request)
    csrf = person.csrf_token if person is not None else presession_token(request)
    waiting = nav.waiting_count(request.app.state.node, person.principal) if person is not None else None
    context.setdefault("area", None)
    html = env.get_template(template).render(request=request, person=person, csrf_token=csrf, static=static,
                                             areas=nav.AREAS, waiting_count=waiting, **context)
    response = HTMLResponse(html, status_code=status_code)
    new = getattr(request.state, "new_presession", None)
    if new is not None:
        response.set_cookie(PRESESSION_COOKIE, new, httponly=True, samesite="lax", secure=cookie_secure(request),
                            path="/")
    return response
