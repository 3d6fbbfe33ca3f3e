"""Several ``mailnode serve`` processes on one PostgreSQL database share all of the work (issue 19).

Two real processes (derived executor ids, one data directory, one database) and a real aiosmtpd smarthost.
Mail is delivered to both listeners and sends are posted to both APIs; one process is killed with SIGKILL
while it holds work: materialisations it had dequeued (made slow in it alone, so they are certainly in
flight) and whatever dispatch it was doing. The survivor takes its work over (``mailnode.liveness``): every
accepted message is materialised exactly once, no recipient row reaches the smarthost twice (told apart by
its VERP return path), nothing is left held. And the audit chain stays whole with both processes appending
at full speed: no 5xx, no ``E_AUDIT_APPEND_RACED``.

PostgreSQL only: SQLite is one process by design (``docs/operations.md``).
"""

from __future__ import annotations

import smtplib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select, text, update

from mailnode import liveness
from mailnode.audit import audit_entries
from mailnode.config import Settings
from mailnode.node import Node
from mailnode.schema.ingress import ingress_receipts
from mailnode.schema.mail import mailboxes
from mailnode.schema.mail_messages import messages
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.vocabulary.send_states import SendState
from tests.conftest import BACKEND
from tests.outbound.db.conftest import Sink, running_sink
from tests.support.served import Served, served_env

pytestmark = [pytest.mark.slow, pytest.mark.postgres,
              pytest.mark.skipif(BACKEND != "postgres",
                                 reason="several processes share one database only on PostgreSQL; SQLite is one "
                                        "process by design (docs/operations.md)")]

#: States a send may still move out of by itself: none may be left once the node has settled.
_MOVING = {SendState.HELD.value, SendState.AWAITING.value, SendState.THROTTLED.value}


@pytest.fixture
def sink() -> Iterator[Sink]:
    with running_sink() as running:
        yield running


@pytest.fixture
def pair(tmp_path: Path, database_url: str, sink: Sink) -> Iterator[tuple[Served, Served, Node]]:
    """Two processes of one node (not started) over one data directory and database, and the test's own
    connection to that database (hold window 0, so a send is movable as soon as it is sealed)."""
    env = served_env(database_url, MAILNODE_TRANSPORT="smtp", MAILNODE_SMTP_RELAY=f"127.0.0.1:{sink.port}",
                     MAILNODE_SMTP_TLS="none", MAILNODE_DISPATCH_INTERVAL_SECONDS="1",
                     MAILNODE_MATERIALISE_SCAN_INTERVAL_SECONDS="5")
    a = Served(tmp_path / "node", env)
    b = a.sibling()
    node = Node.open(Settings(data_dir=a.data_dir, database_url=database_url), migrate_to_head=False)
    with node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))
    yield a, b, node
    for s in (a, b):
        s.stop()
    node.close()


def _deliver(s: Served, tag: str, count: int) -> list[str]:
    """``count`` messages to ``s``'s listener over one connection; their Message-IDs."""
    ids = [f"<{tag}-{i}@remote.test>" for i in range(count)]
    with smtplib.SMTP("127.0.0.1", s.smtp, timeout=30) as c:
        for mid in ids:
            c.sendmail("person@remote.test", ["support@example.test"],
                       f"From: person@remote.test\r\nTo: support@example.test\r\nSubject: {mid}\r\n"
                       f"Message-ID: {mid}\r\n\r\nhello\r\n".encode())
    return ids


def _post_send(s: Served, i: int) -> int:
    """``POST /api/sends`` of one send to ``to<i>@remote.test``; the HTTP status."""
    r = httpx.post(f"http://127.0.0.1:{s.http}/api/sends", headers=s.headers, timeout=60,
                   json={"mailbox_id": s.installed["mailbox_id"], "to": [f"to{i}@remote.test"],
                         "subject": f"Send {i}", "body": "Hello"})
    return r.status_code


def _until(what: str, holds: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not holds():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds} s")
        time.sleep(0.2)


def _pending_of(node: Node, executor_id: str, name_like: str) -> int:
    """DBOS workflows PENDING under ``executor_id`` whose function name is LIKE ``name_like``."""
    with node.read() as conn:
        return int(conn.execute(text("SELECT count(*) FROM dbos.workflow_status WHERE status = 'PENDING' "
                                     "AND executor_id = :e AND name LIKE :n"),
                                {"e": executor_id, "n": name_like}).scalar_one())


