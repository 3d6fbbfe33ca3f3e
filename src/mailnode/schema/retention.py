"""Tables of retention and legal holds (issue 9 part B; spec/transactional.md §5, spec/outbound.md §7).

- ``holds``: a legal hold on one mailbox, in force while ``lifted_at`` is NULL; it covers content of that
  mailbox whose time lies in ``[from_date, to_date]`` (NULL bound = unbounded). ``hold_lifts``: one row per
  request to lift a hold (the subject of a ``hold_lift`` approval, so a refused request can be asked again).
- ``retention_settings``: an organisation's content retention per kind and its ceiling (no row: the
  defaults in ``budgets.py``).
- ``retained_content``: the retention ledger, one row per piece of content (``inbound_raw`` for a message,
  ``sealed_body`` for a send). ``digests`` is the pointer to the evidence blobs; deleting content clears it
  and sets ``purged_at``, and the row stays as the record. ``retain_until`` is written by the notice sweeper.
- ``sweep_cursors``: where a sweep left off, per organisation and sweep name (the retention and notice sweeps).

The notices' own tables are in ``schema/notices.py``.
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, String, Table, Text

from mailnode.db.meta import JSONText, UTCDateTime, metadata

holds = Table(
    "holds",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("mailbox_id", String(40), ForeignKey("mailboxes.id"), nullable=False),
    Column("matter_id", Text, nullable=True),
    Column("from_date", UTCDateTime, nullable=True),
    Column("to_date", UTCDateTime, nullable=True),
    Column("placed_by", String(40), nullable=False),
    Column("placed_at", UTCDateTime, nullable=False),
    Column("lifted_at", UTCDateTime, nullable=True),
    Column("lifted_reason", Text, nullable=True),
    Column("lift_id", String(40), nullable=True),
    Index("ix_holds_mailbox", "org_id", "mailbox_id"),
)

hold_lifts = Table(
    "hold_lifts",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("hold_id", String(40), ForeignKey("holds.id"), nullable=False),
    Column("reason", Text, nullable=False),
    Column("requested_by", String(40), nullable=False),
    Column("requested_at", UTCDateTime, nullable=False),
    Index("ix_hold_lifts_hold", "hold_id"),
)

retention_settings = Table(
    "retention_settings",
    metadata,
    Column("org_id", String(40), ForeignKey("organisations.id"), primary_key=True),
    Column("inbound_raw_seconds", Integer, nullable=False),
    Column("sealed_body_seconds", Integer, nullable=False),
    Column("ceiling_seconds", Integer, nullable=False),
    Column("updated_by", String(40), nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

retained_content = Table(
    "retained_content",
    metadata,
    #: The content's own row id: ``msg_...`` (inbound_raw) or ``snd_...`` (sealed_body).
    Column("source_id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("mailbox_id", String(40), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    #: The evidence digests this content consists of; NULL once purged.
    Column("digests", JSONText, nullable=True),
    Column("retain_until", UTCDateTime, nullable=True),
    Column("purged_at", UTCDateTime, nullable=True),
    #: The hold ids the last ``hold.blocked`` entry about this row named (one entry per hold episode).
    Column("hold_blocked_by", JSONText, nullable=True),
    Index("ix_retained_content_scan", "org_id", "created_at", "source_id"),
)

sweep_cursors = Table(
    "sweep_cursors",
    metadata,
    Column("org_id", String(40), ForeignKey("organisations.id"), primary_key=True),
    Column("name", String(40), primary_key=True),
    Column("at", UTCDateTime, nullable=True),
    Column("key", String(80), nullable=True),
    Column("seq", Integer, nullable=True),
)
