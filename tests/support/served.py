"""A real ``mailnode serve`` process for tests: initialised over a data directory on free loopback ports,
started, stopped with SIGTERM, or killed with SIGKILL, and talked to over HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

MAILNODE = [sys.executable, "-m", "mailnode.cli"]


#: Ports a served node listens on are drawn below Linux's ephemeral range (32768-60999 by default): a port the
#: kernel handed out as free can otherwise become the local end of some other outgoing connection (the suite
#: opens many, to PostgreSQL among others) before ``serve`` binds it, and ``serve`` then exits.
_LISTEN_PORTS = (20000, 32000)
#: How many times ``Served.start`` draws new ports when ``serve`` could not bind the ones it was given.
_BIND_TRIES = 4


def free_port() -> int:
    """A loopback TCP port below the ephemeral range that nobody uses right now."""
    import random

    for _ in range(200):
        port = random.randrange(*_LISTEN_PORTS)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free loopback port in {_LISTEN_PORTS}")


def served_env(database_url: str, **settings: str) -> dict[str, str]:
    """This process's environment without any ``MAILNODE_*`` variable, plus the database and ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILNODE_")}
    env["MAILNODE_DATABASE_URL"] = database_url
    env.update(settings)
    return env


class _PortTaken(Exception):
    """``serve`` exited because a port it was given was taken before it could bind it."""


