"""The search index: one row per message and per send (``search_documents``) and its full-text structures.

The row holds what a search matches and shows: the subject, the sender, the recipients and the body text
(capped, ``search.documents``), the filters' facts (mailbox, case, date, attachments, automated) and, on
PostgreSQL, ``vector``: a ``tsvector`` (config ``simple``) over the same words, weighted A subject,
B sender, C recipients, D body, under a GIN index, with a larger statistics target so the planner
knows a rare word is rare (``POSTGRESQL_STATISTICS``). On SQLite ``vector`` stays NULL and an FTS5
external-content table, ``search_fts``, indexes the four text columns (tokenizer ``unicode61
remove_diacritics 0``), kept in step by three triggers. The FTS5 DDL is attached with ``after_create``
listeners, so ``metadata.create_all`` builds it too; migration ``0017_search`` carries its own frozen copy.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import DDL, Boolean, Column, ForeignKey, Index, Integer, String, Table, Text, event
from sqlalchemy.dialects.postgresql import TSVECTOR
from sqlalchemy.types import TypeDecorator

from mailnode.db.meta import UTCDateTime, metadata


class SearchVector(TypeDecorator[Any]):
    """``tsvector`` on PostgreSQL; plain (always NULL) text elsewhere, where FTS5 does the indexing."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        """``TSVECTOR`` on PostgreSQL, ``TEXT`` otherwise."""
        if dialect.name == "postgresql":
            return dialect.type_descriptor(TSVECTOR())
        return dialect.type_descriptor(Text())


search_documents = Table(
    "search_documents",
    metadata,
    #: The FTS5 rowid on SQLite (``content_rowid``); results are newest first by it (``search.run``).
    Column("id", Integer, primary_key=True, autoincrement=True),
    #: ``msg_...`` or ``snd_...``.
    Column("source_id", String(40), nullable=False, unique=True),
    #: ``message`` | ``send``.
    Column("kind", String(10), nullable=False),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("mailbox_id", String(40), nullable=False),
    Column("conversation_id", String(40), nullable=True),
    #: A message's case (``is:open`` and friends read the case live); NULL for a send.
    Column("case_id", String(40), nullable=True),
    #: When the message was received, or the send sealed (UTC): ``before:`` and ``after:`` read it.
    Column("at", UTCDateTime, nullable=False),
    Column("subject", Text, nullable=False),
    Column("sender", Text, nullable=False),
    #: One recipient (or one To/Cc header value) per line.
    Column("recipients", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("attachments", Integer, nullable=False),
    Column("automated", Boolean, nullable=False),
    Column("vector", SearchVector(), nullable=True),
    #: GIN on PostgreSQL; on SQLite a plain index over a column that stays NULL (one schema for both).
    Index("ix_search_documents_vector", "vector", postgresql_using="gin"),
)

#: The SQLite full-text table and what keeps it in step (``0017_search`` holds a frozen copy).
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
#: Tables SQLite makes for ``search_fts``; not in the metadata, so the drift check leaves them out.
SQLITE_FTS_TABLES = frozenset({"search_fts", "search_fts_data", "search_fts_idx", "search_fts_docsize",
                               "search_fts_config", "search_fts_content"})


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic's ``include_name`` hook: leave SQLite's FTS5 tables out of autogenerate and the drift check."""
    return not (type_ == "table" and name in SQLITE_FTS_TABLES)


#: PostgreSQL's planner estimates how many rows a word matches from the column's most common lexemes; with
#: the default list (100 -> 1,000 lexemes) a word it has never seen is guessed at 0.5% of the rows, and
#: over 100,000 messages it then scans every row newest first instead of asking the GIN index (measured by
#: bench/search.py: 200 ms for a rare word; 1.5 ms with this statistics target).
POSTGRESQL_STATISTICS = "ALTER TABLE search_documents ALTER COLUMN vector SET STATISTICS 1000"

for _statement in SQLITE_FTS:
    event.listen(search_documents, "after_create", DDL(_statement).execute_if(dialect="sqlite"))
event.listen(search_documents, "after_create", DDL(POSTGRESQL_STATISTICS).execute_if(dialect="postgresql"))
