"""The sweeper's DBOS schedule: one pass every ``settings.sweeper_interval_seconds`` (default 10 minutes).

``server.apply_schedules`` registers ``scheduled_sweeper`` every ``sweeper_interval_seconds``
(``schedules.interval_cron``). The pass runs as a recorded step, so a resumed workflow does not sweep twice for one
tick; several processes sharing one PostgreSQL may run passes concurrently, which the sweeper's guarded writes and
leases make safe.
"""

from __future__ import annotations

from datetime import datetime

from dbos import DBOS

from mailnode import runtime
from mailnode.outbound import sweeper


def sweep_pass_once() -> int:
    """One sweeper pass with the configured transport; returns how many rows it decided."""
    node = runtime.current_node()
    report = sweeper.run_pass(node, executor_id=runtime.executor_id(node))
    return sum(report.verdicts.values())


@DBOS.step()
def sweeper_step() -> int:
    """``sweep_pass_once`` as a recorded step."""
    return sweep_pass_once()


@DBOS.workflow()
@runtime.drained_on_stop
def scheduled_sweeper(scheduled_at: datetime, context: object) -> None:
    """The schedule's entry point (DBOS passes the scheduled time and a context)."""
    sweeper_step()
