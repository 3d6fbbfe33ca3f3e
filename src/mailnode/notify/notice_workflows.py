"""The notice sweep as a DBOS scheduled workflow (``server.apply_schedules``; ``notify.notices_io``).

The schedule fires every ``settings.notice_sweep_interval_seconds`` (``notice_sweep_cron``, default
``budgets.NOTICE_SWEEP_INTERVAL_SECONDS``). Its body is one recorded step, so a resumed workflow does not
sweep twice for one tick; a second process running the same tick writes nothing new (the notices' dedup
key is unique).
"""

from __future__ import annotations

from datetime import datetime

from dbos import DBOS

from mailnode import runtime
from mailnode.errors import MailnodeError, invalid
from mailnode.notify import notices_io
from mailnode.notify import workflows as notify_workflows

#: The setting the schedule reads (named in the refusal).
SETTING = "notice_sweep_interval_seconds"


def notice_sweep_cron(seconds: int) -> str:
    """A six-field cron firing every ``seconds``, by the sweeper's rule (``notify.workflows.sweeper_cron``:
    1..59 seconds dividing 60, or whole minutes dividing 60 up to hourly), so both settings accept the same
    values.

    Raises ``E_SETTING_MALFORMED`` (422) naming ``notice_sweep_interval_seconds`` otherwise: an impossible
    cron kills DBOS's scheduler thread (spec/dbos.md), so ``mailnode serve`` asks this before anything starts.
    """
    try:
        return notify_workflows.sweeper_cron(seconds)
    except MailnodeError as exc:
        raise invalid("E_SETTING_MALFORMED", f"{SETTING} = {seconds} cannot be a schedule.", exc.why,
                      f"Set MAILNODE_{SETTING.upper()} to e.g. 10, 30, 60 or 300.", setting=SETTING,
                      value=seconds) from exc


def notice_sweep_once() -> int:
    """One notice pass over every organisation of the serving node; returns the notices written."""
    reports = notices_io.run_pass(runtime.current_node())
    return sum(len(r.written) for r in reports.values())


@DBOS.step()
def notice_sweep_step() -> int:
    """``notice_sweep_once`` as a recorded step."""
    return notice_sweep_once()


@DBOS.workflow()
def scheduled_notice_sweep(scheduled_at: datetime, context: object) -> None:
    """The schedule's entry point (DBOS passes the scheduled time and a context)."""
    notice_sweep_step()
