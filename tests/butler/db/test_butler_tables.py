"""The database's own rules for Butler versions, exercised with plain SQL on SQLite and PostgreSQL.

One draft and one live version per Butler (partial unique indexes), coherent columns per state (CHECK),
and published rows frozen (triggers), both when built by the migrations and by ``metadata.create_all``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, create_engine, delete, insert, select, text, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from mailnode.db.engine import make_engine
from mailnode.ids import new_id
from mailnode.schema import metadata
from mailnode.schema.butler import butler_versions, butlers
from mailnode.schema.directory import organisations
from tests.conftest import BACKEND, PG_URL

from .conftest import program

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
V = butler_versions.c


def _org_and_butler(conn: Connection) -> str:
    org = new_id("org")
    conn.execute(insert(organisations).values(id=org, name=f"Org {org}", created_at=AT))
    bid = new_id("btl")
    conn.execute(insert(butlers).values(id=bid, org_id=org, name="Quiet", created_by="usr_x", created_at=AT))
    return bid


def _version(conn: Connection, bid: str, state: str, version: int | None = None, **extra: Any) -> str:
    org = conn.execute(select(butlers.c.org_id).where(butlers.c.id == bid)).scalar_one()
    vid = new_id("btv")
    published = state != "draft"
    row = {"id": vid, "org_id": org, "butler_id": bid, "state": state, "version": version, "source_text": program(),
           "ast_json": "{}", "ast_sha256": "a" * 64, "source_sha256": "b" * 64, "price": 0, "created_by": "usr_x",
           "created_at": AT, "published_by": "usr_x" if published else None,
           "published_at": AT if published else None,
           "superseded_at": AT + timedelta(hours=1) if state == "superseded" else None}
    row.update(extra)
    conn.execute(insert(butler_versions).values(**row))
    return vid


def _refused(engine: Engine, statement: Any) -> str:
    """Run ``statement`` in its own transaction; it must be refused. Returns the database's message."""
    with pytest.raises(IntegrityError) as raised, engine.begin() as conn:
        conn.execute(statement)
    return str(raised.value.orig)


# The columns a published version may never change, with a value to try.
FROZEN_CHANGES = {
    "source_text": program("edited by hand"),
    "ast_json": '{"edited":true}',
    "ast_sha256": "c" * 64,
    "source_sha256": "d" * 64,
    "published_by": "usr_someone_else",
    "published_at": AT + timedelta(days=1),
    "version": 9,
    "price": 1,
    "created_by": "usr_someone_else",
}


@pytest.fixture
def published(node: Any) -> tuple[Engine, str, str]:
    """(engine, butler id, id of its published version 1) on the migrated database."""
    with node.begin() as conn:
        bid = _org_and_butler(conn)
        vid = _version(conn, bid, "published", 1)
    return node.engine, bid, vid


@pytest.mark.parametrize("column", sorted(FROZEN_CHANGES))
def test_an_update_of_a_published_row_is_refused_by_the_trigger(published: Any, column: str) -> None:
    engine, _, vid = published
    message = _refused(engine, update(butler_versions).where(V.id == vid).values({column: FROZEN_CHANGES[column]}))
    assert "E_BUTLER_VERSION_FROZEN" in message
    with engine.connect() as conn:
        row = conn.execute(select(butler_versions).where(V.id == vid)).one()
    assert row.source_text == program() and row.published_by == "usr_x" and row.version == 1


def test_a_published_row_may_only_become_superseded_and_then_nothing(published: Any) -> None:
    engine, _, vid = published
    assert "E_BUTLER_VERSION_FROZEN" in _refused(
        engine, update(butler_versions).where(V.id == vid).values(state="draft", version=None, published_by=None,
                                                                  published_at=None))
    with engine.begin() as conn:
        conn.execute(update(butler_versions).where(V.id == vid).values(state="superseded", superseded_at=AT))
    for change in ({"state": "published", "superseded_at": None}, {"superseded_at": AT + timedelta(days=2)},
                   {"source_text": program("rewritten history")}):
        assert "E_BUTLER_VERSION_FROZEN" in _refused(engine, update(butler_versions).where(V.id == vid).values(change))


