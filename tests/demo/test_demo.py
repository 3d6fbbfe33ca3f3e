"""``mailnode demo`` as a user runs it: a subprocess that must exit 0 and print the key lines of its report;
its failure path; ``--keep-running``; and its data files, byte for byte the corpus and inside the wheel."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from mailnode.demo import messages
from mailnode.demo.scenario import Checker, Organisation, Outcome
from mailnode.errors import MailnodeError
from tests.conftest import BACKEND
from tests.corpus import CORPUS

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(BACKEND == "postgres", reason="the demo runs on its own embedded SQLite node; "
                                                               "it ran in the SQLite pass")]

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "src" / "mailnode" / "demo" / "data"
MAILNODE = [sys.executable, "-m", "mailnode.cli"]
DEMO_TIMEOUT = 300


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MAILNODE_")}


def test_the_demo_exits_0_and_reports_every_step() -> None:
    done = subprocess.run([*MAILNODE, "demo"], capture_output=True, text=True, env=_env(), timeout=DEMO_TIMEOUT,
                          check=False)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    for line in (
        "ok  question.eml: reply refusal: None",
        "ok  bounce.eml: automated: 'null_sender'",
        "ok  list.eml: automated: 'list_header'",
        "ok  malformed.eml: a parse error is recorded: True",
        ("ok  acknowledge on bounce.eml: run state and reason: ('stopped', "
         "'an automatic reply is refused for this message')"),
        ("ok  acknowledge on list.eml: run state and reason: ('stopped', "
         "'an automatic reply is refused for this message')"),
        "ok  triage on bounce.eml: effects: (('take', 'ok', None), ('close', 'ok', None))",
        ("ok  acknowledge on question.eml: effects: (('reply', 'ok', None), ('propose', 'ok', "
         "'butler_release_required'))"),
        "ok  proposals: transactions at the smarthost after 2 s of dispatch sweeps: 0",
        "ok  smarthost: envelope recipients (the question's envelope sender): ['bob@example.net']",
        "ok  release: send state: 'handed_over'",
        "ok  breakers: tripped breakers: []",
        "verdict: degraded (exit 1)",
        "ok  audit: mailnode audit verify exit code: 0",
    ):
        assert line in out, f"missing {line!r} in:\n{out}"
    for title in ("What each message became", "What each Butler run did", "Proposals waiting for a person",
                  "Arrived at the smarthost", "GET /api/breakers", "mailnode doctor"):
        assert title in out
    assert re.search(r"│ Auto-Submitted\s+│ auto-replied", out)
    assert re.search(r"│ Message-ID\s+│ <snd_\w+@example.com>", out)
    assert re.search(r"demo passed: \d+ outcomes checked, all as expected\.", out)
    # The threaded answer joined the question's conversation.
    assert "ok  reply.eml: conversation (the question's): 'cnv_" in out
    # It says what it is doing before each step that takes seconds, from its first line on (issue 18).
    assert out.lstrip().startswith("…  mailnode demo: starting a smarthost"), out[:500]
    before_the_table = out[:out.index("The organisation")]
    said = ["mailnode init:", "starting mailnode serve", "building the organisation through the HTTP API"]
    positions = [before_the_table.find(f"…  {words}") for words in said]
    assert -1 not in positions and positions == sorted(positions), before_the_table
    assert "…  watching the smarthost for 2 s of dispatch sweeps" in out
    # The temporary data directory is gone after a successful run.
    data_dir = re.search(r"data (/\S+mailnode-demo-\S+)", out)
    assert data_dir and not Path(data_dir.group(1)).exists()


def test_a_failed_step_exits_1_with_a_readable_refusal_and_keeps_the_directory(tmp_path: Path) -> None:
    node = tmp_path / "node"
    subprocess.run([*MAILNODE, "init", "--data-dir", str(node), "--org", "X", "--domain", "example.com",
                    "--admin-email", "x@example.com"], check=True, capture_output=True, env=_env())
    done = subprocess.run([*MAILNODE, "demo", "--data-dir", str(node)], capture_output=True, text=True,
                          env=_env(), timeout=DEMO_TIMEOUT, check=False)
    assert done.returncode == 1
    assert "demo FAILED" in done.stdout
    assert "E_DEMO_STEP_FAILED  initialise: mailnode init" in done.stdout
    assert "E_ALREADY_INITIALISED" in done.stdout
    assert f"kept in {node}" in done.stdout and node.exists()


def test_an_outcome_that_differs_raises_naming_both_values() -> None:
    outcome = Outcome(org=Organisation("org_x", "t", "t", {}, {}))
    check = Checker(Console(file=open(os.devnull, "w")), outcome)  # noqa: SIM115
    check.equal("bounce.eml", "automated", "null_sender", "null_sender")
    assert outcome.checks == 1
    with pytest.raises(MailnodeError) as raised:
        check.equal("bounce.eml", "automated", None, "null_sender")
    assert raised.value.code == "E_DEMO_STEP_FAILED"
    assert "saw None, expected 'null_sender'" in raised.value.what
    assert outcome.checks == 1


def test_keep_running_leaves_the_node_up_until_interrupted() -> None:
    proc = subprocess.Popen([*MAILNODE, "demo", "--keep-running"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=_env())
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if "Press Ctrl-C" in line:
                break
        text = "".join(seen)
        assert "demo passed" in text, text
        base = re.search(r"API\s+(http://127\.0\.0\.1:\d+)", text)
        token = re.search(r"admin token\s+(\S+)", text)
        assert base and token, text
        headers = {"Authorization": f"Bearer {token.group(1)}"}
        assert httpx.get(f"{base.group(1)}/api/health", timeout=10).status_code == 200
        runs = httpx.get(f"{base.group(1)}/api/butler-runs", headers=headers, timeout=10).json()["butler_runs"]
        assert len(runs) == 10
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, text + rest
        assert "stopping the node and the smarthost" in rest
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{base.group(1)}/api/health", timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _listed_sha256() -> dict[str, str]:
    text = (DATA / "README.md").read_text(encoding="utf-8")
    return {name: digest for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", text, flags=re.MULTILINE)}


def test_the_data_files_are_the_corpus_byte_for_byte() -> None:
    listed = _listed_sha256()
    assert sorted(listed) == sorted(m.file for m in messages.ALL)
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name
    assert (DATA / "bounce.eml").read_bytes() == (CORPUS / "bounces" / "lhost-postfix-13.eml").read_bytes()
    assert (DATA / "malformed.eml").read_bytes() == (CORPUS / "malformed" / "handmade" / "to-comment-colon.eml"
                                                     ).read_bytes()
    cases = {c["name"]: c for c in map(json.loads, (CORPUS / "autoreply" / "cases.jsonl").read_text().splitlines())}
    for name, case in (("question.eml", "rule: recipient address differs only in case"),
                       ("reply.eml", "rule: X-Auto-Response-Suppress DR only"),
                       ("auto-reply.eml", "rule: Auto-Submitted auto-replied"),
                       ("list.eml", "rule: List-Unsubscribe without List-Id")):
        assert (DATA / name).read_bytes() == cases[case]["message"].encode("utf-8"), name
    assert (DATA / "sisimai-set-of-emails.LICENSE.txt").read_bytes() == (
        CORPUS.parent / "corpus" / "LICENSES" / "sisimai-set-of-emails.LICENSE.txt").read_bytes()


def test_the_installed_package_carries_the_data(tmp_path: Path) -> None:
    for m in messages.ALL:
        assert messages.read(m) == (DATA / m.file).read_bytes()
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(tmp_path)],
                           capture_output=True, text=True, timeout=DEMO_TIMEOUT, check=False)
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("mailnode-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in [*(m.file for m in messages.ALL), "README.md", "sisimai-set-of-emails.LICENSE.txt"]:
        assert f"mailnode/demo/data/{name}" in names


def test_threading_headers_refuse_anything_but_one_message_id() -> None:
    raw = messages.read(messages.REPLY)
    out = messages.threaded(raw, "<snd_1@example.com>")
    assert out.startswith(b"In-Reply-To: <snd_1@example.com>\r\nReferences: <snd_1@example.com>\r\n")
    assert b"\n" not in out.replace(b"\r\n", b"")
    for bad in ("snd_1@example.com", "<a@b>\r\nBcc: x@y", "<a@b> <c@d>"):
        with pytest.raises(ValueError):
            messages.threaded(raw, bad)
