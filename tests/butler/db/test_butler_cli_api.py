"""``mailnode butler create|draft|publish|list`` against a real ``mailnode serve`` on free loopback ports.

The node is a separate process (started the way an operator starts it, on the chosen database); the
commands run in this process through Typer's runner and speak HTTP to it with httpx.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from mailnode.butler.cli import butler_app

from .conftest import program

pytestmark = pytest.mark.slow

MAILNODE = [sys.executable, "-m", "mailnode.cli"]
runner = CliRunner()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[dict[str, str]]:
    """A node initialised and served as a subprocess: ``{"url", "token", "data_dir"}``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILNODE_")}
    env["MAILNODE_DATABASE_URL"] = database_url
    data_dir = tmp_path / "node"
    done = subprocess.run([*MAILNODE, "init", "--data-dir", str(data_dir), "--org", "Example", "--domain",
                           "example.test", "--admin-email", "alex@example.test", "--json"],
                          env=env, check=True, capture_output=True, text=True)
    token = json.loads(done.stdout)["token"]
    http = _free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([*MAILNODE, "serve", "--data-dir", str(data_dir), "--http", f"127.0.0.1:{http}",
                                 "--smtp", f"127.0.0.1:{_free_port()}"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{http}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise AssertionError(log_path.read_text(errors="replace"))
            try:
                if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.2)
        yield {"url": url, "token": token, "data_dir": str(data_dir)}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


def _run(served: dict[str, str], *args: str, token: str | None = None) -> Any:
    env = {"MAILNODE_URL": served["url"], "MAILNODE_TOKEN": served["token"] if token is None else token}
    return runner.invoke(butler_app, list(args), env=env)


def test_create_draft_publish_and_list_through_a_served_node(served: dict[str, str], tmp_path: Path) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(program())
    second.write_text(program("changed"))

    made = _run(served, "create", "Quiet", str(first), "--json")
    assert made.exit_code == 0, made.output
    butler = json.loads(made.stdout)["butler"]
    bid = butler["id"]
    assert butler["draft"]["source"] == program()

    published = _run(served, "publish", bid)
    assert published.exit_code == 0, published.output
    assert published.stdout.startswith(f"published  Quiet  version 1  {butler['draft']['id']}")

    # The same program again: refused, printed in four parts on stderr, exit 1.
    assert _run(served, "draft", bid, str(first)).exit_code == 0
    again = _run(served, "publish", bid)
    assert again.exit_code == 1 and again.stdout == ""
    assert again.stderr.startswith("E_BUTLER_UNCHANGED  ")
    assert "\n  why  " in again.stderr and "\n  fix  " in again.stderr

    drafted = _run(served, "draft", bid, str(second))
    assert drafted.exit_code == 0 and drafted.stdout.startswith(f"drafted  Quiet  {bid}"), drafted.output
    assert "superseding " + butler["draft"]["id"] in _run(served, "publish", bid).stdout

    listed = _run(served, "list")
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.splitlines()[0].startswith(f"{bid}  Quiet  version 2 (")
    assert listed.stdout.splitlines()[-1] == "1 Butler"
    as_json = json.loads(_run(served, "list", "--json").stdout)["butlers"]
    assert [(b["id"], b["live"]["version"], b["draft"]) for b in as_json] == [(bid, 2, None)]


def test_refusals_print_in_four_parts_with_every_finding(served: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    doc = json.loads(program())
    doc["nodes"][0]["to"] = "someone@example.org"
    doc["entry"] = "missing"
    bad.write_text(json.dumps(doc))
    r = _run(served, "create", "Bad", str(bad))
    assert r.exit_code == 1 and r.stderr.startswith("E_BUTLER_DOES_NOT_CHECK  "), r.output
    # Each finding follows in the checker's own four-part form.
    assert "\nE_BUTLER_NODE_UNKNOWN_PARAMETER  " in r.stderr and "\nE_BUTLER_NO_ENTRY  " in r.stderr
    assert r.stderr.count("\n  node  ") == 2

    ok = tmp_path / "ok.json"
    ok.write_text(program())
    stranger = _run(served, "create", "Quiet", str(ok), token="mn_not_a_token")
    assert stranger.exit_code == 1 and stranger.stderr.startswith("E_UNAUTHENTICATED  ")
    missing = _run(served, "create", "Quiet", str(ok), token="")
    assert missing.exit_code == 1 and missing.stderr.startswith("E_TOKEN_MISSING  ")
    absent = _run(served, "publish", "btl_01HZY00000000000000000000Z")
    assert absent.exit_code == 1 and absent.stderr.startswith("E_NO_SUCH_BUTLER  ")

    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(program("cafe").replace("cafe", "caf\u00e9").encode("latin-1"))
    r = _run(served, "create", "Latin", str(latin1))
    assert r.exit_code == 1 and r.stderr.startswith("E_BUTLER_SOURCE_NOT_UTF8  ")


def test_an_unreachable_node_is_named(tmp_path: Path) -> None:
    ok = tmp_path / "ok.json"
    ok.write_text(program())
    r = _run({"url": f"http://127.0.0.1:{_free_port()}", "token": "mn_x"}, "create", "Quiet", str(ok))
    assert r.exit_code == 1 and r.stderr.startswith("E_NODE_UNREACHABLE  ") and "mailnode serve" in r.stderr
