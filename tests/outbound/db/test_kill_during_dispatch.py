"""``kill -9`` of a real ``mailnode serve`` during a dispatch of many sends to a real SMTP sink, then a
restart: no recipient row is handed to the sink twice, and every send ends in a state of the vocabulary.

A recipient row is told apart by its VERP return path (``bounces+<srp id>@…``), not by its address: the
sends the node leaves ``outcome_unknown`` each notify their author (``send_failed``, one notice manifest
per send), so the author's address rightly receives several different notices."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from mailnode import budgets
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.mail import mailboxes
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.vocabulary.send_states import SendState
from tests.outbound.db.conftest import free_port

SENDS = 24
MAILNODE = str(Path(sys.executable).with_name("mailnode"))


def _serve(settings: Any, sink_port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ,
           "MAILNODE_DATA_DIR": str(settings.data_dir), "MAILNODE_DATABASE_URL": settings.database_url,
           "MAILNODE_TRANSPORT": "smtp", "MAILNODE_SMTP_RELAY": f"127.0.0.1:{sink_port}", "MAILNODE_SMTP_TLS": "none",
           "MAILNODE_HTTP": f"127.0.0.1:{free_port()}", "MAILNODE_SMTP": f"127.0.0.1:{free_port()}",
           "MAILNODE_DISPATCH_INTERVAL_SECONDS": "1", "MAILNODE_EXECUTOR_ID": "kill-test"}
    return subprocess.Popen([MAILNODE, "serve", "--data-dir", str(settings.data_dir)], env=env,
                            stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)


def _states(node: Any) -> tuple[list[str], list[tuple[str, str, Any]]]:
    """Every manifest's state, and each recipient row as (row id, submission state, its manifest's lease)."""
    with node.read() as conn:
        manifests = [r.state for r in conn.execute(select(send_manifests.c.state, send_manifests.c.lease_until))]
        recipients = [(r.id, r.submission_state, r.lease) for r in conn.execute(
            select(send_recipients.c.id, send_recipients.c.submission_state,
                   send_manifests.c.lease_until.label("lease"))
            .join(send_manifests, send_manifests.c.id == send_recipients.c.manifest_id))]
    return manifests, recipients


def _recipient_row(return_path: str) -> str:
    """The recipient row id a VERP return path names, lowercased as the transport writes it."""
    local = return_path.partition("@")[0].lower()
    assert local.startswith("bounces+"), return_path
    return local.removeprefix("bounces+")


def test_kill_nine_mid_dispatch_then_restart(node: Any, installed: Any, clock: Any, sink: Any, settings: Any,
                                             tmp_path: Path) -> None:
    clock.set(datetime.now(UTC))
    with node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))
    for i in range(SENDS):
        seal(node, org_id=installed.org_id, author_id=installed.user_id, request=SealRequest(
            mailbox_id=installed.mailbox_id, to=[f"to{i}@remote.test"], cc=[f"cc{i}@remote.test"],
            subject=f"Send {i}", body="Hello"))
    sink.handler.delay = 0.15
    log = tmp_path / "serve.log"
    first = _serve(settings, sink.port, log)
    try:
        deadline = time.monotonic() + 60
        while len(sink.handler.received) < 8 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.02)
        assert first.poll() is None, log.read_text()[-3000:]
        assert len(sink.handler.received) >= 8, log.read_text()[-3000:]
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    at_kill = len(sink.handler.received)
    assert at_kill < 2 * SENDS, "the kill came too late to interrupt the dispatch"

    sink.handler.delay = 0.0
    second = _serve(settings, sink.port, log)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            manifests, _ = _states(node)
            if all(s not in (SendState.HELD.value,) for s in manifests) and \
                    not any(s == SendState.OUTCOME_UNKNOWN.value and lease for _, s, lease in _states(node)[1]):
                break
            time.sleep(0.2)
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait()

    manifests, recipients = _states(node)
    vocabulary = {s.value for s in SendState}
    assert set(manifests) <= vocabulary and SendState.HELD.value not in manifests, (manifests, log.read_text()[-3000:])
    received = Counter(_recipient_row(t.mail_from) for t in sink.handler.received for _ in t.rcpt_tos)
    assert max(received.values()) == 1, [a for a, n in received.items() if n > 1]
    assert set(received) <= {row_id.lower() for row_id, _, _ in recipients}
    for row_id, state, lease in recipients:
        row = row_id.lower()
        assert state in vocabulary and lease is None
        if state == SendState.HANDED_OVER.value:
            assert received[row] == 1, row
        elif state == SendState.OUTCOME_UNKNOWN.value:
            assert received[row] <= 1  # the one in flight at the kill: it may or may not have arrived
        else:
            raise AssertionError(f"{row} ended {state}")
    # Only recipients in flight at the kill (a few per concurrent sweep) are ambiguous; everything else went.
    ambiguous = sum(1 for _, s, _ in recipients if s == SendState.OUTCOME_UNKNOWN.value)
    assert ambiguous < at_kill + budgets.DISPATCH_CONCURRENCY * 3
    assert sum(received.values()) >= 2 * SENDS - ambiguous
    if ambiguous:
        assert "send.claims_recovered" in log.read_text()
