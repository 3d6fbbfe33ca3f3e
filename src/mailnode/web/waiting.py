"""Waiting for me: Butler proposals to release, approvals to decide, domain pauses and hold lifts awaiting this person
(issue 21).

Pages at ``/waiting``; filled in by the area's own change. Until then the router has no routes."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
