"""People and access: users, teams and memberships, the grant matrix, application principals and tokens, and the
signed-in person's own page (issue 21).

Pages at ``/people``; filled in by the area's own change. Until then the router has no routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
