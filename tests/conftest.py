"""Shared fixtures: a node on SQLite or PostgreSQL, the ASGI client, builders.

``MAILNODE_TEST_DB`` chooses the backend (``sqlite`` default, ``postgres``). PostgreSQL is found through
``MAILNODE_TEST_PG_URL`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``); the session creates
its own database and drops it at the end. When PostgreSQL is asked for but unreachable, the tests that
need it fail loudly rather than skip silently.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from mailnode.clock import FrozenClock
from mailnode.config import Settings
from mailnode.node import Node

PG_URL = os.environ.get("MAILNODE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
BACKEND = os.environ.get("MAILNODE_TEST_DB", "sqlite")


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


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database URL with an empty schema: SQLite in tmp_path, or a fresh PostgreSQL schema."""
    if BACKEND != "postgres":
        yield ""
        return
    base = request.getfixturevalue("pg_database")
    engine = create_engine(base.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        # A previous test's pool or served process may still hold a connection (and its locks): end them
        # first so dropping the schema cannot wait on them.
        c.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()"))
        c.execute(text("DROP SCHEMA public CASCADE"))
        c.execute(text("CREATE SCHEMA public"))
        c.execute(text("DROP SCHEMA IF EXISTS dbos CASCADE"))
    engine.dispose()
    yield base


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    """Settings for a node in a temporary data directory."""
    return Settings(data_dir=tmp_path / "node", database_url=database_url)


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
    from mailnode.directory.install import initialise

    return initialise(node, org="Example", domain="example.test", admin_email="alex@example.test")


@pytest.fixture
def api(node: Node) -> Any:
    """A TestClient over the ASGI app."""
    from fastapi.testclient import TestClient

    from mailnode.api.app import create_app

    with TestClient(create_app(node), raise_server_exceptions=False) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}
