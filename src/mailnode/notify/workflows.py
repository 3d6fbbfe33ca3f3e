"""The sweeper's DBOS schedule: one pass every ``settings.sweeper_interval_seconds`` (default 10 minutes).

``server.apply_schedules`` registers ``scheduled_sweeper`` with ``sweeper_cron``. The pass runs as a
recorded step, so a resumed workflow does not sweep twice for one tick; several processes sharing one
PostgreSQL may run passes concurrently, which the sweeper's guarded writes and leases make safe.
"""

from __future__ import annotations

from datetime import datetime

from dbos import DBOS

from mailnode import runtime
from mailnode.errors import invalid
from mailnode.notify import sweeper


def sweeper_cron(seconds: int) -> str:
    """A six-field cron (seconds first) firing every ``seconds``: 1..59 seconds dividing 60, or whole minutes
    dividing 60 (60 s .. 3600 s, so 3600 is hourly, on the hour).

    Raises ``E_SETTING_MALFORMED`` (422) otherwise: a cron that cannot keep an even interval would sweep
    unevenly, and an impossible one kills DBOS's scheduler thread (spec/dbos.md).
    """
    if 1 <= seconds <= 59 and 60 % seconds == 0:
        return f"*/{seconds} * * * * *"
    minutes, rest = divmod(seconds, 60)
    if rest == 0 and minutes == 60:
        return "0 0 * * * *"
    if rest == 0 and 1 <= minutes <= 59 and 60 % minutes == 0:
        return f"0 */{minutes} * * * *"
    raise invalid("E_SETTING_MALFORMED", f"sweeper_interval_seconds = {seconds} cannot be a schedule.",
                  "The sweeper fires every N seconds or every N minutes, where N divides 60 (up to hourly, 3600).",
                  "Set sweeper_interval_seconds to e.g. 30, 60, 300 or 600.", setting="sweeper_interval_seconds",
                  value=seconds)


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
def scheduled_sweeper(scheduled_at: datetime, context: object) -> None:
    """The schedule's entry point (DBOS passes the scheduled time and a context)."""
    sweeper_step()
