"""The home page at ``/``: the signed-in person's start page (a placeholder until the queue lands)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from mailnode.web.render import page
from mailnode.web.session import PersonDep

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, person: PersonDep) -> HTMLResponse:
    """The start page of a signed-in person; without a session, 303 to ``/signin``."""
    return page(request, "home.html")
