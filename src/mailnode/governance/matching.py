"""Stage satisfiability: can distinct people fill every approval slot? A bipartite matching (pure).

An approval has stages in ordinal order; stage ``i`` needs ``count`` distinct approvers, optionally all
members of one team. One person fills at most one slot across all stages (dual control rests on that).
``shortfall`` matches people to slots with augmenting paths (Kuhn's algorithm), stage by stage, and
returns the first stage that cannot be filled, or None. It is asked at publication (no actor known), at
request (the actor removed) and at withdrawal (everyone who already decided removed, remaining counts
only) (spec/outbound.md §6.3). No I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class StageLike(Protocol):
    """A stage: ``ordinal`` (1-based), ``count`` slots, optional ``team_id``."""

    @property
    def ordinal(self) -> int:
        """1-based position in the chain."""
        ...

    @property
    def count(self) -> int:
        """Distinct approvers the stage needs."""
        ...

    @property
    def team_id(self) -> str | None:
        """The team every approver of the stage must belong to, or None."""
        ...


@dataclass(frozen=True)
class Shortfall:
    """The first stage that cannot be filled.

    Attributes:
        ordinal: the stage (1-based).
        required: slots the stage needs.
        available: distinct people eligible for it (before other stages took any).
        short: slots left empty after the best matching.
        team_id: the team the stage names, or None.
    """

    ordinal: int
    required: int
    available: int
    short: int
    team_id: str | None

    def sentence(self) -> str:
        """One sentence for ``last_error`` and error messages."""
        who = f"members of team {self.team_id}" if self.team_id else "eligible people"
        return (f"Stage {self.ordinal} needs {self.required} distinct approvers but only "
                f"{self.required - self.short} can be found among {self.available} {who}.")

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        return {"ordinal": self.ordinal, "required": self.required, "available": self.available,
                "short": self.short, "team_id": self.team_id}


def candidates(stage: StageLike, eligible: frozenset[str], rosters: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """The people who may fill ``stage``: the eligible, intersected with its team's roster when it names
    one (a team missing from ``rosters`` has nobody: fail closed)."""
    if stage.team_id is None:
        return eligible
    return eligible & frozenset(rosters.get(stage.team_id, ()))


def shortfall(stages: Sequence[StageLike], eligible: Iterable[str],
              rosters: Mapping[str, Iterable[str]] | None = None) -> Shortfall | None:
    """The first stage (by ordinal) the people in ``eligible`` cannot fill, or None when all can be.

    Stages with ``count <= 0`` need nobody. ``rosters`` maps team id to member ids.
    """
    pool = frozenset(eligible)
    teams = rosters or {}
    slot_candidates: list[list[str]] = []
    owner_of: dict[str, int] = {}

    def augment(slot: int, seen: set[str]) -> bool:
        for person in slot_candidates[slot]:
            if person in seen:
                continue
            seen.add(person)
            holder = owner_of.get(person)
            if holder is None or augment(holder, seen):
                owner_of[person] = slot
                return True
        return False

    for stage in sorted(stages, key=lambda s: s.ordinal):
        if stage.count <= 0:
            continue
        people = sorted(candidates(stage, pool, teams))
        unfilled = 0
        for _ in range(stage.count):
            slot_candidates.append(people)
            if not augment(len(slot_candidates) - 1, set()):
                unfilled += 1
        if unfilled:
            return Shortfall(stage.ordinal, stage.count, len(people), unfilled, stage.team_id)
    return None
