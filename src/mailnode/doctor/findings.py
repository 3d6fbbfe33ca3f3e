"""The doctor's data: ``Finding``, ``Severity``, the verdict and the report shape (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal


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


#: What a finding, or one item of it, is about; ``doctor.visibility`` maps each kind to the relation the
#: route owning that object checks. ``node``: the process and its storage (any token holder);
#: ``organisation``: the organisation as a whole (administrators); ``mailboxes``: every mailbox's mail at
#: once, as the rate breakers gate it (administrators and whoever holds a relation on some mailbox);
#: ``mailbox``/``butler``/``user``/``application``/``domain``: one object, by id (or domain name).
ConcernKind = Literal["node", "organisation", "mailboxes", "mailbox", "butler", "user", "application", "domain"]


@dataclass(frozen=True)
class Concern:
    """The object a finding or one of its items is about: a kind and, for one object, its id."""

    kind: ConcernKind
    id: str = ""


#: The process and its storage: shown to every token holder.
NODE = Concern("node")
#: The organisation as a whole: shown to administrators. A finding's default (closed, not open).
ORGANISATION = Concern("organisation")


@dataclass(frozen=True)
class Item:
    """One object a finding lists: what it concerns, its words in ``detail``, its JSON under ``data[key]``,
    and its words in ``fix`` (a route that acts on it), if any."""

    concerns: Concern
    text: str
    data: dict[str, Any]
    key: str = "items"
    fix: str = ""


@dataclass(frozen=True)
class Finding:
    """One observation. ``ok`` False means the finding fails at its ``severity``.

    ``concerns`` is what ``detail``, ``fix`` and ``data`` are about as a whole (default: the organisation,
    administrators only). A finding that lists objects gives them as ``items`` (their data also under
    ``data[item.key]``); ``lead`` and ``fix_lead`` are the words before the items' own, so a viewer who may
    see only some items gets the same sentence over those (``doctor.visibility.view``). Without a
    ``fix_lead``, a listed finding's ``fix`` must name no object: it is shown with any item.
    """

    name: str
    severity: Severity
    ok: bool
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    concerns: Concern = ORGANISATION
    items: tuple[Item, ...] = ()
    lead: str = ""
    fix_lead: str = ""

    def to_json(self) -> dict[str, Any]:
        """The API shape: ``{"name", "severity", "ok", "detail", "fix", "data"}``."""
        return {"name": self.name, "severity": self.severity.value, "ok": self.ok, "detail": self.detail,
                "fix": self.fix, "data": self.data}


def listing_detail(lead: str, items: tuple[Item, ...] | list[Item]) -> str:
    """``lead`` followed by the items' words, ``"; "``-separated (the one way a listed finding reads)."""
    return lead + "; ".join(i.text for i in items if i.text)


def listing_fix(fix_lead: str, items: tuple[Item, ...] | list[Item]) -> str:
    """``fix_lead`` followed by the items' own fixes, comma-separated, and a full stop ("" when none)."""
    fixes = [i.fix for i in items if i.fix]
    return fix_lead + ", ".join(fixes) + "." if fixes else ""


def listed(name: str, severity: Severity, ok: bool, items: list[Item], *, lead: str = "", fix_lead: str = "",
           data: dict[str, Any] | None = None, concerns: Concern = ORGANISATION) -> Finding:
    """A finding that lists objects: ``detail`` is ``listing_detail(lead, items)``, ``fix`` is
    ``listing_fix(fix_lead, items)``, ``data`` is ``data`` plus each item's data under its ``key``."""
    out: dict[str, Any] = dict(data or {})
    for item in items:
        out.setdefault(item.key, []).append(item.data)
    return Finding(name, severity, ok, listing_detail(lead, items), listing_fix(fix_lead, items), out, concerns,
                   tuple(items), lead, fix_lead)


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
