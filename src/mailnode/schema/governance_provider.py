"""Tables of the provider-availability breaker (issue 18 moved them here out of the transactional-mail tables).

``provider_status``: one row per configured transport (spec/transactional.md §2), the stored form of
``governance.provider.ProviderStatus``; written after every hand-over through ``provider.record_outcome``.
``provider_requests``: the provider requests in flight, counted against the ceilings before they are made.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, String, Table

from mailnode.db.meta import UTCDateTime, metadata

provider_status = Table(
    "provider_status",
    metadata,
    Column("transport", String(20), primary_key=True),
    Column("daily_used", Integer, nullable=True),
    Column("daily_observed_at", UTCDateTime, nullable=True),
    Column("pause_kind", String(20), nullable=True),
    Column("paused_at", UTCDateTime, nullable=True),
    Column("unavailable_until", UTCDateTime, nullable=True),
    Column("pause_error", String(60), nullable=True),
    Column("last_success_at", UTCDateTime, nullable=True),
    Column("updated_at", UTCDateTime, nullable=False),
    #: The last request ticket issued (``provider_io.reserve``), and the tickets the reading and the pause
    #: came from, so an answer to an older request never overwrites either (issue 17 item 2).
    Column("requests_issued", Integer, nullable=False, server_default="0"),
    Column("reading_ticket", Integer, nullable=True),
    Column("pause_ticket", Integer, nullable=True),
)

#: Provider requests made and not yet answered (one row each, deleted with the answer): they count against
#: the class's ceiling before they are made. A worker that died leaves its row until ``lease_until``.
provider_requests = Table(
    "provider_requests",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("transport", String(20), nullable=False),
    Column("ticket", Integer, nullable=False),
    Column("mail_class", String(20), nullable=False),
    Column("manifest_id", String(40), nullable=True),
    Column("started_at", UTCDateTime, nullable=False),
    Column("lease_until", UTCDateTime, nullable=False),
    Index("ix_provider_requests_transport", "transport", "lease_until"),
)
