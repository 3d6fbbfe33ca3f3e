"""The listener's own path (issue 19): the route cache honours a change on the next RCPT, concurrent deliveries
are group-committed and each gets its receipt, and a fault at commit answers 451 to exactly its group."""

from __future__ import annotations

import smtplib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select, text

from mailnode.ingress import receipts, routing
from mailnode.ingress.committer import GroupCommitter
from mailnode.schema.ingress import ingress_receipts
from tests.ingress.db.test_smtp_listener import H, wait_materialised


def _raw(n: int, sender: str = "someone@remote.test") -> bytes:
    return (f"From: {sender}\r\nTo: support@example.test\r\nSubject: burst {n}\r\n"
            f"Message-ID: <burst-{n}@remote.test>\r\n\r\nmessage {n}\r\n").encode()


def _receipt_subjects(node: Any) -> set[str]:
    with node.read() as conn:
        digests = conn.execute(select(ingress_receipts.c.sha256)).scalars().all()
    found = set()
    for digest in digests:
        for line in node.evidence.get(digest).split(b"\r\n"):
            if line.startswith(b"Subject: "):
                found.add(line[len(b"Subject: "):].decode())
    return found


def _rcpt(port: int, address: str) -> int:
    with smtplib.SMTP("127.0.0.1", port) as s:
        s.ehlo("client.test")
        s.mail("someone@remote.test")
        code, _ = s.rcpt(address)
        return int(code)


def test_a_mailbox_address_change_is_honoured_on_the_next_rcpt(api: Any, installed: Any, listener: Any) -> None:
    port = listener.port_used
    assert _rcpt(port, "support@example.test") == 250
    assert listener.handler.routes.get("support@example.test") is not None  # cached: no lookup next time
    assert _rcpt(port, "sales@example.test") == 550
    r = api.patch(f"/api/mailboxes/{installed.mailbox_id}", headers=H(installed.token),
                  json={"addresses": ["sales@example.test"]})
    assert r.status_code == 200, r.text
    assert listener.handler.routes.get("support@example.test") is None  # the commit invalidated it
    assert _rcpt(port, "support@example.test") == 550
    assert _rcpt(port, "sales@example.test") == 250


def _send_concurrently(port: int, raws: list[bytes], sender: str = "someone@remote.test") -> list[int]:
    codes: list[int] = [0] * len(raws)
    start = threading.Barrier(len(raws))

    def one(i: int) -> None:
        with smtplib.SMTP("127.0.0.1", port) as s:
            s.ehlo("client.test")
            s.mail(sender)
            s.rcpt("support@example.test")
            start.wait()
            codes[i] = s.data(raws[i])[0]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(raws))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return codes


def test_concurrent_deliveries_each_get_their_receipt(api: Any, node: Any, installed: Any, listener: Any) -> None:
    raws = [_raw(n) for n in range(8)]
    assert _send_concurrently(listener.port_used, raws) == [250] * 8
    assert _receipt_subjects(node) == {f"burst {n}" for n in range(8)}
    assert sum(listener.handler.committer.group_sizes) == 8
    wait_materialised(node)
    listed = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages", headers=H(installed.token)).json()
    assert sorted(m["subject"] for m in listed["messages"]) == sorted(f"burst {n}" for n in range(8))


@pytest.fixture
def refusing_trigger(node: Any) -> Iterator[None]:
    """A real fault at commit: a trigger that refuses any receipt from ``doomed@remote.test``."""
    with node.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.execute(text("CREATE TRIGGER refuse_doomed BEFORE INSERT ON ingress_receipts "
                              "WHEN NEW.envelope_from = 'doomed@remote.test' "
                              "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"))
        else:
            conn.execute(text("CREATE FUNCTION refuse_doomed() RETURNS trigger AS $$ BEGIN "
                              "IF NEW.envelope_from = 'doomed@remote.test' THEN RAISE EXCEPTION 'injected fault'; "
                              "END IF; RETURN NEW; END $$ LANGUAGE plpgsql"))
            conn.execute(text("CREATE TRIGGER refuse_doomed BEFORE INSERT ON ingress_receipts "
                              "FOR EACH ROW EXECUTE FUNCTION refuse_doomed()"))
    yield
    with node.begin() as conn:
        conn.execute(text("DROP TRIGGER refuse_doomed" if conn.dialect.name == "sqlite"
                          else "DROP TRIGGER refuse_doomed ON ingress_receipts"))
        if conn.dialect.name != "sqlite":
            conn.execute(text("DROP FUNCTION refuse_doomed()"))


def test_a_fault_at_commit_answers_451_and_stores_no_receipt(node: Any, installed: Any, listener: Any,
                                                             refusing_trigger: None) -> None:
    raws = [_raw(n, "doomed@remote.test") for n in range(4)]
    assert _send_concurrently(listener.port_used, raws, "doomed@remote.test") == [451] * 4
    assert _receipt_subjects(node) == set()
    # The fault was the group's, not the listener's: the next delivery is accepted.
    assert _send_concurrently(listener.port_used, [_raw(9)]) == [250]
    assert _receipt_subjects(node) == {"burst 9"}


def test_a_failed_group_fails_exactly_its_own_deliveries(node: Any, installed: Any, refusing_trigger: None) -> None:
    with node.read() as conn:
        route = routing.resolve(conn, "support@example.test")
    assert route is not None
    committer = GroupCommitter(node, max_group=2)
    senders = ["someone@remote.test", "doomed@remote.test", "someone@remote.test", "someone@remote.test"]
    # Submitted before the writer starts, so the groups are known: [0, 1] (one doomed) and [2, 3].
    futures = [committer.submit(_raw(n, sender), receipts.Envelope(mail_from=sender, routes=(route,)))
               for n, sender in enumerate(senders)]
    committer.start()
    try:
        outcomes = [f.exception(timeout=30) for f in futures]
    finally:
        committer.stop()
    assert committer.group_sizes == [2, 2]
    assert [e is not None for e in outcomes] == [True, True, False, False]
    assert "injected fault" in str(outcomes[0]) and "injected fault" in str(outcomes[1])
    assert all(len(f.result()) == 1 for f in futures[2:])
    assert _receipt_subjects(node) == {"burst 2", "burst 3"}


def test_a_group_is_one_receipt_transaction(node: Any, installed: Any) -> None:
    with node.read() as conn:
        route = routing.resolve(conn, "support@example.test")
    assert route is not None
    deliveries = [(_raw(n), receipts.Envelope(mail_from="someone@remote.test", routes=(route,))) for n in range(5)]
    with node.meter.measure() as m:
        ids = receipts.accept_group(node, deliveries)
    assert [len(i) for i in ids] == [1] * 5
    assert m.count == 1  # one INSERT for the group's five receipt rows
    with node.read() as conn:
        assert conn.execute(select(func.count()).select_from(ingress_receipts)).scalar_one() == 5


def test_a_stopped_committer_refuses_and_answers_every_waiting_delivery(node: Any, installed: Any) -> None:
    with node.read() as conn:
        route = routing.resolve(conn, "support@example.test")
    assert route is not None
    committer = GroupCommitter(node)
    fut = committer.submit(_raw(1), receipts.Envelope(mail_from="someone@remote.test", routes=(route,)))
    committer.start()
    committer.stop()
    assert len(fut.result(timeout=30)) == 1  # what was handed over before stop is committed
    with pytest.raises(Exception, match="E_LISTENER_STOPPED"):
        committer.submit(_raw(2), receipts.Envelope(mail_from="someone@remote.test", routes=(route,)))
