"""``mailnode serve`` as a real process: SMTP in, API out, and materialisation that survives kill -9."""

from __future__ import annotations

import json
import os
import signal
import smtplib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.corpus import CORPUS
from tests.ingress_db.conftest import free_port

pytestmark = pytest.mark.slow

MAILNODE = [sys.executable, "-m", "mailnode.cli"]


def _init(data_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run([*MAILNODE, "init", "--data-dir", str(data_dir), "--org", "Example", "--domain",
                          "example.test", "--admin-email", "alex@example.test", "--json"],
                         env=env, check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout))


class Served:
    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.data_dir, self.env = data_dir, env
        self.http, self.smtp = free_port(), free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, **extra_env: str) -> "Served":
        env = {**self.env, **extra_env}
        self.log = open(self.data_dir / f"serve-{time.time_ns()}.log", "wb")
        self.proc = subprocess.Popen([*MAILNODE, "serve", "--data-dir", str(self.data_dir),
                                      "--http", f"127.0.0.1:{self.http}", "--smtp", f"127.0.0.1:{self.smtp}"],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.http}/api/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise AssertionError((self.data_dir / "serve.log").read_text(errors="replace"))
            time.sleep(0.2)
        raise AssertionError("mailnode serve did not answer within 60 s")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            return self.proc.wait(30)
        return self.proc.returncode


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILNODE_")}
    env.update({"MAILNODE_DATABASE_URL": database_url, "MAILNODE_MATERIALISE_SCAN_INTERVAL_SECONDS": "1"})
    data_dir = tmp_path / "node"
    installed = _init(data_dir, env)
    s = Served(data_dir, env)
    s.installed = installed  # type: ignore[attr-defined]
    yield s
    if s.proc is not None and s.proc.poll() is None:
        s.stop()


def _messages(s: Any) -> list[dict[str, Any]]:
    r = httpx.get(f"http://127.0.0.1:{s.http}/api/mailboxes/{s.installed['mailbox_id']}/messages",
                  headers={"Authorization": f"Bearer {s.installed['token']}"}, timeout=10)
    return list(r.json()["messages"])


def _wait_for(s: Any, count: int, seconds: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        msgs = _messages(s)
        if len(msgs) >= count:
            return msgs
        time.sleep(0.2)
    return _messages(s)


def test_serve_takes_smtp_and_answers_the_api_then_stops_on_sigterm(served: Any) -> None:
    served.start()
    raw = (CORPUS / "bounces" / "is-not-bounce-01.eml").read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("person@remote.test", ["support@example.test"], raw)
    msgs = _wait_for(served, 1)
    assert len(msgs) == 1 and msgs[0]["case_id"].startswith("cas_")
    assert served.stop() == 0


def test_kill_after_250_before_materialisation_then_restart_materialises_once(served: Any) -> None:
    served.start(MAILNODE_FAULT_MATERIALISE_DELAY_SECONDS="30")
    raw = b"From: a@remote.test\r\nTo: support@example.test\r\nSubject: survive\r\nMessage-ID: <k1@remote.test>\r\n\r\nhi\r\n"
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("a@remote.test", ["support@example.test"], raw)  # 250: the receipt is committed
    assert _messages(served) == []  # not materialised yet: the step is waiting
    served.kill9()
    served.start()
    msgs = _wait_for(served, 1)
    time.sleep(2.5)  # a second scan and the recovered workflow must not make a second message
    msgs = _messages(served)
    assert [m["subject"] for m in msgs] == ["survive"]


def test_a_receipt_whose_workflow_never_started_is_materialised_by_the_scan(served: Any) -> None:
    from mailnode.config import load_settings
    from mailnode.ingress import receipts, routing
    from mailnode.node import Node

    node = Node.open(load_settings(served.data_dir, database_url=served.env["MAILNODE_DATABASE_URL"]))
    with node.read() as conn:
        route = routing.resolve(conn, "support@example.test")
    assert route is not None
    receipts.accept(node, b"From: b@remote.test\r\nSubject: orphan\r\n\r\nx\r\n",
                    receipts.Envelope(mail_from="b@remote.test", routes=(route,), source="smtp"))
    node.close()
    served.start()
    msgs = _wait_for(served, 1)
    assert [m["subject"] for m in msgs] == ["orphan"]
