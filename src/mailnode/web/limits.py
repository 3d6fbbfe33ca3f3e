"""Limits and health: breakers, the provider breaker, the limits, doctor and the audit chain's verdict (issue 21).

Pages at ``/limits``; filled in by the area's own change. Until then the router has no routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
