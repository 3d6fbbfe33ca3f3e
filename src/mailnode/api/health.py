"""``GET /api/health`` (no authentication) and ``GET /api/doctor`` (any authenticated caller)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode import __version__
from mailnode.api.deps import CallerDep, NodeDep
from mailnode.doctor.checks import run_checks
from mailnode.doctor.findings import report

router = APIRouter(prefix="/api", tags=["health"])


@router.get("/health")
def health() -> dict[str, Any]:
    """Liveness: the process answers. Says nothing about the node's health (see /api/doctor)."""
    return {"status": "up", "version": __version__}


@router.get("/doctor")
def doctor(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The doctor's report for the caller's organisation."""
    return report(run_checks(node, caller.org_id))
