"""Tables of notices (issue 9; spec/transactional.md §1 and §5).

- ``notices``: one row per (kind, episode, recipient), unique on ``dedup_key``; ``send_id`` once sealed.
- ``notice_trip_episodes``: each breaker's current trip episode (``notices.rules.TripEpisode``).
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, String, Table, Text, text

from mailnode.db.meta import JSONText, UTCDateTime, metadata

notices = Table(
    "notices",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("dedup_key", String(200), nullable=False),
    Column("kind", String(30), nullable=False),
    Column("episode", String(80), nullable=False),
    Column("recipient_user_id", String(40), nullable=False),
    Column("address", Text, nullable=False),
    #: The content rows (``msg_`` / ``snd_`` ids) this notice is about; retained while it is undelivered.
    Column("about", JSONText, nullable=False),
    Column("subject", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("send_id", String(40), nullable=True),
    Index("uq_notices_dedup_key", "dedup_key", unique=True),
    Index("ix_notices_unsealed", "org_id", "created_at",
          sqlite_where=text("send_id IS NULL"), postgresql_where=text("send_id IS NULL")),
    Index("ix_notices_send", "send_id"),
)

notice_trip_episodes = Table(
    "notice_trip_episodes",
    metadata,
    Column("org_id", String(40), ForeignKey("organisations.id"), primary_key=True),
    Column("breaker", String(40), primary_key=True),
    Column("started_at", UTCDateTime, nullable=False),
    Column("last_tripped_at", UTCDateTime, nullable=False),
    Column("cleared_at", UTCDateTime, nullable=True),
)
