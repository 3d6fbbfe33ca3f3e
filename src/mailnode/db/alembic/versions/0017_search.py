"""The search index (issue 15): ``search_documents``, its full-text structures, and the backfill.

One row per message and per send: the text a search matches and shows and the facts its filters read
(``mailnode.schema.search``). On SQLite an FTS5 external-content table ``search_fts`` and three triggers
keep the full-text index in step (a frozen copy of ``search.tables.SQLITE_FTS``); on PostgreSQL a GIN
index over the ``tsvector`` column and a statistics target of 1,000 on it. Existing messages are indexed with their
subject, addresses and text body; existing sends with their subject and addresses only (their bodies are in the evidence
store, which a migration does not reach; ``search.index.reindex`` with the store indexes a send's body). Content
retention already deleted is not indexed.

Revision ID: 0017_search
Revises: 0016_conversation_answers
Create Date: 2026-12-01
"""

from __future__ import annotations

import heapq
from typing import Any

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta
import mailnode.schema.search

revision = "0017_search"
down_revision = "0016_conversation_answers"
branch_labels = None
depends_on = None

#: Frozen copy of ``mailnode.schema.search.SQLITE_FTS`` as this revision creates it.
SQLITE_FTS = (
    ("CREATE VIRTUAL TABLE search_fts USING fts5(subject, sender, recipients, body, content='search_documents', "
     "content_rowid='id', tokenize='unicode61 remove_diacritics 0')"),
    ("CREATE TRIGGER search_documents_ai AFTER INSERT ON search_documents BEGIN "
     "INSERT INTO search_fts(rowid, subject, sender, recipients, body) "
     "VALUES (new.id, new.subject, new.sender, new.recipients, new.body); END"),
    ("CREATE TRIGGER search_documents_ad AFTER DELETE ON search_documents BEGIN "
     "INSERT INTO search_fts(search_fts, rowid, subject, sender, recipients, body) "
     "VALUES ('delete', old.id, old.subject, old.sender, old.recipients, old.body); END"),
    ("CREATE TRIGGER search_documents_au AFTER UPDATE ON search_documents BEGIN "
     "INSERT INTO search_fts(search_fts, rowid, subject, sender, recipients, body) "
     "VALUES ('delete', old.id, old.subject, old.sender, old.recipients, old.body); "
     "INSERT INTO search_fts(rowid, subject, sender, recipients, body) "
     "VALUES (new.id, new.subject, new.sender, new.recipients, new.body); END"),
)
#: Rows read and written per backfill batch.
BATCH = 1000


def _backfill() -> None:
    from mailnode.search.documents import message_document, send_document
    from mailnode.search.index import upsert_statement

    bind = op.get_bind()
    utc = mailnode.db.meta.UTCDateTime()
    as_json = mailnode.db.meta.JSONText()
    purged: Any = sa.select(sa.column("source_id")).select_from(sa.table("retained_content")).where(
        sa.column("purged_at").is_not(None))
    msg: Any = sa.select(*(sa.column(c) for c in ("id", "org_id", "mailbox_id", "conversation_id", "case_id", "subject",
                                                   "from_name", "from_address", "envelope_from", "envelope_to",
                                                   "text_body", "attachments", "automated")),
                         sa.column("received_at", utc), sa.column("headers", as_json)).select_from(
        sa.table("messages")).where(sa.column("id").not_in(purged)).order_by(sa.column("received_at"), sa.column("id"))
    snd: Any = sa.select(*(sa.column(c) for c in ("id", "org_id", "mailbox_id", "conversation_id", "subject",
                                                   "envelope_from", "mail_class", "auto_submitted")),
                         sa.column("sealed_at", utc), *(sa.column(c, as_json) for c in ("to_addresses", "cc_addresses",
                                                                                         "bcc_addresses"))).select_from(
        sa.table("send_manifests")).where(sa.column("id").not_in(purged)).order_by(sa.column("sealed_at"),
                                                                                   sa.column("id"))
    # Results are newest first in the order rows were indexed (``search.run``): backfill oldest first,
    # messages and sends merged by when they were received or sealed.
    documents = heapq.merge((message_document(r) for r in bind.execute(msg).all()),
                            (send_document(r, None) for r in bind.execute(snd).all()),
                            key=lambda doc: (doc.at, doc.source_id))
    statement = upsert_statement(bind.dialect.name)
    batch: list[dict[str, object]] = []
    for doc in documents:
        batch.append(doc.params())
        if len(batch) >= BATCH:
            bind.execute(statement, batch)
            batch = []
    if batch:
        bind.execute(statement, batch)


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "search_documents",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("source_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("org_id", sa.String(length=40), nullable=False),
        sa.Column("mailbox_id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=True),
        sa.Column("case_id", sa.String(length=40), nullable=True),
        sa.Column("at", mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("sender", sa.Text(), nullable=False),
        sa.Column("recipients", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("attachments", sa.Integer(), nullable=False),
        sa.Column("automated", sa.Boolean(), nullable=False),
        sa.Column("vector", mailnode.schema.search.SearchVector(), nullable=True),
        sa.ForeignKeyConstraint(["org_id"], ["organisations.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("source_id"),
    )
    op.create_index("ix_search_documents_vector", "search_documents", ["vector"], unique=False,
                    postgresql_using="gin")
    if op.get_bind().dialect.name == "postgresql":
        # The planner must know a rare word is rare (``search.tables.POSTGRESQL_STATISTICS``).
        op.execute("ALTER TABLE search_documents ALTER COLUMN vector SET STATISTICS 1000")
    else:
        for statement in SQLITE_FTS:
            op.execute(statement)
    _backfill()


def downgrade() -> None:
    """Revert this revision."""
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TABLE search_fts")
    op.drop_index("ix_search_documents_vector", table_name="search_documents")
    op.drop_table("search_documents")
