"""A served node hands a send over when it becomes movable, without waiting for the sweep's interval:
right after the seal with a hold window of 0, and when a hold window ends (a durable DBOS sleep)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.outbound.db.conftest import free_port
from tests.outbound.db.test_kill_during_dispatch import MAILNODE


def test_seal_wakes_the_dispatcher(node: Any, installed: Any, sink: Any, settings: Any, tmp_path: Path) -> None:
    http = free_port()
    env = {**os.environ, "MAILNODE_DATA_DIR": str(settings.data_dir), "MAILNODE_DATABASE_URL": settings.database_url,
           "MAILNODE_TRANSPORT": "smtp", "MAILNODE_SMTP_RELAY": f"127.0.0.1:{sink.port}", "MAILNODE_SMTP_TLS": "none",
           "MAILNODE_HTTP": f"127.0.0.1:{http}", "MAILNODE_SMTP": f"127.0.0.1:{free_port()}",
           # Sweeps every 30 s: a hand-over within a few seconds comes from the wake-up.
           "MAILNODE_DISPATCH_INTERVAL_SECONDS": "30"}
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([MAILNODE, "serve"], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{http}"
    auth = {"Authorization": f"Bearer {installed.token}"}
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/api/health").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        httpx.patch(f"{base}/api/mailboxes/{installed.mailbox_id}", json={"hold_window_seconds": 0},
                    headers=auth).raise_for_status()
        for hold, address in ((0, "now@remote.test"), (2, "later@remote.test")):
            if hold:
                httpx.patch(f"{base}/api/mailboxes/{installed.mailbox_id}", json={"hold_window_seconds": hold},
                            headers=auth).raise_for_status()
            sealed_at = time.monotonic()
            r = httpx.post(f"{base}/api/sends", json={"mailbox_id": installed.mailbox_id, "to": [address],
                                                      "subject": "Hi", "body": "x"}, headers=auth)
            assert r.status_code == 201, r.text
            while time.monotonic() < sealed_at + 10 and not any(address in t.rcpt_tos for t in sink.handler.received):
                time.sleep(0.05)
            took = time.monotonic() - sealed_at
            assert any(address in t.rcpt_tos for t in sink.handler.received), log.read_text()[-3000:]
            assert hold <= took < hold + 5, took
            send = httpx.get(f"{base}/api/sends/{r.json()['send']['id']}", headers=auth).json()["send"]
            deadline = time.monotonic() + 5
            while send["state"] != "handed_over" and time.monotonic() < deadline:
                time.sleep(0.05)
                send = httpx.get(f"{base}/api/sends/{send['id']}", headers=auth).json()["send"]
            assert send["state"] == "handed_over"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
