"""Intervals as DBOS crons: the one rule every schedule setting of the node is checked by.

DBOS's scheduler reads six-field crons, seconds first (spec/dbos.md). An interval becomes a schedule only
when it fires evenly: 1..59 seconds dividing 60, or whole minutes dividing 60 (60 s .. 3600 s; 3600 is
hourly, on the hour). Anything else is refused, because a cron that cannot keep an even interval would run
unevenly and an impossible one kills DBOS's scheduler thread; ``mailnode serve`` asks before anything starts.
"""

from __future__ import annotations

from mailnode.errors import invalid


def interval_cron(seconds: int, setting: str) -> str:
    """The six-field cron firing every ``seconds`` (see the module docstring) for the setting named ``setting``.

    Raises ``E_SETTING_MALFORMED`` (422, ``detail = {"setting": setting, "value": seconds}``) when the
    interval cannot fire evenly.
    """
    if 1 <= seconds <= 59 and 60 % seconds == 0:
        return f"*/{seconds} * * * * *"
    minutes, rest = divmod(seconds, 60)
    if rest == 0 and minutes == 60:
        return "0 0 * * * *"
    if rest == 0 and 1 <= minutes <= 59 and 60 % minutes == 0:
        return f"0 */{minutes} * * * *"
    raise invalid("E_SETTING_MALFORMED", f"{setting} = {seconds} cannot be a schedule.",
                  "Schedules fire every N seconds or every N minutes, where N divides 60 (up to hourly, 3600).",
                  f"Set MAILNODE_{setting.upper()} to e.g. 5, 30, 60, 300 or 600.", setting=setting,
                  value=seconds)
