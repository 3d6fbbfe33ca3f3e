"""Fixtures for webhooks on a real ``mailnode serve``: a real aiosmtpd smarthost, local HTTP receivers, and a
node whose webhook pass runs every second with a short retry schedule.

``Receiver`` is a small HTTP server on a loopback address that records every request and answers as the
test tells it (a status, a body of some size, a ``Location``). The node allows ``127.0.0.2`` only
(``MAILNODE_WEBHOOK_ALLOW_HOSTS``), so a receiver there is reachable and one on ``127.0.0.1`` is not.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.outbound.db.conftest import Sink, running_sink
from tests.support.served import Served, served_env

#: The retry schedule the node runs with, seconds: three retries a second apart (four attempts in all).
RETRY_SCHEDULE = "1,1,1"
#: The only host the node may call although it is loopback.
ALLOWED_HOST = "127.0.0.2"
#: How long a test waits for something the node does on its own schedule.
DEADLINE_SECONDS = 60.0


@dataclass
class Seen:
    """One request a receiver took."""

    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    """How a receiver answers: status, body bytes, extra headers."""

    status: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)


class Receiver:
    """A threaded HTTP server on ``host`` recording requests and answering with ``answer``."""

    def __init__(self, host: str) -> None:
        self.seen: list[Seen] = []
        self.answer = Answer()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                receiver.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                answer = receiver.answer
                self.send_response(answer.status)
                for k, v in answer.headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(answer.body)))
                self.end_headers()
                try:
                    self.wfile.write(answer.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the node stopped reading at its cap: what the size test wants

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}/hooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers() -> Iterator[Callable[[str], Receiver]]:
    """A maker of receivers on a loopback host, all closed at the end."""
    made: list[Receiver] = []

    def make(host: str = ALLOWED_HOST) -> Receiver:
        r = Receiver(host)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


@pytest.fixture
def smarthost() -> Iterator[Sink]:
    """A real aiosmtpd smarthost on loopback."""
    with running_sink() as sink:
        yield sink


@pytest.fixture
def node(tmp_path: Path, database_url: str, smarthost: Sink) -> Iterator[Served]:
    """A started node sending through the smarthost, its webhook pass every second."""
    env = served_env(database_url, MAILNODE_TRANSPORT="smtp", MAILNODE_SMTP_RELAY=f"127.0.0.1:{smarthost.port}",
                     MAILNODE_SMTP_TLS="none", MAILNODE_DISPATCH_INTERVAL_SECONDS="1",
                     MAILNODE_SWEEPER_INTERVAL_SECONDS="1", MAILNODE_NOTICE_SWEEP_INTERVAL_SECONDS="1",
                     MAILNODE_WEBHOOK_PASS_INTERVAL_SECONDS="1", MAILNODE_WEBHOOK_ALLOW_HOSTS=ALLOWED_HOST,
                     MAILNODE_WEBHOOK_RETRY_SCHEDULE_SECONDS=RETRY_SCHEDULE)
    s = Served(tmp_path / "node", env)
    s.start()
    yield s
    s.stop()


def wait_for(what: str, probe: Callable[[], Any], seconds: float = DEADLINE_SECONDS) -> Any:
    """Call ``probe`` until it answers something truthy; fail after ``seconds`` with the last answer."""
    deadline = time.monotonic() + seconds
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds} s (last: {last!r})")


@dataclass
class As:
    """HTTP calls to the node with one token."""

    base: str
    token: str

    def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """The raw answer."""
        return httpx.request(method, f"{self.base}{path}", headers={"Authorization": f"Bearer {self.token}"},
                             timeout=30, **kw)

    def ok(self, method: str, path: str, **kw: Any) -> Any:
        """The JSON of a 2xx answer (anything else fails the test)."""
        r = self.call(method, path, **kw)
        assert r.status_code < 300, r.text
        return r.json() if r.content else None

    def deliveries(self, endpoint_id: str) -> list[dict[str, Any]]:
        """Every delivery of the endpoint (first page), newest first."""
        return list(self.ok("GET", f"/api/webhooks/endpoints/{endpoint_id}/deliveries")["deliveries"])


def application(node: Served, name: str) -> As:
    """A new application granted ``send.propose`` on the node's mailbox, as an ``As``."""
    admin = As(f"http://127.0.0.1:{node.http}", node.installed["token"])
    made = admin.ok("POST", "/api/apps", json={"name": name})
    admin.ok("POST", "/api/access", json={"subject_id": made["application"]["id"], "relation": "send.propose",
                                          "object_id": node.installed["mailbox_id"]})
    return As(admin.base, made["token"])


def administrator(node: Served) -> As:
    """The installed administrator, as an ``As``."""
    return As(f"http://127.0.0.1:{node.http}", node.installed["token"])


def send_deferrable(app: As, node: Served, key: str, to: str = "researcher@remote.test") -> str:
    """``POST /api/mail`` deferrable mail from the node's mailbox; the mail id."""
    body = {"mailbox_id": node.installed["mailbox_id"], "class": "deferrable", "to": [to],
            "subject": "Your upload stopped", "text": "The upload of run 7 stopped arriving.", "idempotency_key": key}
    return str(app.ok("POST", "/api/mail", json=body)["mail"]["id"])
