"""``mailnode serve`` as a real process: SMTP in, API out, and materialisation that survives kill -9."""

from __future__ import annotations

import smtplib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.corpus import CORPUS
from tests.support.served import Served, served_env

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[Served]:
    s = Served(tmp_path / "node", served_env(database_url, MAILNODE_MATERIALISE_SCAN_INTERVAL_SECONDS="1"))
    yield s
    s.stop()


def _messages(s: Served) -> list[dict[str, Any]]:
    r = httpx.get(f"http://127.0.0.1:{s.http}/api/mailboxes/{s.installed['mailbox_id']}/messages",
                  headers={"Authorization": f"Bearer {s.installed['token']}"}, timeout=10)
    return list(r.json()["messages"])


def _wait_for(s: Served, count: int, seconds: float = 30) -> list[dict[str, Any]]:
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
    raw = (b"From: a@remote.test\r\nTo: support@example.test\r\nSubject: survive\r\n"
           b"Message-ID: <k1@remote.test>\r\n\r\nhi\r\n")
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("a@remote.test", ["support@example.test"], raw)  # 250: the receipt is committed
    assert _messages(served) == []  # not materialised yet: the step is waiting
    served.kill9()
    served.start()
    msgs = _wait_for(served, 1)
    # The recovered workflow has finished, then a scan has begun and finished, and so has any materialisation it
    # started: neither made a second message.
    served.await_settled(msgs[0]["id"])
    served.await_pass("materialise_scans")
    served.await_workflows_done("materialise-")
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


def test_kill9_during_a_burst_loses_no_message_that_got_its_250(served: Any) -> None:
    """Four clients send as fast as they can; the process is killed in the middle. Every message answered 250
    has its receipt and its bytes, read from the database and the evidence store after the kill."""
    import threading

    from mailnode.config import load_settings
    from mailnode.node import Node
    from mailnode.schema.ingress import ingress_receipts

    served.start()
    accepted: list[str] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        try:
            with smtplib.SMTP("127.0.0.1", served.smtp, timeout=30) as s:
                for n in range(200):
                    subject = f"burst {c}-{n}"
                    raw = (f"From: a@remote.test\r\nTo: support@example.test\r\nSubject: {subject}\r\n"
                           f"Message-ID: <{c}-{n}@remote.test>\r\n\r\nhi\r\n").encode()
                    s.sendmail("a@remote.test", ["support@example.test"], raw)  # raises unless 250
                    with lock:
                        accepted.append(subject)
        except (smtplib.SMTPException, OSError):
            return  # the kill: this client's message in flight got no 250

    threads = [threading.Thread(target=client, args=(c,)) for c in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(accepted) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    served.kill9()
    for t in threads:
        t.join()
    with lock:
        answered = set(accepted)
    assert 40 <= len(answered) < 800  # killed during the burst, not before nor after it
    node = Node.open(load_settings(served.data_dir, database_url=served.env["MAILNODE_DATABASE_URL"]))
    try:
        with node.read() as conn:
            digests = conn.execute(select(ingress_receipts.c.sha256)).scalars().all()
        stored = set()
        for digest in digests:  # evidence.get checks each blob against its digest
            for line in node.evidence.get(digest).split(b"\r\n"):
                if line.startswith(b"Subject: "):
                    stored.add(line[len(b"Subject: "):].decode())
    finally:
        node.close()
    assert answered <= stored
