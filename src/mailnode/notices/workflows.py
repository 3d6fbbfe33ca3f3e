"""The notice sweep as a DBOS scheduled workflow (``server.apply_schedules``; ``notices.io``).

The schedule fires every ``settings.notice_sweep_interval_seconds`` (``schedules.interval_cron``, default
``budgets.NOTICE_SWEEP_INTERVAL_SECONDS``). Its body is one recorded step, so a resumed workflow does not
sweep twice for one tick; a second process running the same tick writes nothing new (the notices' dedup
key is unique).
"""

from __future__ import annotations

from datetime import datetime

from dbos import DBOS

from mailnode import runtime
from mailnode.notices import io as notices_io


def notice_sweep_once() -> int:
    """One notice pass over every organisation of the serving node; returns the notices written."""
    reports = notices_io.run_pass(runtime.current_node())
    return sum(len(r.written) for r in reports.values())


@DBOS.step()
def notice_sweep_step() -> int:
    """``notice_sweep_once`` as a recorded step."""
    return notice_sweep_once()


@DBOS.workflow()
@runtime.drained_on_stop
def scheduled_notice_sweep(scheduled_at: datetime, context: object) -> None:
    """The schedule's entry point (DBOS passes the scheduled time and a context)."""
    notice_sweep_step()
