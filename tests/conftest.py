"""Shared fixtures: a node on SQLite or PostgreSQL, the ASGI client, builders.

``MAILNODE_TEST_DB`` chooses the backend (``sqlite`` default, ``postgres``). PostgreSQL is found through
``MAILNODE_TEST_PG_URL`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``); the session creates
its own database and drops it at the end. When PostgreSQL is asked for but unreachable, the tests that
need it fail loudly rather than skip silently.

Each test starts from a schema at head with no rows (``database_url``, ``settings``): PostgreSQL migrates
once per session and empties the tables a test used; SQLite copies a file migrated once per session. Tests
of migrating from nothing ask for ``blank_database_url`` / ``blank_settings`` instead.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from mailnode.clock import FrozenClock
from mailnode.config import Settings
from mailnode.node import Node
from mailnode.wiring import wire_hooks

PG_URL = os.environ.get("MAILNODE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
BACKEND = os.environ.get("MAILNODE_TEST_DB", "sqlite")


# The tests are a composition root too: services that call a higher layer through ``mailnode.hooks``
# (cancelling a send ends the Butler run parked on it) run wired, as ``mailnode serve`` and the CLI do.
wire_hooks()


def _pg_admin_url() -> str:
    return PG_URL.replace("postgresql://", "postgresql+psycopg://", 1)


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session; its URL."""
    name = f"mailnode_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(_pg_admin_url(), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"PostgreSQL asked for (MAILNODE_TEST_DB=postgres) but unreachable at {PG_URL}: {exc}")
    base = PG_URL.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


#: The shape of a migrated, untouched PostgreSQL schema, read once per session after the first rebuild:
#: (tables, indexes, triggers). A test that changed the schema (a migration test downgrading, say) leaves
#: another shape or another alembic revision, and the next test rebuilds from nothing.
_PG_SHAPE: dict[str, Any] = {}

_SHAPE_SQL = text(
    "SELECT (SELECT string_agg(table_schema || '.' || table_name, ',' ORDER BY table_schema, table_name) "
    "        FROM information_schema.tables WHERE table_schema = 'public'),"
    "       (SELECT count(*) FROM pg_indexes WHERE schemaname = 'public'),"
    "       (SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND NOT t.tgisinternal)")


def _pg_reset(base: str, *, blank: bool) -> None:
    """Bring the session database to a migrated schema with no rows (or, ``blank``, no schema at all).

    Migrating from nothing costs most of a second per test on PostgreSQL (19 revisions of DDL); emptying
    an unchanged schema with one TRUNCATE costs a few milliseconds. Rows in DBOS's own tables go too, but
    DBOS's record of its migrations stays, so a launch does not redo them.
    """
    from mailnode.db import migrate

    engine = create_engine(base.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as c:
            # A previous test's pool or served process may still hold a connection (and its locks): end them
            # first so neither the TRUNCATE nor dropping the schema can wait on them.
            c.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()"))
            if not blank and _pg_unchanged(c, migrate.head_revisions()):
                tables = c.execute(text(
                    "SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables "
                    "WHERE schemaname IN ('public', 'dbos') AND tablename <> 'alembic_version' "
                    "AND tablename NOT LIKE '%migration%'")).scalars().all()
                # TRUNCATE makes a new file per table, empty or not: only the tables holding rows.
                probe = " UNION ALL ".join(f"SELECT '{t}' FROM {t} HAVING count(*) > 0" for t in tables)
                used = c.execute(text(probe)).scalars().all() if tables else []
                if used:
                    c.execute(text(f"TRUNCATE {', '.join(used)} RESTART IDENTITY CASCADE"))
                return
            c.execute(text("DROP SCHEMA public CASCADE"))
            c.execute(text("CREATE SCHEMA public"))
            c.execute(text("DROP SCHEMA IF EXISTS dbos CASCADE"))
        _PG_SHAPE.clear()
        if blank:
            return
        migrate.upgrade(engine)
        with engine.connect() as c:
            _PG_SHAPE["shape"] = tuple(c.execute(_SHAPE_SQL).one())
    finally:
        engine.dispose()


def _pg_unchanged(c: Any, heads: tuple[str, ...]) -> bool:
    if "shape" not in _PG_SHAPE:
        return False
    has_version = c.execute(text("SELECT to_regclass('public.alembic_version') IS NOT NULL")).scalar()
    if not has_version:
        return False
    current = tuple(sorted(c.execute(text("SELECT version_num FROM alembic_version")).scalars().all()))
    return current == heads and tuple(c.execute(_SHAPE_SQL).one()) == _PG_SHAPE["shape"]


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A database URL whose schema is at head with no rows: on SQLite "" (the node's default file, copied
    from a migrated template by ``settings``), on PostgreSQL the session database, emptied."""
    if BACKEND != "postgres":
        yield ""
        return
    base = request.getfixturevalue("pg_database")
    _pg_reset(base, blank=False)
    yield base


@pytest.fixture
def blank_database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A database URL with no schema at all (for tests of migrating from nothing): on SQLite "" with no
    template copied (use it with ``blank_settings``), on PostgreSQL the session database, its schemas
    dropped."""
    if BACKEND != "postgres":
        yield ""
        return
    base = request.getfixturevalue("pg_database")
    _pg_reset(base, blank=True)
    yield base


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database migrated to head once per session, copied into each test's data directory."""
    data_dir = tmp_path_factory.mktemp("template") / "node"
    n = Node.open(Settings(data_dir=data_dir, database_url=""))
    n.close()
    return data_dir / "mailnode.db"


@pytest.fixture
def settings(request: pytest.FixtureRequest, tmp_path: Path, database_url: str) -> Settings:
    """Settings for a node in a temporary data directory whose database is already at head (SQLite: a copy
    of the session's migrated template; migrating each test's file from nothing costs half a second)."""
    data_dir = tmp_path / "node"
    if BACKEND != "postgres":
        template: Path = request.getfixturevalue("_sqlite_template")
        data_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, data_dir / "mailnode.db")
    return Settings(data_dir=data_dir, database_url=database_url)


