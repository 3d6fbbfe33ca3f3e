"""The suppression list: one row per (organisation, address) the node will not hand mail to (issue 20).

``address`` is the recipient key of ``mailnode.addresses`` (the whole address lower-cased, the domain in
A-labels), so a recipient row matches when ``lower(send_recipients.address)`` equals it. ``reason`` is one of
``outbound.suppression.Reason`` (``hard_bounce | complaint | manual | import``). An automatic row names the
event that caused it (``event_id``: a ``send_recipient_events`` id; ``send_id`` and ``recipient_id`` when the
event was attributed); a manual row names the principal who added it (``added_by``). Removing an address
deletes its row; the removal (with its reason) is kept in the audit trail.
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, String, Table, Text

from mailnode.db.meta import UTCDateTime, metadata

suppressions = Table(
    "suppressions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("address", Text, nullable=False),
    Column("reason", String(20), nullable=False),
    Column("event_id", String(40), nullable=True),
    Column("send_id", String(40), nullable=True),
    Column("recipient_id", String(40), nullable=True),
    Column("added_by", String(40), nullable=True),
    #: Free words from whoever added it (a manual add's note, an import's source), or NULL.
    Column("note", Text, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Index("uq_suppressions_org_address", "org_id", "address", unique=True),
    #: The list, newest first by id (ids are ULIDs), per organisation.
    Index("ix_suppressions_org_id", "org_id", "id"),
)
