"""The values ``sweeper_interval_seconds`` accepts (``schedules.interval_cron``), read through DBOS's
own cron library, and ``mailnode serve`` refusing the others before anything starts."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from croniter import croniter

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.schedules import interval_cron
from tests.support.served import MAILNODE, Served, served_env


@pytest.mark.parametrize(("seconds", "cron"), [
    (1, "*/1 * * * * *"), (2, "*/2 * * * * *"), (15, "*/15 * * * * *"), (30, "*/30 * * * * *"),
    (60, "0 */1 * * * *"), (300, "0 */5 * * * *"), (600, "0 */10 * * * *"), (1800, "0 */30 * * * *"),
    (3600, "0 0 * * * *"),
])
def test_an_interval_that_divides_the_minute_or_the_hour_is_a_schedule(seconds: int, cron: str) -> None:
    assert interval_cron(seconds, "sweeper_interval_seconds") == cron
    # Read as DBOS reads it (seconds first): it fires every ``seconds``, evenly, across an hour boundary.
    start = datetime(2026, 3, 10, 7, 59, tzinfo=UTC)
    it = croniter(cron, start, second_at_beginning=True)
    fires = [it.get_next(datetime) for _ in range(4)]
    assert [b - a for a, b in pairwise(fires)] == [timedelta(seconds=seconds)] * 3


def test_the_default_interval_is_a_schedule() -> None:
    assert interval_cron(budgets.SWEEPER_INTERVAL_SECONDS, "sweeper_interval_seconds") == "0 */10 * * * *"


@pytest.mark.parametrize("seconds", [0, -5, 7, 45, 90, 61, 420, 3000, 3601, 7200, 86_400])
def test_an_interval_that_cannot_fire_evenly_is_refused(seconds: int) -> None:
    with pytest.raises(MailnodeError) as refused:
        interval_cron(seconds, "sweeper_interval_seconds")
    assert refused.value.code == "E_SETTING_MALFORMED" and refused.value.status == 422
    assert refused.value.detail == {"setting": "sweeper_interval_seconds", "value": seconds}
    assert "600" in refused.value.fix


@pytest.mark.slow
def test_serve_refuses_an_interval_it_cannot_schedule_before_anything_starts(tmp_path: Path, database_url: str) -> None:
    node = Served(tmp_path / "node", served_env(database_url))
    r = subprocess.run([*MAILNODE, "serve", "--data-dir", str(node.data_dir), "--http", f"127.0.0.1:{node.http}",
                        "--smtp", f"127.0.0.1:{node.smtp}"],
                       env={**node.env, "MAILNODE_SWEEPER_INTERVAL_SECONDS": "45"},
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 1
    assert "E_SETTING_MALFORMED" in r.stderr and "sweeper_interval_seconds = 45" in r.stderr
