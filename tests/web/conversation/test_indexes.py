"""The conversation page reads a conversation's cases and sends by index (migration 0022), never by
scanning every case or send: each statement ``mail.thread.read_thread`` runs is explained and no plan
line reads ``cases`` or ``send_manifests`` whole.

SQLite's ``EXPLAIN QUERY PLAN`` is deterministic for a schema; on PostgreSQL ``enable_seqscan = off`` still
scans sequentially when no index can answer, so "no ``Seq Scan``" there means an index can (as in
``tests/retention/test_indexes.py``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, select

from mailnode.mail.thread import read_thread
from mailnode.schema.mail_messages import messages
from tests.outbound.db.conftest import deliver, inbound


def _statements(node: Any, installed: Any, conversation_id: str) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        seen.append((statement, parameters))

    event.listen(node.engine, "before_cursor_execute", keep)
    try:
        with node.read() as conn:
            read_thread(conn, org_id=installed.org_id, principal_id=installed.user_id,
                        conversation_id=conversation_id)
    finally:
        event.remove(node.engine, "before_cursor_execute", keep)
    return seen


def _plan(node: Any, statement: str, parameters: Any) -> list[str]:
    with node.begin() as conn:
        if conn.dialect.name == "sqlite":
            return [str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()]
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        return [str(r[0]) for r in conn.exec_driver_sql("EXPLAIN " + statement, parameters).all()]


def test_the_thread_reads_its_cases_and_sends_by_index(node: Any, installed: Any, listener: Any) -> None:
    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    with node.read() as conn:
        conversation_id = conn.execute(select(messages.c.conversation_id)).scalar_one()
    read = [(s, p) for s, p in _statements(node, installed, conversation_id)
            if s.lstrip().upper().startswith("SELECT") and ("FROM cases" in s or "FROM send_manifests" in s)]
    assert any("FROM cases" in s for s, _ in read) and any("FROM send_manifests" in s for s, _ in read)
    sqlite = node.engine.dialect.name == "sqlite"
    for statement, parameters in read:
        plan = _plan(node, statement, parameters)
        whole = [ln for ln in plan if (ln.strip().startswith(("SCAN cases", "SCAN send_manifests")) if sqlite
                                       else "Seq Scan on cases" in ln or "Seq Scan on send_manifests" in ln)]
        assert whole == [], "\n".join([statement, *plan])
