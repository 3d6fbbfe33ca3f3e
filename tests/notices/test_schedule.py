"""The notice sweep's interval is a setting (``notice_sweep_interval_seconds``): ``mailnode serve`` refuses an
impossible one before anything starts, and schedules the sweep at the one given."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOSClient

from mailnode import budgets, runtime
from mailnode.config import Settings, load_settings
from mailnode.errors import MailnodeError
from mailnode.node import Node
from mailnode.notices import io as notices_io
from mailnode.server import run_server
from tests.support.served import Served, served_env


def test_the_setting_defaults_to_the_budget_and_is_read_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(data_dir=tmp_path).notice_sweep_interval_seconds == budgets.NOTICE_SWEEP_INTERVAL_SECONDS
    monkeypatch.setenv("MAILNODE_NOTICE_SWEEP_INTERVAL_SECONDS", "300")
    assert load_settings(tmp_path).notice_sweep_interval_seconds == 300


@pytest.mark.parametrize("seconds", [0, 7, 45, 90, 7200])
def test_serve_refuses_an_interval_that_cannot_be_a_schedule_before_anything_starts(
        tmp_path: Path, seconds: int) -> None:
    settings = Settings(data_dir=tmp_path / "node", notice_sweep_interval_seconds=seconds)
    with pytest.raises(MailnodeError) as refused:
        run_server(settings)
    assert refused.value.code == "E_SETTING_MALFORMED"
    assert refused.value.detail == {"setting": "notice_sweep_interval_seconds", "value": seconds}
    assert "MAILNODE_NOTICE_SWEEP_INTERVAL_SECONDS" in refused.value.fix
    assert not (tmp_path / "node").exists(), "nothing was opened"


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[Served]:
    s = Served(tmp_path / "node", served_env(database_url))
    yield s
    s.stop()


@pytest.mark.slow
def test_serve_sweeps_notices_at_the_configured_interval(served: Served, tmp_path: Path, database_url: str) -> None:
    served.start(MAILNODE_NOTICE_SWEEP_INTERVAL_SECONDS="2")
    org_id = served.installed["org_id"]
    others = []
    for email in ("blake@example.test", "casey@example.test"):
        user = served.call("POST", "/api/users", json={"email": email})["user"]
        served.call("POST", "/api/access", json={"subject_id": user["id"], "relation": "org.admin",
                                                  "object_id": org_id})
        others.append(user["id"])
    served.call("POST", "/api/domain-pauses", json={"domain": "example.test", "reason": "a leaked key"})

    node = Node.open(Settings(data_dir=tmp_path / "node", database_url=database_url))
    try:
        client = DBOSClient(system_database_url=runtime.system_database_url(node))
        try:
            schedule = client.get_schedule("notice-sweep")
        finally:
            client.destroy()
        assert schedule is not None and schedule["schedule"] == "*/2 * * * * *"
        # The two other administrators are asked to decide, by the served node's own sweep.
        asked: list[Any] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with node.read() as conn:
                asked = [n for n in notices_io.notices_of(conn, org_id, ["approval_asked"]) if n.send_id]
            if len(asked) == 2:
                break
            time.sleep(0.5)
        assert sorted(n.recipient_user_id for n in asked) == sorted(others)
    finally:
        node.close()
