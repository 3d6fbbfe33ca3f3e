"""Writing the search index: ``index`` a document, ``reindex`` a message or send from its stored row,
``forget`` what retention purged.

Called inside the transactions that create the rows: ``ingress.materialise`` (``reindex``, two statements),
``outbound.seal`` (``index``, one statement: the seal's statement budget) and retention's purge
(``forget``). Reading code that derives more text from a message (its HTML part, say) calls
``reindex(conn, message_id, extra_text=...)``; it replaces the row, so indexing twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, literal_column, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from mailnode.evidence import EvidenceStore
from mailnode.schema.mail_messages import messages
from mailnode.schema.outbound import send_manifests
from mailnode.schema.retention import retained_content
from mailnode.schema.search import search_documents
from mailnode.search.documents import Document, message_document, send_document

#: Columns the upsert writes (all but ``id`` and ``vector``).
_COLUMNS = ("source_id", "kind", "org_id", "mailbox_id", "conversation_id", "case_id", "at", "subject", "sender",
            "recipients", "body", "attachments", "automated")
#: tsvector weights per field: the query's ``subject:``, ``from:`` and ``to:`` restrict to A, B and C.
WEIGHTS = {"w_subject": "A", "w_sender": "B", "w_recipients": "C", "w_body": "D"}


def _vector() -> Any:
    """``setweight(to_tsvector('simple', :w_subject), 'A') || ... || setweight(..., 'D')`` (PostgreSQL)."""
    simple: Any = literal_column("'simple'::regconfig")
    parts = [func.setweight(func.to_tsvector(simple, bindparam(name)), literal_column(f"'{w}'"))
             for name, w in WEIGHTS.items()]
    out: Any = parts[0]
    for part in parts[1:]:
        out = out.op("||")(part)
    return out


def upsert_statement(dialect: str) -> Any:
    """The one statement that writes a document (insert, or replace the row of its ``source_id``); takes
    ``Document.params()``, one dict or many (executemany)."""
    values: dict[str, Any] = {c: bindparam(c) for c in _COLUMNS}
    if dialect == "postgresql":
        values["vector"] = _vector()
        ins: Any = pg_insert(search_documents).values(**values)
    else:
        ins = sqlite_insert(search_documents).values(**values)
    changed = {c: ins.excluded[c] for c in (*_COLUMNS[1:], *(("vector",) if dialect == "postgresql" else ()))}
    return ins.on_conflict_do_update(index_elements=["source_id"], set_=changed)


def index(conn: Connection, document: Document) -> None:
    """Write ``document`` (one statement)."""
    conn.execute(upsert_statement(conn.dialect.name), document.params())


def index_many(conn: Connection, documents: Sequence[Document]) -> None:
    """Write many documents in one executemany (backfill, the benchmark); nothing for an empty list."""
    if documents:
        conn.execute(upsert_statement(conn.dialect.name), [d.params() for d in documents])


def reindex(conn: Connection, source_id: str, *, extra_text: str | None = None,
            evidence: EvidenceStore | None = None, send_body: str | None = None) -> bool:
    """(Re)index the message (``msg_...``) or send (``snd_...``) ``source_id`` from its stored row; False
    when there is no such row, or retention deleted its content (nothing written). Two statements.

    A message's body is its stored text body plus ``extra_text``. A send's body is ``send_body`` when
    given, else its typed body read from ``evidence`` when given (the store's ``E_EVIDENCE_MISSING`` when
    the blob is gone), else none (subject and addresses only).
    """
    table = messages if source_id.startswith("msg_") else send_manifests
    rc = retained_content.c
    purged = select(rc.source_id).where(rc.source_id == source_id, rc.purged_at.is_not(None)).exists()
    row = conn.execute(select(table, purged.label("purged")).where(table.c.id == source_id)).first()
    if row is None or row.purged:
        return False
    if table is messages:
        index(conn, message_document(row, extra_text=extra_text))
        return True
    body = send_body
    if body is None and evidence is not None:
        body = evidence.get(row.body_typed_sha256).decode("utf-8")
    index(conn, send_document(row, body))
    return True


def forget(conn: Connection, source_ids: Iterable[str]) -> int:
    """Delete the documents of ``source_ids`` (retention purged their content); returns rows deleted. One
    statement (none for an empty list)."""
    ids = sorted(set(source_ids))
    if not ids:
        return 0
    return int(conn.execute(delete(search_documents).where(search_documents.c.source_id.in_(ids))).rowcount)
