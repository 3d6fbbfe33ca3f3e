"""The engine factory: SQLite (WAL, foreign keys, busy timeout, ``BEGIN IMMEDIATE`` for writes) or PostgreSQL.

SQLite's default deferred transactions let two writers both read and then deadlock on the upgrade to a
write lock; mailnode's writes therefore begin with ``BEGIN IMMEDIATE`` (one writer at a time, readers
unaffected under WAL). A connection with the execution option ``mailnode_readonly=True`` begins a
deferred transaction instead and, on PostgreSQL, a ``READ ONLY`` one.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url

from mailnode import budgets


def normalise_url(url: str) -> str:
    """Pick the driver mailnode uses: ``postgresql://`` becomes ``postgresql+psycopg://``."""
    u = make_url(url)
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    return u.render_as_string(hide_password=False)


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create the engine for ``url`` with mailnode's connection settings applied."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": budgets.SQLITE_BUSY_TIMEOUT_MS / 1000},
            **kwargs,
        )
        _sqlite_setup(engine)
        return engine
    return create_engine(url, pool_pre_ping=True, **kwargs)


def _sqlite_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, record: Any) -> None:
        # Take transaction control away from pysqlite so BEGIN is ours to emit.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(budgets.SQLITE_BUSY_TIMEOUT_MS)}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        readonly = conn.get_execution_options().get("mailnode_readonly", False)
        # Sent on the driver connection directly, so the statement meter does not count it.
        conn.connection.driver_connection.execute("BEGIN" if readonly else "BEGIN IMMEDIATE")
