"""Telling a unique-constraint violation apart from every other integrity error, on both databases.

Code that treats "already recorded" as success (an event deduplicated on its source id, an idempotency
key taken by a racing request) must match the one unique index it relies on and re-raise anything else:
a foreign-key or NOT NULL violation is a defect, not a duplicate. PostgreSQL names the violated index
(``exc.orig.diag.constraint_name``, SQLSTATE 23505); SQLite names only the table and columns, in the
message ``UNIQUE constraint failed: <table>.<col>, <table>.<col>`` (``sqlite3.IntegrityError``), so the
index is matched by its columns there.
"""

from __future__ import annotations

from sqlalchemy import Index, Table
from sqlalchemy.exc import IntegrityError

#: PostgreSQL's SQLSTATE for ``unique_violation`` (PostgreSQL documentation, Appendix A).
PG_UNIQUE_VIOLATION = "23505"


def unique_index(table: Table, name: str) -> Index:
    """The unique index ``name`` of ``table``; ``LookupError`` when the table has no such unique index
    (a defect in the caller: it names an index the schema does not have)."""
    for index in table.indexes:
        if index.name == name and index.unique:
            return index
    raise LookupError(f"{table.name} has no unique index {name!r}")


def sqlite_unique_message(index: Index) -> str:
    """The text SQLite puts in its error for a violation of ``index``:
    ``UNIQUE constraint failed: <table>.<col>, ...`` in the index's column order. Pure."""
    table = index.table
    if table is None:
        raise LookupError(f"index {index.name!r} belongs to no table")
    columns = ", ".join(f"{table.name}.{c.name}" for c in index.columns)
    return f"UNIQUE constraint failed: {columns}"


def violates(exc: IntegrityError, table: Table, name: str) -> bool:
    """Whether ``exc`` is a violation of the unique index ``name`` of ``table`` and of nothing else.

    PostgreSQL: SQLSTATE 23505 and ``diag.constraint_name == name``. SQLite: the message is exactly
    ``sqlite_unique_message`` of the index. Any other integrity error (foreign key, NOT NULL, CHECK,
    another unique index) is False, so the caller re-raises it.
    """
    index = unique_index(table, name)
    orig = exc.orig
    diag = getattr(orig, "diag", None)
    if diag is not None:
        return getattr(orig, "sqlstate", None) == PG_UNIQUE_VIOLATION and diag.constraint_name == name
    return str(orig) == sqlite_unique_message(index)
