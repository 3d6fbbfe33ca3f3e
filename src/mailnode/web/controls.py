"""The operator's controls under Limits and health: domain pauses, legal holds, retention settings and the suppression
list (issue 21).

Pages at ``/limits/pauses, /limits/holds, /limits/retention, /limits/suppressions``; filled in by the area's own
change. Until then the router has no routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
