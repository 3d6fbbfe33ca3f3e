"""``Node``: the settings, database engine, clock and evidence store one process works with.

Services take a ``Connection`` in a transaction; ``node.begin()`` opens a write transaction (on SQLite,
``BEGIN IMMEDIATE``) and ``node.read()`` a read-only transaction (``READ ONLY`` on PostgreSQL; deferred,
on a connection with ``PRAGMA query_only`` on, on SQLite). Build one with ``Node.open(settings)``; tests pass a
``FrozenClock``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from mailnode.clock import Clock, SystemClock
from mailnode.config import Settings
from mailnode.db import migrate
from mailnode.db.engine import make_engine
from mailnode.db.meter import StatementMeter
from mailnode.evidence import EvidenceStore


@dataclass
class Node:
    """One process's handle on a node's storage."""

    settings: Settings
    engine: Engine
    clock: Clock = field(default_factory=SystemClock)
    evidence: EvidenceStore = field(init=False)
    meter: StatementMeter = field(init=False)

    def __post_init__(self) -> None:
        self.evidence = EvidenceStore(self.settings.evidence_dir)
        self.meter = StatementMeter.attach(self.engine)

    @classmethod
    def open(cls, settings: Settings, clock: Clock | None = None, migrate_to_head: bool = True) -> Node:
        """Create the data directory, connect, and (by default) upgrade the schema to head."""
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = make_engine(settings.resolved_database_url)
        if migrate_to_head:
            migrate.upgrade(engine)
        return cls(settings=settings, engine=engine, clock=clock or SystemClock())

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A write transaction: committed on success, rolled back on any exception (which propagates)."""
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction, read-only at the connection on both databases.

        PostgreSQL: ``READ ONLY``. SQLite: a deferred transaction on a connection with ``PRAGMA
        query_only`` on for the transaction's lifetime (set on the driver connection, so the statement
        meter does not count it, and switched off again before the connection goes back to the pool).
        Any write inside raises the driver's error on either database; the dry run relies on this.
        """
        with self.engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn = conn.execution_options(postgresql_readonly=True)
                with conn.begin():
                    yield conn
                return
            conn = conn.execution_options(mailnode_readonly=True)
            driver = conn.connection.driver_connection
            if driver is None:
                raise RuntimeError("the SQLite connection has no driver connection")
            driver.execute("PRAGMA query_only=ON")
            try:
                with conn.begin():
                    yield conn
            finally:
                if not conn.invalidated:
                    driver.execute("PRAGMA query_only=OFF")

    def close(self) -> None:
        """Release the engine's connections."""
        self.engine.dispose()
