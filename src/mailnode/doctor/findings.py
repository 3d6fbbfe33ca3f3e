"""The doctor's data: ``Finding``, ``Severity``, the verdict and the report shape (pure)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    """How bad a failing finding is; ordered ``report < degraded < refuse``."""

    REPORT = "report"
    DEGRADED = "degraded"
    REFUSE = "refuse"

    @property
    def rank(self) -> int:
        """Order for the verdict."""
        return _RANK[self]


_RANK = {Severity.REPORT: 0, Severity.DEGRADED: 1, Severity.REFUSE: 2}

#: Exit code of ``mailnode doctor`` per verdict.
EXIT_CODES = {"ok": 0, "report": 0, "degraded": 1, "refuse": 2}


@dataclass(frozen=True)
class Finding:
    """One observation. ``ok`` False means the finding fails at its ``severity``."""

    name: str
    severity: Severity
    ok: bool
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        out = asdict(self)
        out["severity"] = self.severity.value
        return out


#: The words a finding with nothing to judge by begins its ``detail`` with (``not_observed``).
NOT_OBSERVED = "not observed"


def not_observed(name: str, why: str, fix: str = "", data: dict[str, Any] | None = None) -> Finding:
    """A finding that has no observations to judge by: never a reassuring ``ok``.

    Severity ``report`` with ``ok`` False (the state ``butler_loop_detection`` uses when unarmed), a
    ``detail`` beginning ``"not observed: "`` + ``why``, and ``data["observed"]`` False. A failing
    ``report`` leaves the verdict as it is, so a fresh node is not degraded by what it has not seen yet.
    """
    return Finding(name, Severity.REPORT, False, f"{NOT_OBSERVED}: {why}", fix, {**(data or {}), "observed": False})


def verdict(findings: list[Finding]) -> str:
    """``ok`` when nothing fails, else the worst failing severity. A failing ``report`` leaves the verdict ok."""
    failing = [f.severity for f in findings if not f.ok and f.severity is not Severity.REPORT]
    if not failing:
        return "ok"
    return max(failing, key=lambda s: s.rank).value


def report(findings: list[Finding]) -> dict[str, Any]:
    """``{"verdict", "findings"}``."""
    return {"verdict": verdict(findings), "findings": [f.to_json() for f in findings]}