def test_published_history_cannot_be_deleted_but_a_draft_can(published: Any) -> None:
    engine, bid, vid = published
    assert "E_BUTLER_VERSION_FROZEN" in _refused(engine, delete(butler_versions).where(V.id == vid))
    with engine.begin() as conn:
        draft = _version(conn, bid, "draft")
        assert conn.execute(delete(butler_versions).where(V.id == draft)).rowcount == 1


def test_a_draft_may_not_skip_publication(published: Any) -> None:
    engine, bid, _ = published
    with engine.begin() as conn:
        draft = _version(conn, bid, "draft")
    assert "E_BUTLER_VERSION_FROZEN" in _refused(engine, update(butler_versions).where(V.id == draft).values(
        state="superseded", version=2, published_by="usr_x", published_at=AT, superseded_at=AT))


def test_a_draft_row_is_editable(published: Any) -> None:
    engine, bid, _ = published
    with engine.begin() as conn:
        draft = _version(conn, bid, "draft")
        conn.execute(update(butler_versions).where(V.id == draft).values(source_text=program("edited")))
        assert conn.execute(select(V.source_text).where(V.id == draft)).scalar_one() == program("edited")


def test_the_partial_unique_indexes_refuse_a_second_draft_and_a_second_live_version(published: Any) -> None:
    engine, bid, _ = published
    with engine.begin() as conn:
        _version(conn, bid, "draft")
    with pytest.raises(IntegrityError), engine.begin() as conn:
        _version(conn, bid, "draft")
    with pytest.raises(IntegrityError), engine.begin() as conn:
        _version(conn, bid, "published", 2)
    # Superseded versions are many.
    with engine.begin() as conn:
        _version(conn, bid, "superseded", 3)
        _version(conn, bid, "superseded", 4)
        assert conn.execute(select(V.id).where(V.butler_id == bid)).all().__len__() == 4


@pytest.mark.parametrize("state,extra", [
    ("draft", {"published_by": "usr_x"}),
    ("draft", {"version": 1}),
    ("published", {"published_by": None}),
    ("published", {"superseded_at": AT}),
    ("superseded", {"superseded_at": None}),
    ("retired", {}),
])
def test_the_columns_of_a_state_are_coherent(published: Any, state: str, extra: dict[str, Any]) -> None:
    engine, bid, _ = published
    with pytest.raises(IntegrityError), engine.begin() as conn:
        _version(conn, bid, state, **{"version": None if state == "draft" else 7, **extra})


# --- the same rules when the schema is built by metadata.create_all ---------------------------------

@pytest.fixture
def created_all(tmp_path: Path) -> Iterator[Engine]:
    """An engine on a new, empty database whose schema ``metadata.create_all`` built."""
    if BACKEND != "postgres":
        engine = make_engine(f"sqlite:///{tmp_path / 'created_all.db'}")
        metadata.create_all(engine)
        yield engine
        engine.dispose()
        return
    admin = create_engine(PG_URL.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT")
    name = f"mailnode_created_all_{uuid.uuid4().hex[:10]}"
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    engine = make_engine(f"{PG_URL.rsplit('/', 1)[0]}/{name}")
    try:
        metadata.create_all(engine)
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _trigger_definitions(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            return [r.sql for r in conn.execute(text(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'butler_versions' ORDER BY name"))]
        triggers = [r[0] for r in conn.execute(text(
            "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal "
            "AND tgrelid = 'butler_versions'::regclass ORDER BY tgname"))]
        functions = [r[0] for r in conn.execute(text(
            "SELECT prosrc FROM pg_proc WHERE proname = 'butler_versions_frozen'"))]
        return triggers + functions


def test_create_all_builds_the_triggers_the_migrations_build(node: Any, created_all: Engine) -> None:
    built = _trigger_definitions(created_all)
    assert len(built) == (3 if created_all.dialect.name == "sqlite" else 2)
    assert built == _trigger_definitions(node.engine)


def test_create_all_freezes_a_published_row_too(created_all: Engine) -> None:
    with created_all.begin() as conn:
        vid = _version(conn, _org_and_butler(conn), "published", 1)
    message = _refused(created_all, update(butler_versions).where(V.id == vid).values(source_text="{}"))
    assert "E_BUTLER_VERSION_FROZEN" in message
