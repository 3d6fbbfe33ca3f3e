"""The demo's node: ``mailnode`` commands run as subprocesses, ``mailnode serve`` kept running, and its API.

Every interaction goes through a public interface: the CLI (``init``, ``token create``, ``doctor``,
``audit verify``), the HTTP API and SMTP. The child processes get the caller's environment without any
``MAILNODE_*`` variable, so a developer's own node settings (a PostgreSQL URL, an executor id) can never
point the demo at real data; the demo sets the few it needs itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from mailnode import budgets
from mailnode.errors import MailnodeError

MAILNODE = [sys.executable, "-m", "mailnode.cli"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def step_failed(step: str, what: str, why: str, fix: str, **detail: Any) -> MailnodeError:
    """The demo's one refusal: a step whose outcome differs from the expected one (``E_DEMO_STEP_FAILED``)."""
    return MailnodeError(code="E_DEMO_STEP_FAILED", what=f"{step}: {what}", why=why, fix=fix, status=500,
                         detail={"step": step, **detail})


@dataclass(frozen=True)
class CommandResult:
    """A finished ``mailnode`` command: its exit code and what it printed."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class DemoNode:
    """One data directory, the ``mailnode`` commands run on it and the ``mailnode serve`` process over it."""

    def __init__(self, data_dir: Path, sink_port: int) -> None:
        self.data_dir = data_dir
        self.http_port, self.smtp_port = free_port(), free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MAILNODE_")}
        self.env.update({
            "MAILNODE_TRANSPORT": "smtp", "MAILNODE_SMTP_RELAY": f"127.0.0.1:{sink_port}",
            "MAILNODE_SMTP_TLS": "none",
            "MAILNODE_DISPATCH_INTERVAL_SECONDS": str(budgets.DEMO_DISPATCH_INTERVAL_SECONDS),
            "MAILNODE_MATERIALISE_SCAN_INTERVAL_SECONDS": str(budgets.DEMO_MATERIALISE_SCAN_INTERVAL_SECONDS),
            "MAILNODE_EXECUTOR_ID": f"demo-{os.getpid()}",
        })
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir / "serve.log"
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The HTTP API's base URL."""
        return f"http://127.0.0.1:{self.http_port}"

    def command(self, *args: str) -> CommandResult:
        """Run ``mailnode ARGS... --data-dir DIR`` to the end and return what it printed (any exit code)."""
        argv = (*MAILNODE, *args, "--data-dir", str(self.data_dir))
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True,
                              timeout=budgets.DEMO_REQUEST_TIMEOUT_SECONDS, check=False)
        return CommandResult(tuple(argv[len(MAILNODE):]), done.returncode, done.stdout, done.stderr)

    def command_json(self, step: str, *args: str) -> dict[str, Any]:
        """Run a command that prints one JSON object with ``--json``; ``E_DEMO_STEP_FAILED`` when it fails."""
        done = self.command(*args, "--json")
        if done.returncode != 0:
            raise step_failed(step, f"mailnode {' '.join(args)} exited {done.returncode}.",
                              done.stderr.strip() or done.stdout.strip(), "Run the same command by hand to see it.")
        answer = json.loads(done.stdout)
        if not isinstance(answer, dict):
            raise step_failed(step, f"mailnode {' '.join(args)} printed no JSON object.", done.stdout[:500],
                              "Run the same command by hand to see it.")
        return answer

    def start(self) -> None:
        """Start ``mailnode serve`` on the free ports and wait until ``GET /api/health`` answers 200."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # The log stays open as long as the process writing to it; ``stop`` closes it.
        self._log = open(self.log_path, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [*MAILNODE, "serve", "--data-dir", str(self.data_dir), "--http", f"127.0.0.1:{self.http_port}",
             "--smtp", f"127.0.0.1:{self.smtp_port}"],
            env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + budgets.DEMO_NODE_START_TIMEOUT_SECONDS
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise step_failed("start the node", f"mailnode serve exited with {self.proc.returncode}.",
                                  f"Its output is in {self.log_path}.", f"Read {self.log_path}.")
            try:
                if httpx.get(f"{self.base_url}/api/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError as exc:
                # Refused or timed out while the node starts: the next poll asks again.
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(budgets.DEMO_POLL_INTERVAL_SECONDS)
        raise step_failed("start the node", f"GET /api/health did not answer 200 within "
                          f"{budgets.DEMO_NODE_START_TIMEOUT_SECONDS:.0f} s ({last}).",
                          f"The node's output is in {self.log_path}.",
                          "Raise DEMO_NODE_START_TIMEOUT_SECONDS in budgets.py if this machine is slow.")

    def stop(self) -> None:
        """Stop ``mailnode serve`` with SIGTERM (SIGKILL after DEMO_STOP_TIMEOUT_SECONDS) and close its log."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(budgets.DEMO_STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(budgets.DEMO_STOP_TIMEOUT_SECONDS)
        if self._log is not None:
            self._log.close()
            self._log = None

    def call(self, step: str, token: str, method: str, path: str, body: dict[str, Any] | None = None,
             params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One API request; its JSON answer, or ``E_DEMO_STEP_FAILED`` carrying the node's own refusal."""
        response = httpx.request(method, f"{self.base_url}{path}", json=body, params=params,
                                 headers={"Authorization": f"Bearer {token}"},
                                 timeout=budgets.DEMO_REQUEST_TIMEOUT_SECONDS)
        if not response.is_success:
            raise step_failed(step, f"{method} {path} answered {response.status_code}.", response.text[:1000],
                              "The node's refusal above names its own fix.", status_code=response.status_code)
        answer = response.json()
        if not isinstance(answer, dict):
            raise step_failed(step, f"{method} {path} answered something other than a JSON object.",
                              response.text[:500], "Check the node's version.")
        return answer
