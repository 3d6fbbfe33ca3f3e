"""``GET /api/health`` (no authentication) and ``GET /api/doctor`` (any authenticated caller, each finding
shown as far as the caller's relations reach: ``mailnode.doctor.visibility``)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict

from mailnode import __version__
from mailnode.api.deps import CallerDep, NodeDep
from mailnode.doctor.checks import run_checks
from mailnode.doctor.findings import Severity, report
from mailnode.doctor.visibility import view, viewer_of

router = APIRouter(prefix="/api", tags=["health"])


class Health(BaseModel):
    """Liveness: ``status`` is always ``up`` when the process answers; ``version`` is mailnode's."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["up"]
    version: str


class DoctorFinding(BaseModel):
    """One check's finding (``Finding.to_json``); ``data`` is open by design: each check puts its own values
    there (filtered by what the caller may see)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    severity: Severity
    ok: bool
    detail: str
    fix: str
    data: dict[str, Any]


class DoctorReport(BaseModel):
    """``GET /api/doctor``: ``ok`` when nothing fails, else the worst failing severity, and every finding."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["ok", "degraded", "refuse"]
    findings: list[DoctorFinding]


@router.get("/health", response_model=Health)
def health() -> dict[str, Any]:
    """Liveness: the process answers. Says nothing about the node's health (see /api/doctor)."""
    return {"status": "up", "version": __version__}


@router.get("/doctor", response_model=DoctorReport)
def doctor(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The doctor's report for the caller's organisation, each finding's words and data filtered by what the
    caller may see (``doctor.visibility.view``); names, severities and the verdict are the same for all."""
    findings = run_checks(node, caller.org_id)
    with node.read() as conn:
        viewer = viewer_of(conn, caller.org_id, caller.principal_id)
    return report([view(f, viewer) for f in findings])
