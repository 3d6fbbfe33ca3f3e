"""The loop detector's two statements seek indexes and never scan a table, on SQLite and PostgreSQL alike,
with the tables filled well past the size where a planner prefers a scan of a small table. The plans are
printed (``pytest -s``) and asserted."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import event, text

from mailnode.butler import lifecycle, pause
from mailnode.ids import new_id
from mailnode.mail.threading import start_conversation
from mailnode.node import Node
from mailnode.schema.butler_runs import butler_run_effects, butler_runs
from mailnode.schema.mail_messages import message_ids

#: Rows per table: enough that a sequential scan costs a planner far more than an index probe.
ROWS = 20_000
BUTLERS = 8


def _fill(node: Node, installed: Any) -> tuple[str, list[str]]:
    """``ROWS`` runs over ``BUTLERS`` Butlers, each with a proposed send and its recorded Message-ID."""
    org = installed.org_id
    now = node.clock.now()
    source = ('{"apiVersion": "mailnode/v1", "kind": "Butler", "metadata": {"name": "n", "owner": "team:t"}, '
              '"capabilities": [], "trigger": {"event": "mail.received", "mailbox": "support@example.test"}, '
              '"entry": "s", "nodes": [{"id": "s", "type": "stop", "reason": "x"}]}')
    butlers = []
    with node.begin() as conn:
        for i in range(BUTLERS):
            b = lifecycle.create_butler(conn, org_id=org, actor_id=installed.user_id, at=now, name=f"b{i}",
                                        source=source, pot=node.settings.butler_run_pot)
            lifecycle.publish(conn, org_id=org, actor_id=installed.user_id, at=now, butler_id=b["id"],
                              pot=node.settings.butler_run_pot)
            butlers.append((b["id"], lifecycle.get_butler(conn, org_id=org, principal_id=installed.user_id,
                                                          butler_id=b["id"])))
        conversation = start_conversation(conn, org, "x", now)
        runs, effects, ids = [], [], []
        for i in range(ROWS):
            bid, shown = butlers[i % BUTLERS]
            vid = next(v["id"] for v in shown["versions"] if v["state"] == "published")
            run_id, send_id = f"{vid}-{new_id('msg')}", new_id("snd")
            at = now - timedelta(seconds=ROWS - i)
            runs.append({"id": run_id, "org_id": org, "butler_id": bid, "version_id": vid,
                         "trigger_event": "mail.received", "trigger_key": new_id("msg"), "trigger_facts": {},
                         "state": "finished", "state_at": at, "started_at": at, "self_provoked": i % 10 == 0})
            effects.append({"id": new_id("bre"), "org_id": org, "run_id": run_id, "seq": 1, "node_id": "p",
                            "node_type": "mail.send.propose", "step": "p#1", "outcome": "ok", "subject": send_id,
                            "statements": 1, "at": at})
            ids.append({"org_id": org, "rfc_message_id": f"{send_id}@example.test", "conversation_id": conversation,
                        "source_id": send_id, "created_at": at})
        conn.execute(butler_runs.insert(), runs)
        conn.execute(butler_run_effects.insert(), effects)
        conn.execute(message_ids.insert(), ids)
    with node.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
        conn.commit()
    return butlers[0][0], [ids[-1]["rfc_message_id"], ids[-5]["rfc_message_id"]]


def _captured(node: Node, act: Any) -> list[tuple[str, Any]]:
    """The statements ``act`` sends to the driver, with their parameters as sent."""
    seen: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        seen.append((statement, parameters))

    event.listen(node.engine, "before_cursor_execute", keep)
    try:
        act()
    finally:
        event.remove(node.engine, "before_cursor_execute", keep)
    return seen


def _plan(node: Node, statement: str, parameters: Any) -> list[str]:
    postgres = node.engine.dialect.name == "postgresql"
    with node.engine.connect() as conn:
        rows = conn.exec_driver_sql(("EXPLAIN " if postgres else "EXPLAIN QUERY PLAN ") + statement, parameters).all()
    return [str(r[0]) if postgres else str(r[-1]) for r in rows]


def _assert_seeks_only(node: Node, lines: list[str], tables: tuple[str, ...]) -> None:
    text_plan = "\n".join(lines)
    print(f"\n--- {node.engine.dialect.name} ---\n{text_plan}")
    if node.engine.dialect.name == "postgresql":
        assert "Seq Scan" not in text_plan, text_plan
        assert "Index" in text_plan, text_plan
        return
    for line in lines:
        assert not line.startswith("SCAN"), text_plan
    for table in tables:
        assert any(line.startswith(f"SEARCH {table} USING") for line in lines), text_plan


def test_the_detection_statements_seek_indexes_only(node: Node, installed: Any) -> None:
    butler_id, candidates = _fill(node, installed)
    org = installed.org_id

    def detect() -> None:
        with node.read() as conn:
            found = pause.provocations(conn, org, candidates)
            assert [p.butler_id for p in found]
            since = node.clock.now() - timedelta(hours=1)
            assert pause.self_provoked_since(conn, org, butler_id, since) >= 0

    provoking, counting = _captured(node, detect)
    _assert_seeks_only(node, _plan(node, *provoking), ("message_ids", "butler_run_effects", "butler_runs"))
    _assert_seeks_only(node, _plan(node, *counting), ("butler_runs",))
    with node.read() as conn:
        assert conn.execute(text("SELECT count(*) FROM butler_runs")).scalar_one() == ROWS
