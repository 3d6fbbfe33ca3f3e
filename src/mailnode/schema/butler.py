"""Tables of Butlers and their versions, with the database rules that keep published programs frozen.

Issue 6 "Lifecycle"; spec/butler.md §10. A Butler (``btl_``) is a name in an organisation; its program
lives in ``butler_versions`` (``btv_``), one row per saved draft or publication, in the states
``draft | published | superseded``. The database itself enforces, so that no code path (nor a hand
with a SQL prompt) can break them:

- at most one ``draft`` and at most one ``published`` (live) version per Butler: two partial unique
  indexes, ``uq_butler_versions_one_draft`` and ``uq_butler_versions_one_live``;
- the columns of a state are coherent (a draft has no version number nor publisher; a published row
  has both; only a superseded row has ``superseded_at``): the CHECK ``ck_butler_versions_state_columns``;
- a published or superseded row is frozen: an UPDATE that changes anything but ``state`` and
  ``superseded_at`` is refused, the state only moves ``draft -> published -> superseded``, and such a
  row cannot be deleted. Triggers on SQLite and PostgreSQL raise ``E_BUTLER_VERSION_FROZEN`` (an
  ``IntegrityError`` on both drivers).

The trigger DDL is attached to the table with ``after_create`` listeners, so ``metadata.create_all``
builds it; migration ``0003_butlers`` carries its own frozen copy of the same statements.
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
    text,
)

from mailnode.db.meta import UTCDateTime, metadata

#: The states of a version, in the only order a row may move through them.
VERSION_STATES = ("draft", "published", "superseded")

butlers = Table(
    "butlers",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("name", Text, nullable=False),
    Column("created_by", String(40), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    #: Disabled by an administrator (``lifecycle.disable``): no new run opens; NULL while enabled.
    Column("disabled_at", UTCDateTime, nullable=True),
    Column("disabled_by", String(40), nullable=True),
    Column("disabled_reason", Text, nullable=True),
    UniqueConstraint("org_id", "name"),
)

butler_versions = Table(
    "butler_versions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("butler_id", String(40), ForeignKey("butlers.id"), nullable=False),
    Column("state", String(12), nullable=False),
    #: 1, 2, ... per Butler, given at publication; NULL while a draft.
    Column("version", Integer, nullable=True),
    #: The source exactly as submitted (UTF-8 text).
    Column("source_text", Text, nullable=False),
    #: The RFC 8785 canonical JSON of the parsed document; ``ast_sha256`` is over its UTF-8 bytes.
    Column("ast_json", Text, nullable=False),
    Column("ast_sha256", String(64), nullable=False),
    Column("source_sha256", String(64), nullable=False),
    #: The checker's price in SQL statements when this row was written (may reach 2^53 - 1).
    Column("price", BigInteger, nullable=False),
    Column("created_by", String(40), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    #: The sponsor: the administrator who published this version (frozen with the content).
    Column("published_by", String(40), nullable=True),
    Column("published_at", UTCDateTime, nullable=True),
    Column("superseded_at", UTCDateTime, nullable=True),
    CheckConstraint(
        "(state = 'draft' AND version IS NULL AND published_by IS NULL AND published_at IS NULL"
        " AND superseded_at IS NULL)"
        " OR (state = 'published' AND version IS NOT NULL AND published_by IS NOT NULL"
        " AND published_at IS NOT NULL AND superseded_at IS NULL)"
        " OR (state = 'superseded' AND version IS NOT NULL AND published_by IS NOT NULL"
        " AND published_at IS NOT NULL AND superseded_at IS NOT NULL)",
        name="state_columns",
    ),
    UniqueConstraint("butler_id", "version"),
    Index("ix_butler_versions_butler_state", "butler_id", "state"),
    Index("uq_butler_versions_one_draft", "butler_id", unique=True,
          sqlite_where=text("state = 'draft'"), postgresql_where=text("state = 'draft'")),
    Index("uq_butler_versions_one_live", "butler_id", unique=True,
          sqlite_where=text("state = 'published'"), postgresql_where=text("state = 'published'")),
)

# --- the freezing triggers ---------------------------------------------------------------------------
# Kept literally (not generated) so that what the database runs is readable here; migration
# 0003_butlers holds a copy, because a migration must keep building what it built when it was written.

#: The message every refusal starts with; tests and callers match on the code.
FROZEN = "E_BUTLER_VERSION_FROZEN"

SQLITE_TRIGGERS: tuple[str, ...] = (
    f"""CREATE TRIGGER trg_butler_versions_frozen_content