@pytest.fixture
def blank_settings(tmp_path: Path, blank_database_url: str) -> Settings:
    """Settings for a node whose database has no schema yet (for tests of migrating from nothing)."""
    return Settings(data_dir=tmp_path / "node", database_url=blank_database_url)


@pytest.fixture
def clock() -> FrozenClock:
    """A frozen clock tests move by hand."""
    return FrozenClock()


@pytest.fixture
def node(settings: Settings, clock: FrozenClock) -> Iterator[Node]:
    """A migrated node on the chosen backend."""
    n = Node.open(settings, clock=clock)
    yield n
    n.close()


@pytest.fixture
def installed(node: Node) -> Any:
    """A node after ``mailnode init`` (org example.test, admin alex@example.test, support@example.test)."""
    from mailnode.install import initialise

    return initialise(node, org="Example", domain="example.test", admin_email="alex@example.test")


@pytest.fixture
def api(node: Node) -> Any:
    """A TestClient over the ASGI app."""
    from fastapi.testclient import TestClient

    from mailnode.app import create_app

    with TestClient(create_app(node), raise_server_exceptions=False) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


#: The session's exit status, kept by ``pytest_sessionfinish`` for ``pytest_unconfigure``.
_EXIT: dict[str, int] = {}


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remember the exit status (``pytest_unconfigure`` may need to exit with it itself)."""
    _EXIT["status"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Exit with the session's status, naming them, when DBOS executor threads are still blocked.

    A run started in-process from sync code submits its coroutine to the event loop DBOS adopted at launch;
    when a test's loop stopped before that coroutine ran, the executor thread waits on it forever, and the
    interpreter's exit joins every executor thread, so a finished suite hung (CI ran into its limit after
    printing "5568 passed"). The results are printed by now; the served-node stop tests show ``serve`` itself
    exits. Nothing is hidden: the threads are named on standard error.
    """
    import sys
    import threading

    frames = sys._current_frames()

    def waits_on_a_loop(thread: threading.Thread) -> bool:
        frame = frames.get(thread.ident or -1)
        while frame is not None:
            if frame.f_code.co_name == "submit_coroutine":
                return True
            frame = frame.f_back
        return False

    stuck = [t.name for t in threading.enumerate() if t.is_alive() and not t.daemon and waits_on_a_loop(t)]
    if not stuck or "status" not in _EXIT:
        return
    print(f"\n{len(stuck)} DBOS executor thread(s) still blocked at exit ({', '.join(stuck)}): exiting "
          f"with the session's status {_EXIT['status']} without joining them", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_EXIT["status"])
