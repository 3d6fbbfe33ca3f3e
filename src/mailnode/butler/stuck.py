"""Which live Butler runs are stuck: nothing will ever move them, or they outlived the longest their own
program may take (issue 14 item 4; doctor's ``butler_runs_stuck``).

A run is live (``running``, ``awaiting_release``) while its DBOS workflow walks it. It is stuck when:

- ``workflow_missing``: DBOS holds no workflow under the run's id (deleted, or the system database was
  replaced), so nothing will walk it again;
- ``workflow_ended``: the workflow ended (``ERROR``, ``CANCELLED``, ``MAX_RECOVERY_ATTEMPTS_EXCEEDED``,
  ``SUCCESS``, or a status this module has never seen: fails closed) while the run's record still waits,
  as a graceful stop left runs before issue 14;
- ``past_deadline``: the workflow is live (``PENDING``, ``ENQUEUED``, ``DELAYED``) or unread, and the run has
  been in its state longer than it may be. A parked run may wait ``Settings.butler_release_timeout_seconds``
  for its release (then the gate times out and the run ends); a walking run may sleep at most its
  program's ``wait_bound_seconds`` (every ``wait`` summed, each multiplied by its enclosing loops'
  ``maxItems``: never under, often over). Both get ``budgets.BUTLER_RUN_STUCK_GRACE_SECONDS`` more. A
  PENDING workflow past its deadline is one no executor runs: its process's executor id is gone (a host
  renamed, a process retired) or it was started by another mailnode version (docs/operations.md).

``decide`` is pure; ``butler_checks.butler_runs_stuck`` reads the facts and reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from mailnode import budgets
from mailnode.butler.ast import Node, WaitNode
from mailnode.butler.cost import multipliers

#: DBOS workflow statuses under which the workflow still runs, or will once an executor picks it up.
LIVE_WORKFLOW_STATUSES = frozenset({"PENDING", "ENQUEUED", "DELAYED"})

_CAP = budgets.JSON_SAFE_INTEGER_MAX


def wait_bound_seconds(nodes: Sequence[Node]) -> int:
    """The most a run of ``nodes`` (a checked program: unique ids, no cycles) can sleep in ``wait`` nodes.

    Every ``wait`` node's ``seconds`` times the ``maxItems`` of every loop whose body reaches it, summed
    over all nodes (branches are added, not maxed: an over-estimate), saturating at
    ``budgets.JSON_SAFE_INTEGER_MAX`` seconds.
    """
    mult = multipliers(nodes)
    total = 0
    for n in nodes:
        if isinstance(n, WaitNode):
            total = min(total + min(int(n.seconds) * mult[n.id], _CAP), _CAP)
    return total


@dataclass(frozen=True)
class RunFacts:
    """A live run as the check reads it. ``wait_bound_seconds`` is None when its program does not check
    (the engine refuses such a run at once, so it gets no time beyond the grace)."""

    run_id: str
    butler_id: str
    state: str
    state_at: datetime
    wait_bound_seconds: int | None


@dataclass(frozen=True)
class WorkflowFacts:
    """The run's DBOS workflow: ``observed`` False when the system database could not be read; then
    ``status`` means nothing. ``status`` None (observed) means DBOS holds no such workflow."""

    observed: bool
    status: str | None = None


@dataclass(frozen=True)
class StuckRun:
    """One stuck run: why, the workflow's status (None: missing or unread), how long it has been in its
    state (seconds, at ``now``) and the deadline it had (UTC)."""

    run_id: str
    butler_id: str
    state: str
    why: str
    workflow_status: str | None
    age_seconds: int
    state_at: datetime
    deadline: datetime

    def to_json(self) -> dict[str, Any]:
        """The finding's shape: ISO 8601 UTC times, whole seconds."""
        return {"run_id": self.run_id, "butler_id": self.butler_id, "state": self.state, "why": self.why,
                "workflow_status": self.workflow_status, "age_seconds": self.age_seconds,
                "state_at": self.state_at.isoformat(), "deadline": self.deadline.isoformat()}


def deadline(run: RunFacts, release_timeout_seconds: float) -> datetime:
    """When the run stops being able to be legitimately in its state (see the module docstring), UTC."""
    if run.state == "awaiting_release":
        allowed = float(release_timeout_seconds)
    else:
        allowed = float(run.wait_bound_seconds or 0)
    try:
        return run.state_at + timedelta(seconds=allowed + budgets.BUTLER_RUN_STUCK_GRACE_SECONDS)
    except OverflowError:
        # A saturated wait bound (or a year-long release timeout near year 9999): never due.
        return datetime.max.replace(tzinfo=UTC)


def decide(run: RunFacts, workflow: WorkflowFacts, now: datetime, release_timeout_seconds: float) -> StuckRun | None:
    """The run is stuck (a ``StuckRun``) or not (None); see the module docstring for the three reasons."""
    due = deadline(run, release_timeout_seconds)
    age = max(0, int((now - run.state_at).total_seconds()))

    def stuck(why: str) -> StuckRun:
        return StuckRun(run.run_id, run.butler_id, run.state, why, workflow.status if workflow.observed else None,
                        age, run.state_at, due)

    if workflow.observed and workflow.status is None:
        return stuck("workflow_missing")
    if workflow.observed and workflow.status not in LIVE_WORKFLOW_STATUSES:
        return stuck("workflow_ended")
    if now > due:
        return stuck("past_deadline")
    return None
