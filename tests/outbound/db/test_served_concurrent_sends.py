"""The issue's reproducer of the audit race (issue 14 item 10), against a real ``mailnode serve``: 200
concurrent ``POST /api/sends`` on one node with its own dispatch running. No request answers 5xx, every
send reaches the smarthost once and reads ``handed_over``, and ``mailnode audit verify`` passes."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller

from tests.support.served import MAILNODE, Served, served_env

from .conftest import SinkHandler, free_port

SENDS = 200
CLIENTS = 20


@pytest.fixture
def smarthost() -> Iterator[tuple[SinkHandler, int]]:
    handler = SinkHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    yield handler, port
    controller.stop()


@pytest.fixture
def served(tmp_path: Path, database_url: str, smarthost: tuple[SinkHandler, int]) -> Iterator[Served]:
    env = served_env(database_url, MAILNODE_DISPATCH_INTERVAL_SECONDS="1", MAILNODE_TRANSPORT="smtp",
                     MAILNODE_SMTP_RELAY=f"127.0.0.1:{smarthost[1]}", MAILNODE_SMTP_TLS="none")
    s = Served(tmp_path / "node", env)
    yield s
    s.stop()


def test_two_hundred_concurrent_sends_all_answer_and_are_all_handed_over(
        served: Served, smarthost: tuple[SinkHandler, int]) -> None:
    handler, _port = smarthost
    served.start()
    mailbox = served.installed["mailbox_id"]
    served.call("PATCH", f"/api/mailboxes/{mailbox}", json={"hold_window_seconds": 0})
    url = f"http://127.0.0.1:{served.http}/api/sends"

    def post(n: int) -> Any:
        body = {"mailbox_id": mailbox, "to": [f"r{n}@remote.test"], "subject": f"Hello {n}", "body": "Hi"}
        return httpx.post(url, json=body, headers=served.headers, timeout=120)

    with ThreadPoolExecutor(CLIENTS) as pool:
        answers = list(pool.map(post, range(SENDS)))
    assert sorted({r.status_code for r in answers}) == [201], [r.text for r in answers if r.status_code != 201][:3]
    ids = {r.json()["send"]["id"] for r in answers}
    deadline = time.monotonic() + 180
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        states = {}
        cursor = None
        while True:
            page = served.call("GET", "/api/sends", params={"limit": 200, **({"cursor": cursor} if cursor else {})})
            states.update({s["id"]: s["state"] for s in page["sends"]})
            cursor = page.get("next_cursor")
            if not cursor:
                break
        if set(states) == ids and set(states.values()) == {"handed_over"}:
            break
        time.sleep(0.5)
    assert Counter(states.values()) == {"handed_over": SENDS}
    assert len(handler.received) == SENDS
    done = subprocess.run([*MAILNODE, "audit", "verify", "--data-dir", str(served.data_dir), "--json"],
                          env=served.env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