class Served:
    """One ``mailnode serve`` process over a data directory, restartable and killable."""

    def __init__(self, data_dir: Path, env: dict[str, str], installed: dict[str, Any] | None = None) -> None:
        self.data_dir, self.env = data_dir, env
        self.http, self.smtp = free_port(), free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.logs: list[Any] = []
        #: The test's own connection to the node's database (``settled``), opened at first use.
        self._node: Any = None
        #: Every log file this node's processes wrote, in start order (stdout and stderr together).
        self.log_paths: list[Path] = []
        if installed is not None:  # another process of a node already initialised (``sibling``)
            self.installed = installed
            self.headers = {"Authorization": f"Bearer {installed['token']}"}
            return
        out = subprocess.run([*MAILNODE, "init", "--data-dir", str(data_dir), "--org", "Example", "--domain",
                              "example.test", "--admin-email", "alex@example.test", "--json"],
                             env=env, check=True, capture_output=True, text=True)
        self.installed = json.loads(out.stdout)
        self.headers = {"Authorization": f"Bearer {self.installed['token']}"}

    def sibling(self) -> Served:
        """Another ``mailnode serve`` process of this node: the same data directory (the evidence store is
        shared) and database, its own ports, no ``init``; several processes on one PostgreSQL (issue 19)."""
        return Served(self.data_dir, self.env, installed=self.installed)

    @property
    def executor_id(self) -> str:
        """The executor id the running process derived (no ``MAILNODE_EXECUTOR_ID``): ``serve-<host>-<pid>``."""
        assert self.proc is not None
        return f"serve-{socket.gethostname()}-{self.proc.pid}"

    def start(self, **extra_env: str) -> Served:
        """Start ``mailnode serve`` (with ``extra_env`` on top of the fixture's) and wait for ``/api/health``.

        When ``serve`` exits because one of its ports was taken in the meantime, new ports are drawn and it is
        started again (``_BIND_TRIES`` at most); any other early exit fails with the end of its log."""
        for _ in range(_BIND_TRIES - 1):
            try:
                return self._start_once(extra_env)
            except _PortTaken:
                self.http, self.smtp = free_port(), free_port()
        return self._start_once(extra_env)

    def _start_once(self, extra_env: dict[str, str]) -> Served:
        # The log file lives as long as the process writing to it; ``stop`` and ``kill9`` close it.
        path = self.data_dir / f"serve-{time.time_ns()}.log"
        log = open(path, "wb")  # noqa: SIM115
        self.logs.append(log)
        self.log_paths.append(path)
        self.proc = subprocess.Popen([*MAILNODE, "serve", "--data-dir", str(self.data_dir), "--http",
                                      f"127.0.0.1:{self.http}", "--smtp", f"127.0.0.1:{self.smtp}"],
                                     env={**self.env, **extra_env}, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.http}/api/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                self._close_logs()
                tail = path.read_text(errors="replace")[-3000:]
                if "address already in use" in tail.lower():
                    raise _PortTaken(tail)
                raise AssertionError(f"mailnode serve exited ({self.proc.returncode}):\n{tail}")
            time.sleep(0.2)
        raise AssertionError("mailnode serve did not answer within 60 s")

    def call(self, method: str, path: str, **kw: Any) -> Any:
        """An API call as the administrator; the JSON answer (a status of 300 or more fails the test)."""
        r = httpx.request(method, f"http://127.0.0.1:{self.http}{path}", headers=self.headers, timeout=30, **kw)
        assert r.status_code < 300, r.text
        return r.json()

    def publish(self, doc: dict[str, Any], *relations: str) -> str:
        """Create, publish and grant a Butler; its id."""
        bid = self.call("POST", "/api/butlers", json={"name": doc["metadata"]["name"],
                                                      "source": json.dumps(doc)})["butler"]["id"]
        self.call("POST", f"/api/butlers/{bid}/publish")
        for relation in relations:
            self.call("POST", "/api/access", json={"subject_id": bid, "relation": relation,
                                                   "object_id": self.installed["mailbox_id"]})
        return str(bid)

    def run(self, until: Callable[[dict[str, Any]], bool], seconds: float = 60) -> dict[str, Any]:
        """The newest Butler run once ``until`` holds for it."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            runs = self.call("GET", "/api/butler-runs")["butler_runs"]
            if runs and until(runs[0]):
                return dict(self.call("GET", f"/api/butler-runs/{runs[0]['id']}")["butler_run"])
            time.sleep(0.2)
        raise AssertionError(f"no run got there: {self.call('GET', '/api/butler-runs')}")

    def counter(self, name: str) -> float:
        """One unlabelled counter of the serving process as ``GET /metrics`` shows it (``name`` with its
        ``_total``); a counter the scrape lacks fails the test."""
        from prometheus_client.parser import text_string_to_metric_families

        r = httpx.get(f"http://127.0.0.1:{self.http}/metrics", headers=self.headers, timeout=30)
        assert r.status_code == 200, r.text
        for family in text_string_to_metric_families(r.text):
            for sample in family.samples:
                if sample.name == name and not sample.labels:
                    return float(sample.value)
        raise AssertionError(f"/metrics has no {name}")

    def await_pass(self, loop: str, seconds: float = 60) -> None:
        """Return once a pass of ``loop`` (``dispatch_passes`` or ``materialise_scans``) that began after this
        call has finished: the process's completed passes outnumber the passes it had started when called.

        Each pass is counted as started before it reads anything, so whatever was committed before this call
        has been seen by a finished pass; a test asserts that something did not happen only after this."""
        started = self.counter(f"mailnode_{loop}_started_total")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.counter(f"mailnode_{loop}_completed_total") > started:
                return
            time.sleep(0.2)
        raise AssertionError(f"no {loop} pass began and finished within {seconds} s")

    def await_settled(self, message_id: str, seconds: float = 60) -> None:
        """Return once ``settled(message_id)`` holds; fail after ``seconds``."""
        deadline = time.monotonic() + seconds
        while not self.settled(message_id):
            if time.monotonic() > deadline:
                raise AssertionError(f"the workflow of {message_id}'s receipt did not finish within {seconds} s")
            time.sleep(0.2)

    def await_workflows_done(self, prefix: str, seconds: float = 60) -> None:
        """Return once no DBOS workflow whose id starts with ``prefix`` is pending or enqueued, as the node's
        DBOS system database records it. A workflow is recorded pending before ``start_workflow`` returns, so
        after ``await_pass`` this also covers every workflow that pass started."""
        from dbos import DBOSClient

        from mailnode.config import Settings
        from mailnode.runtime import system_database_url_of

        settings = Settings(data_dir=self.data_dir, database_url=self.env.get("MAILNODE_DATABASE_URL", ""))
        client = DBOSClient(system_database_url=system_database_url_of(settings))
        try:
            deadline = time.monotonic() + seconds
            while pending := client.list_workflows(workflow_id_prefix=prefix, status=["PENDING", "ENQUEUED"],
                                                   load_input=False, load_output=False):
                if time.monotonic() > deadline:
                    raise AssertionError(f"still pending after {seconds} s: {[w.workflow_id for w in pending]}")
                time.sleep(0.2)
        finally:
            client.destroy()

    def settled(self, message_id: str) -> bool:
        """True once the workflow of the receipt that made ``message_id`` has finished, after the steps run
        after materialisation (the Butler trigger, which has then opened or refused every run)."""
        from sqlalchemy import select

        from mailnode.config import Settings
        from mailnode.node import Node
        from mailnode.schema.ingress import ingress_receipts

        if self._node is None:
            settings = Settings(data_dir=self.data_dir, database_url=self.env.get("MAILNODE_DATABASE_URL", ""))
            self._node = Node.open(settings, migrate_to_head=False)
        with self._node.read() as conn:
            done = conn.execute(select(ingress_receipts.c.workflow_done_at)
                                .where(ingress_receipts.c.message_id == message_id)).scalars().all()
        return bool(done) and all(at is not None for at in done)

    def kill9(self) -> None:
        """SIGKILL: no cleanup at all, as a crash."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._close_logs()

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        """``sig`` (SIGTERM, or SIGINT as Ctrl+C sends) and wait; the exit code (None when it never started)."""
        code = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                self.proc.wait(30)
            code = self.proc.returncode
        self._close_logs()
        if self._node is not None:
            self._node.close()
            self._node = None
        return code

    def log_text(self) -> str:
        """Everything this node's processes logged so far, in start order."""
        return "".join(p.read_text(errors="replace") for p in self.log_paths)

    def _close_logs(self) -> None:
        for log in self.logs:
            log.close()
        self.logs.clear()
