"""The retention blob-reference check and the notify sweeper's age-out query are answered from indexes
(migration 0011), never by scanning the content tables.

SQLite's ``EXPLAIN QUERY PLAN`` is deterministic for a schema. PostgreSQL plans by statistics, and on the
near-empty tables of a test it would rightly prefer a sequential scan; with ``enable_seqscan = off`` it
still scans sequentially when no index can answer, so "no ``Seq Scan``" there means an index can.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, select

from mailnode.node import Node
from mailnode.outbound import sweeper
from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests


def _plan(node: Node, q: Select[Any]) -> str:
    with node.begin() as conn:
        compiled = q.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
        if conn.dialect.name == "sqlite":
            # Values do not change SQLite's plan; times go as text, as the column type stores them.
            params = tuple(str(v) if isinstance(v, datetime) else v
                           for v in (compiled.params[n] for n in compiled.positiontup or ()))
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + compiled.string, params).all()
            return "\n".join(str(r[-1]) for r in rows)
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        return "\n".join(str(r[0]) for r in conn.exec_driver_sql("EXPLAIN " + compiled.string,
                                                                 compiled.params).all())


def _scans(node: Node, plan: str, tables: tuple[str, ...]) -> list[str]:
    """Lines of ``plan`` that read one of ``tables`` whole."""
    lines = plan.splitlines()
    if node.engine.dialect.name == "sqlite":
        return [ln for ln in lines if any(ln.strip().startswith(f"SCAN {t}") for t in tables)]
    return [ln for ln in lines if "Seq Scan" in ln]


def test_the_blob_reference_check_reads_each_digest_column_by_index(node: Node) -> None:
    plan = _plan(node, retention_io.referenced_query("ab" * 32))
    for index in ("ix_messages_raw_sha256", "ix_ingress_receipts_sha256", "ix_send_manifests_body_typed_sha256",
                  "ix_send_manifests_body_normalised_sha256", "ix_send_manifests_rendered_sha256"):
        assert index in plan, plan
    assert _scans(node, plan, ("messages", "ingress_receipts", "send_manifests", "retained_content")) == [], plan


def test_the_sweepers_age_out_query_reads_by_mail_class_and_age(node: Node) -> None:
    q = (select(send_manifests).where(sweeper.sweep_queries(node, node.clock.now())["age_out"])
         .order_by(send_manifests.c.id).limit(50))
    plan = _plan(node, q)
    assert _scans(node, plan, ("send_manifests",)) == [], plan
    if node.engine.dialect.name == "sqlite":
        # The state is one IN, so every column of the index bounds the search, not the class alone.
        # (PostgreSQL's planner may pick another state index on an empty table; no scan is what holds.)
        assert "ix_send_manifests_age_out (mail_class=? AND state=? AND sealed_at<?)" in plan, plan
