"""Storage: migrations agree with the tables, the statement meter counts, times come back aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import select

from mailnode import authz
from mailnode.db import migrate
from mailnode.schema import metadata
from mailnode.schema.directory import organisations
from mailnode.schema.search import include_name


def test_migrations_and_tables_agree(node: Any) -> None:
    with node.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"include_name": include_name}), metadata)
    assert diff == [], f"tables and migrations disagree; generate a revision: {diff}"
    assert migrate.current_revisions(node.engine) == migrate.head_revisions()


def test_upgrade_is_idempotent(node: Any) -> None:
    migrate.upgrade(node.engine)
    assert migrate.current_revisions(node.engine) == migrate.head_revisions()


def test_the_meter_counts_one_statement_for_a_relation_check(node: Any, installed: Any) -> None:
    with node.read() as conn, node.meter.measure(keep_sql=True) as m:
        assert authz.holds(conn, installed.org_id, installed.user_id, "send.propose", "mailbox",
                           installed.mailbox_id)
    assert m.count == 1, m.statements


def test_the_meter_counts_a_mailbox_creation(node: Any, installed: Any) -> None:
    from mailnode.mail.mailboxes import create_mailbox

    with node.begin() as conn, node.meter.measure(keep_sql=True) as m:
        create_mailbox(conn, org_id=installed.org_id, actor_id=installed.user_id, at=node.clock.now(),
                       name="Sales", addresses=["sales@example.test"])
    # admin check 1, domains 1, address taken 1, insert mailbox 1, insert address 1, audit tip 1,
    # audit insert 1 (+ savepoint control is not a statement), read back 2 (row, addresses).
    assert m.count == 9, m.statements


def test_times_round_trip_as_aware_utc(node: Any, installed: Any) -> None:
    with node.read() as conn:
        created = conn.execute(select(organisations.c.created_at)).scalar_one()
    assert created.tzinfo is not None and created.utcoffset().total_seconds() == 0
    assert created == node.clock.now()
    assert isinstance(created, datetime) and created.tzinfo in (UTC,) or created.utcoffset() is not None
