"""The index itself: the migration backfills what existed before it, a body is indexed up to its budget and
no further (so PostgreSQL never meets a tsvector it refuses), and ``reindex`` is the one call that adds text
derived later (a message's HTML part)."""

from __future__ import annotations

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import func, select, text

from mailnode import budgets
from mailnode.db import migrate
from mailnode.schema.ingress import ingress_receipts
from mailnode.schema.search import search_documents
from mailnode.search import index as search_index
from tests.search.conftest import World, mail


def test_the_migration_indexes_the_mail_that_existed_before_it(world: World) -> None:
    old = world.deliver(mail(subject="Warranty claim", body="the kettle leaks water"))
    sent = world.api.post("/api/sends", json={"mailbox_id": world.installed.mailbox_id, "to": ["alice@remote.test"],
                                              "subject": "Re: Warranty claim", "body": "We replace the kettle.",
                                              "in_reply_to_message_id": old}, headers=world.admin).json()["send"]["id"]
    engine = world.node.engine
    parent = ScriptDirectory.from_config(migrate.alembic_config()).get_revision("0017_search").down_revision
    cfg = migrate.alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, str(parent))
    with engine.connect() as conn:
        assert "search_documents" not in {r[0] for r in conn.execute(text(
            "SELECT name FROM sqlite_master WHERE type = 'table'" if engine.dialect.name == "sqlite" else
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))}
    migrate.upgrade(engine)
    assert world.found("leaks") == [old]
    assert world.found("from:alice kettle") == [old]
    # A send's body is in the evidence store, which a migration does not reach: subject and addresses only.
    assert world.found("subject:warranty") == [sent, old]
    assert world.found("replace") == []
    with world.node.begin() as conn:
        assert search_index.reindex(conn, sent, evidence=world.node.evidence)
    assert world.found("replace") == [sent]


def test_a_body_is_indexed_up_to_its_budget(world: World) -> None:
    # The worst case for a tsvector: distinct one-letter words of four UTF-8 bytes each (CJK Extension B).
    letters = "".join(f"{chr(0x20000 + i)} " for i in range(budgets.SEARCH_BODY_MAX_CHARS // 2))
    body = "zqxfirst " + letters + " zqxbeyond"
    assert len(body) > budgets.SEARCH_BODY_MAX_CHARS
    mid = world.deliver(mail(subject="Huge", body=body))
    with world.node.read() as conn:
        receipt = conn.execute(select(ingress_receipts.c.quarantined_at, ingress_receipts.c.message_id)).one()
        assert receipt == (None, mid)
        stored = conn.execute(select(func.length(search_documents.c.body))).scalar_one()
        assert stored == budgets.SEARCH_BODY_MAX_CHARS
        if world.node.engine.dialect.name == "postgresql":
            size = conn.execute(text("SELECT pg_column_size(vector) FROM search_documents")).scalar_one()
            assert size < 1024 * 1024, size
    assert world.found("zqxfirst") == [mid]
    assert world.found("zqxbeyond") == []


def test_reindex_adds_text_derived_later_and_replaces_the_row(world: World) -> None:
    mid = world.deliver(mail(subject="Newsletter", body="see the web version"))
    assert world.found("zqxhtmlonly") == []
    with world.node.begin() as conn:
        assert search_index.reindex(conn, mid, extra_text="Words only the HTML part had: zqxhtmlonly.")
        assert search_index.reindex(conn, mid, extra_text="Words only the HTML part had: zqxhtmlonly.")
        assert not search_index.reindex(conn, "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert world.found("zqxhtmlonly") == [mid]
    assert world.found("web version") == [mid]
    with world.node.read() as conn:
        assert conn.execute(select(func.count()).select_from(search_documents)).scalar_one() == 1
