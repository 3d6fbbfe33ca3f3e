"""Fixtures for transactional mail on a real ``mailnode serve`` whose transport is the local Resend server.

``emulator`` is ``tests.support.resend_emulator`` on the real clock (the served node's clock is real too),
``served`` a ``tests.support.served.Served`` over a fresh data directory on the test's database (SQLite
or PostgreSQL, ``MAILNODE_TEST_DB``) with ``transport = resend`` pointed at the emulator and the notify
sweeper's DBOS schedule firing every ``SWEEPER_SECONDS``. ``Client`` is an HTTP caller holding one token;
``app_token`` creates an application with ``mailnode app create`` on the node's data directory and
grants it ``send.propose`` on the mailbox with ``mailnode access grant``.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.resend_emulator import EmulatorConfig, ResendEmulator
from tests.support.served import MAILNODE, Served, served_env

#: The sweeper interval the served node runs with: the smallest the setting accepts (1..59 dividing 60).
SWEEPER_SECONDS = 1
#: How long a test waits for something the node does on its own schedule before it fails.
DEADLINE_SECONDS = 30.0

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], seconds: float = DEADLINE_SECONDS) -> T:
    """Call ``probe`` until it answers something other than None (or False); fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last is not None and last is not False:
            return last
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {seconds} s (last: {last!r})")


@dataclass
class Client:
    """HTTP calls to the served node with one bearer token (or none)."""

    base: str
    token: str | None

    def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """The raw answer (no status check)."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.request(method, f"{self.base}{path}", headers=headers, timeout=30, **kw)


def metric_samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus exposition text, parsed by ``prometheus_client``'s own parser:
    ``{(sample name, sorted labels): value}``."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.fixture
def emulator() -> Iterator[ResendEmulator]:
    """The local Resend server on the real clock."""
    emu = ResendEmulator(EmulatorConfig())
    emu.start()
    yield emu
    emu.stop()


@pytest.fixture
def served(tmp_path: Path, database_url: str, emulator: ResendEmulator) -> Iterator[Served]:
    """An initialised node (not started: call ``start()``) sending through the emulator."""
    env = served_env(database_url, MAILNODE_TRANSPORT="resend", MAILNODE_RESEND_BASE_URL=emulator.base_url,
                     MAILNODE_RESEND_API_KEY="re_test_full",
                     MAILNODE_SWEEPER_INTERVAL_SECONDS=str(SWEEPER_SECONDS))
    s = Served(tmp_path / "node", env)
    yield s
    s.stop()


def cli(served: Served, *args: str) -> subprocess.CompletedProcess[str]:
    """``mailnode ARGS --data-dir <the node's>`` in a subprocess with the node's environment."""
    return subprocess.run([*MAILNODE, *args, "--data-dir", str(served.data_dir)], check=False, env=served.env,
                          capture_output=True, text=True, timeout=60)


def app_token(served: Served, name: str = "research-pipeline") -> tuple[str, str]:
    """An application made with ``mailnode app create`` and granted ``send.propose`` on the mailbox
    with ``mailnode access grant``; ``(app id, token)``."""
    made = cli(served, "app", "create", name, "--json")
    assert made.returncode == 0, made.stderr
    out = json.loads(made.stdout)
    granted = cli(served, "access", "grant", "--subject", out["app_id"], "--relation", "send.propose",
                  "--mailbox", "support@example.test")
    assert granted.returncode == 0, granted.stderr
    return str(out["app_id"]), str(out["token"])


def mail(served: Served, mail_class: str, key: str, to: str = "researcher@remote.test") -> dict[str, Any]:
    """A ``POST /api/mail`` body from the node's mailbox."""
    return {"mailbox_id": served.installed["mailbox_id"], "class": mail_class, "to": [to],
            "subject": "Your upload stopped", "text": "The upload of run 7 stopped arriving.",
            "idempotency_key": key}


@pytest.fixture
def settings(tmp_path: Path, database_url: str, emulator: ResendEmulator) -> Any:
    """For the in-process tests (``node``, ``api``): a node whose transport is the emulator."""
    from mailnode.config import Settings

    return Settings(data_dir=tmp_path / "node", database_url=database_url, transport="resend",
                    resend_base_url=emulator.base_url, resend_api_key="re_test_full")
