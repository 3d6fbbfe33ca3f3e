"""Butlers: the list, the editor with the checker's findings, the dry run, publish with a diff, versions and a run's
page (issue 21).

Pages at ``/butlers``; filled in by the area's own change. Until then the router has no routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
