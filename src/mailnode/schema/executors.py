"""Executor liveness: one row per ``mailnode serve`` process that ever ran on this database (issue 19).

``executor_id`` is the process's DBOS executor id. The process writes ``beat_at`` every
``budgets.EXECUTOR_HEARTBEAT_SECONDS`` and ``stopped_at`` when it stops gracefully; ``host`` and ``pid`` say
where it ran, so a process on the same host can tell a dead predecessor at once. A survivor that judges the
process dead (``liveness.takeover_verdict``) claims the row (``taken_over_by``, ``taken_over_at``) with one
conditional update, recovers its pending durable work, then writes ``recovered_at``; the row is kept as the
record of that takeover (the audit trail holds ``runtime.executor_taken_over`` too).
"""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, String, Table

from mailnode.db.meta import UTCDateTime, metadata

executors = Table(
    "executors",
    metadata,
    Column("executor_id", String(200), primary_key=True),
    Column("role", String(20), nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("beat_at", UTCDateTime, nullable=False),
    Column("stopped_at", UTCDateTime, nullable=True),
    Column("taken_over_by", String(200), nullable=True),
    Column("taken_over_at", UTCDateTime, nullable=True),
    Column("recovered_at", UTCDateTime, nullable=True),
    #: The rows a takeover pass reads: not yet recovered.
    Index("ix_executors_unrecovered", "recovered_at", "beat_at"),
)
