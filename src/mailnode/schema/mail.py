"""Tables of mailboxes and their addresses."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Integer, String, Table, Text

from mailnode.db.meta import UTCDateTime, metadata

mailboxes = Table(
    "mailboxes",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("name", Text, nullable=False),
    #: NULL means the default of budgets.SEND_HOLD_WINDOW_DEFAULT_SECONDS.
    Column("hold_window_seconds", Integer, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
)

#: One row per address; an address belongs to one mailbox on the whole node (mail is routed by it).
mailbox_addresses = Table(
    "mailbox_addresses",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("mailbox_id", String(40), ForeignKey("mailboxes.id"), nullable=False, index=True),
    Column("address", Text, nullable=False, unique=True),
    Column("created_at", UTCDateTime, nullable=False),
)