BEFORE UPDATE ON butler_versions
FOR EACH ROW WHEN OLD.state <> 'draft' AND (
    NEW.id IS NOT OLD.id OR NEW.org_id IS NOT OLD.org_id OR NEW.butler_id IS NOT OLD.butler_id
    OR NEW.version IS NOT OLD.version OR NEW.source_text IS NOT OLD.source_text
    OR NEW.ast_json IS NOT OLD.ast_json OR NEW.ast_sha256 IS NOT OLD.ast_sha256
    OR NEW.source_sha256 IS NOT OLD.source_sha256 OR NEW.price IS NOT OLD.price
    OR NEW.created_by IS NOT OLD.created_by OR NEW.created_at IS NOT OLD.created_at
    OR NEW.published_by IS NOT OLD.published_by OR NEW.published_at IS NOT OLD.published_at)
BEGIN
    SELECT RAISE(ABORT, '{FROZEN}: a published Butler version is frozen; publish a new version instead');
END""",
    f"""CREATE TRIGGER trg_butler_versions_state_forward
BEFORE UPDATE OF state, superseded_at ON butler_versions
FOR EACH ROW WHEN (OLD.state = 'draft' AND NEW.state NOT IN ('draft', 'published'))
    OR (OLD.state = 'published' AND NEW.state NOT IN ('published', 'superseded'))
    OR (OLD.state = 'superseded' AND (NEW.state <> 'superseded' OR NEW.superseded_at IS NOT OLD.superseded_at))
BEGIN
    SELECT RAISE(ABORT, '{FROZEN}: a Butler version moves only draft -> published -> superseded');
END""",
    f"""CREATE TRIGGER trg_butler_versions_no_delete
BEFORE DELETE ON butler_versions
FOR EACH ROW WHEN OLD.state <> 'draft'
BEGIN
    SELECT RAISE(ABORT, '{FROZEN}: a published Butler version is history and cannot be deleted');
END""",
)

POSTGRESQL_TRIGGERS: tuple[str, ...] = (
    f"""CREATE FUNCTION butler_versions_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.state <> 'draft' THEN
            RAISE EXCEPTION '{FROZEN}: a published Butler version is history and cannot be deleted'
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.state <> 'draft' AND (
        NEW.id IS DISTINCT FROM OLD.id OR NEW.org_id IS DISTINCT FROM OLD.org_id
        OR NEW.butler_id IS DISTINCT FROM OLD.butler_id OR NEW.version IS DISTINCT FROM OLD.version
        OR NEW.source_text IS DISTINCT FROM OLD.source_text OR NEW.ast_json IS DISTINCT FROM OLD.ast_json
        OR NEW.ast_sha256 IS DISTINCT FROM OLD.ast_sha256
        OR NEW.source_sha256 IS DISTINCT FROM OLD.source_sha256 OR NEW.price IS DISTINCT FROM OLD.price
        OR NEW.created_by IS DISTINCT FROM OLD.created_by OR NEW.created_at IS DISTINCT FROM OLD.created_at
        OR NEW.published_by IS DISTINCT FROM OLD.published_by
        OR NEW.published_at IS DISTINCT FROM OLD.published_at) THEN
        RAISE EXCEPTION '{FROZEN}: a published Butler version is frozen; publish a new version instead'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF (OLD.state = 'draft' AND NEW.state NOT IN ('draft', 'published'))
        OR (OLD.state = 'published' AND NEW.state NOT IN ('published', 'superseded'))
        OR (OLD.state = 'superseded' AND (NEW.state <> 'superseded'
            OR NEW.superseded_at IS DISTINCT FROM OLD.superseded_at)) THEN
        RAISE EXCEPTION '{FROZEN}: a Butler version moves only draft -> published -> superseded'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$""",
    """CREATE TRIGGER trg_butler_versions_frozen
BEFORE UPDATE OR DELETE ON butler_versions
FOR EACH ROW EXECUTE FUNCTION butler_versions_frozen()""",
)

for _statement in SQLITE_TRIGGERS:
    event.listen(butler_versions, "after_create", DDL(_statement).execute_if(dialect="sqlite"))
for _statement in POSTGRESQL_TRIGGERS:
    event.listen(butler_versions, "after_create", DDL(_statement).execute_if(dialect="postgresql"))
