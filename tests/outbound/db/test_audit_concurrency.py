"""The audit chain serialises instead of racing (issue 14 item 10): many concurrent seals and dispatch
sweeps against one node on the real database of the run (SQLite, or PostgreSQL with
MAILNODE_TEST_DB=postgres). Every request succeeds, every send the smarthost took is ``handed_over``, and
the organisation's chain verifies."""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import OperationalError

from mailnode import audit
from mailnode.outbound import dispatch
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.mail import mailboxes
from mailnode.schema.outbound import send_manifests

SEALERS = 12
SEALS_EACH = 10
SWEEPERS = 2


def test_concurrent_seals_and_sweeps_never_fail_and_every_taken_send_is_handed_over(
        node: Any, installed: Any, sink: Any) -> None:
    with node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))
    errors: list[BaseException] = []
    sealed: list[str] = []
    sealing_done = threading.Event()
    start = threading.Barrier(SEALERS + SWEEPERS)

    def sealer(n: int) -> None:
        start.wait()
        for i in range(SEALS_EACH):
            try:
                s = seal(node, org_id=installed.org_id, author_id=installed.user_id,
                         request=SealRequest(mailbox_id=installed.mailbox_id, to=[f"r{n}-{i}@remote.test"],
                                             subject=f"Hello {n}/{i}", body="Hi"))
                sealed.append(s.id)
            except BaseException as exc:  # noqa: BLE001 - every failure is what the test reports
                errors.append(exc)

    def sweeper() -> None:
        start.wait()
        while True:
            finished = sealing_done.is_set()
            try:
                dispatch.sweep(node, transport=sink.transport())
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
            if finished and not dispatch.due_ids(node):
                return

    threads = [threading.Thread(target=sealer, args=(n,)) for n in range(SEALERS)]
    threads += [threading.Thread(target=sweeper) for _ in range(SWEEPERS)]
    for t in threads:
        t.start()
    for t in threads[:SEALERS]:
        t.join(timeout=300)
    sealing_done.set()
    for t in threads[SEALERS:]:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a worker did not finish"

    assert [str(e)[:300] for e in errors] == []
    assert len(sealed) == SEALERS * SEALS_EACH
    with node.read() as conn:
        states = dict(conn.execute(select(send_manifests.c.state, func.count())
                                   .group_by(send_manifests.c.state)).all())
        verified = audit.verify(conn, installed.org_id)
    # The smarthost took every send once, and each of them reads handed_over (none outcome_unknown).
    assert len(sink.handler.received) == len(sealed)
    assert states == {"handed_over": len(sealed)}
    assert verified.intact, verified
    assert verified.checked >= 2 * len(sealed)


def test_a_transient_failure_after_the_hand_over_is_retried_not_left_outcome_unknown(
        node: Any, installed: Any, sink: Any, monkeypatch: Any) -> None:
    with node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))
    s = seal(node, org_id=installed.org_id, author_id=installed.user_id,
             request=SealRequest(mailbox_id=installed.mailbox_id, to=["ann@remote.test"], subject="Hi", body="Hi"))
    real_append_many = audit.append_many
    failed: list[str] = []

    def append_failing_once(conn: Any, *, org_id: str, entries: list[audit.Entry]) -> list[str]:
        # The database fails once, as a deadlock victim or a busy SQLite would, while the batch's aggregates
        # and their entries are written (issue 19: dispatch writes them per batch, with append_many).
        actions = [e.action for e in entries]
        if "send.handed_over" in actions and not failed:
            failed.append("send.handed_over")
            raise OperationalError("INSERT INTO audit_entries ...", {}, Exception("deadlock detected"))
        return real_append_many(conn, org_id=org_id, entries=entries)

    monkeypatch.setattr(audit, "append_many", append_failing_once)
    report = dispatch.sweep(node, transport=sink.transport())
    assert failed == ["send.handed_over"]
    assert [r.state for r in report.results] == ["handed_over"]
    with node.read() as conn:
        assert conn.execute(select(send_manifests.c.state).where(send_manifests.c.id == s.id)).scalar_one() == \
            "handed_over"
        assert audit.verify(conn, installed.org_id).intact
    assert len(sink.handler.received) == 1
