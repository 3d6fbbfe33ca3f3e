"""Sends: the list with its filters and a send's page with its timeline and actions (issue 21).

Pages at ``/sends``; filled in by the area's own change. Until then the router has no routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