def _settled(node: Node, receipts: int) -> bool:
    """Every receipt's workflow finished, and no send still moving or claimed."""
    with node.read() as conn:
        done = conn.execute(select(func.count()).select_from(ingress_receipts)
                            .where(ingress_receipts.c.workflow_done_at.is_not(None))).scalar_one()
        moving = conn.execute(select(func.count()).select_from(send_manifests).where(
            send_manifests.c.state.in_(_MOVING) | send_manifests.c.lease_until.is_not(None))).scalar_one()
    return done == receipts and moving == 0


def _recipient_row(return_path: str) -> str:
    local = return_path.partition("@")[0].lower()
    assert local.startswith("bounces+"), return_path
    return local.removeprefix("bounces+")


def test_kill_nine_of_one_of_two_processes_loses_and_duplicates_nothing(pair: tuple[Served, Served, Node],
                                                                        sink: Sink) -> None:
    a, b, node = pair
    sink.handler.delay = 0.3  # a slow smarthost: the hand-overs are still going on at the kill
    a.start()
    # b is slow to materialise (fault injection, b only): what its workers dequeue is in flight at the kill.
    b.start(MAILNODE_FAULT_MATERIALISE_DELAY_SECONDS="60")
    dead = b.executor_id
    delivered = _deliver(a, "a", 12) + _deliver(b, "b", 12)
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda i: _post_send(a if i % 2 else b, i), range(30)))
    assert statuses == [201] * 30
    _until("b holds materialisations", lambda: _pending_of(node, dead, "%materialise_workflow%") >= 1, 20)
    b.kill9()
    killed_at = time.monotonic()
    at_kill = len(sink.handler.received)

    _until("the node settles after the kill", lambda: _settled(node, 24), 45)
    settled_in = time.monotonic() - killed_at

    # Every accepted message materialised, exactly once.
    with node.read() as conn:
        subjects = Counter(conn.execute(select(messages.c.subject)).scalars().all())
        states = conn.execute(select(send_recipients.c.id, send_recipients.c.submission_state)).all()
        taken = conn.execute(select(audit_entries.c.subject, audit_entries.c.detail)
                             .where(audit_entries.c.action == liveness.TAKEN_OVER_ACTION)).all()
    assert subjects == Counter(delivered), subjects
    # Every hand-over once at most; every row decided; only rows in flight at the kill may be ambiguous.
    received = Counter(_recipient_row(t.mail_from) for t in sink.handler.received for _ in t.rcpt_tos)
    assert received and max(received.values()) == 1, [r for r, n in received.items() if n > 1]
    ambiguous = 0
    for row_id, state in states:
        if state == SendState.HANDED_OVER.value:
            assert received[row_id.lower()] == 1, row_id
        else:
            assert state == SendState.OUTCOME_UNKNOWN.value, (row_id, state)
            ambiguous += 1
    assert ambiguous <= at_kill + 2 * 8  # at most what two sweeps had in flight
    assert sum(received.values()) >= 30 - ambiguous
    # The survivor took the dead process over, once, and said so in the audit trail and its log.
    assert [s for s, _ in taken] == [dead], taken
    assert f"executor.taken_over executor={dead}" in a.log_text()
    assert _pending_of(node, dead, "%") == 0
    assert settled_in < 45


def test_the_audit_chain_holds_with_two_processes_at_full_speed(pair: tuple[Served, Served, Node]) -> None:
    a, b, node = pair
    a.start()
    b.start()
    sends, deliveries = 120, 60
    with ThreadPoolExecutor(16) as pool:
        mail = [pool.submit(_deliver, s, f"{s.smtp}-{k}", deliveries // 4) for k in range(2) for s in (a, b)]
        statuses = list(pool.map(lambda i: _post_send(a if i % 2 else b, i), range(sends)))
        for f in mail:
            f.result()
    assert Counter(statuses) == Counter({201: sends})
    _until("the node settles", lambda: _settled(node, deliveries), 50)

    for s in (a, b):
        assert "E_AUDIT_APPEND_RACED" not in s.log_text()
    # Materialisation is shared: each process ran some of the node's materialisations (from either listener).
    with node.read() as conn:
        rows = conn.execute(text("SELECT executor_id, count(*) FROM dbos.workflow_status "
                                 "WHERE name LIKE '%materialise_workflow%' GROUP BY executor_id")).all()
    ran: dict[str, int] = {e: int(n) for e, n in rows}
    assert set(ran) == {a.executor_id, b.executor_id} and sum(ran.values()) == deliveries, ran
    verdict = a.call("POST", "/api/audit/verify")["verification"]
    assert verdict["intact"] is True and verdict["checked"] >= 2 * sends, verdict
    with node.read() as conn:
        handed = conn.execute(select(func.count()).select_from(send_manifests).where(
            send_manifests.c.state == SendState.HANDED_OVER.value)).scalar_one()
    assert handed == sends
