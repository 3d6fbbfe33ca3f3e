"""Reads of many approvals at once, for pages that list subjects beside what their approvals still need.

``standings(conn, approval_ids)`` answers, for each approval, its frozen stages and every decision recorded
on it (who, approve or deny, when, withdrawn or not), in two statements whatever the number of approvals.
``still_needed`` (pure) says how many more standing approvals each stage needs, the same count
``governance.approvals`` completes on (distinct standing ``approve`` decisions per stage). Nothing here
writes or decides; deciding is ``governance.approvals.decide``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from mailnode.governance.policy import Stage
from mailnode.schema.governance import approval_decisions, approval_stages


@dataclass(frozen=True)
class Decision:
    """One recorded decision: the decider's id, ``approve`` or ``deny``, when (UTC), and when withdrawn."""

    decider_id: str
    decision: str
    stage_ordinal: int
    decided_at: datetime
    withdrawn_at: datetime | None


@dataclass(frozen=True)
class Standing:
    """An approval's stages (by ordinal) and its decisions (oldest first)."""

    stages: tuple[Stage, ...]
    decisions: tuple[Decision, ...]

    def approved_by(self) -> tuple[str, ...]:
        """The deciders whose approval stands (not withdrawn), oldest first."""
        return tuple(d.decider_id for d in self.decisions if d.decision == "approve" and d.withdrawn_at is None)

    def denied_by(self) -> tuple[str, ...]:
        """The deciders who denied, oldest first."""
        return tuple(d.decider_id for d in self.decisions if d.decision == "deny")

    def decided_by(self, principal_id: str) -> bool:
        """Whether ``principal_id`` has decided (a withdrawn decision still counts, as in ``approvals``)."""
        return any(d.decider_id == principal_id for d in self.decisions)


def still_needed(standing: Standing) -> int:
    """How many more standing approvals complete the approval: the sum over its stages of the stage's count
    less its standing approvals, never below zero per stage. Pure."""
    counts: dict[int, int] = {}
    for d in standing.decisions:
        if d.decision == "approve" and d.withdrawn_at is None:
            counts[d.stage_ordinal] = counts.get(d.stage_ordinal, 0) + 1
    return sum(max(0, s.count - counts.get(s.ordinal, 0)) for s in standing.stages)


def standings(conn: Connection, approval_ids: list[str]) -> dict[str, Standing]:
    """The standing of each approval in ``approval_ids`` (two statements; none when the list is empty)."""
    if not approval_ids:
        return {}
    ids = sorted(set(approval_ids))
    stages: dict[str, list[Stage]] = {a: [] for a in ids}
    decisions: dict[str, list[Decision]] = {a: [] for a in ids}
    st = approval_stages.c
    for r in conn.execute(select(approval_stages).where(st.approval_id.in_(ids))
                          .order_by(st.approval_id, st.ordinal)).all():
        stages[r.approval_id].append(Stage(r.ordinal, r.required_count, r.team_id))
    d = approval_decisions.c
    for r in conn.execute(select(approval_decisions).where(d.approval_id.in_(ids))
                          .order_by(d.approval_id, d.decided_at, d.id)).all():
        decisions[r.approval_id].append(Decision(r.decider_id, r.decision, r.stage_ordinal, r.decided_at,
                                                 r.withdrawn_at))
    return {a: Standing(tuple(stages[a]), tuple(decisions[a])) for a in ids}
