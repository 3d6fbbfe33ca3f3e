"""Tables of transactional mail: the provider breaker, contact addresses, verification records, applications.

``provider_status``: one row per configured transport (spec/transactional.md §2), the stored form of
``notify.provider.ProviderStatus``; written after every hand-over through ``provider.record_outcome``.
``provider_requests``: the provider requests in flight, counted against the ceilings before they are made.
``contact_addresses``: where a person's notices go, and whether that address was verified (§4).
``verification_records``: one per person, the stored form of ``notify.verification.VerificationRecord``;
it is also the endpoint's cooldown, so a failed send keeps it with its code cleared.
``applications``: application principals (``app_...``), which hold tokens and relations like people (§6).
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, ForeignKey, Index, Integer, String, Table, Text, UniqueConstraint

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

contact_addresses = Table(
    "contact_addresses",
    metadata,
    Column("user_id", String(40), ForeignKey("users.id"), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("address", Text, nullable=False),
    Column("verified", Boolean, nullable=False),
    Column("verified_at", UTCDateTime, nullable=True),
    Column("updated_at", UTCDateTime, nullable=False),
)

verification_records = Table(
    "verification_records",
    metadata,
    Column("user_id", String(40), ForeignKey("users.id"), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("address", Text, nullable=False),
    Column("code_hash", String(64), nullable=True),
    Column("sent_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("send_id", String(40), nullable=True),
)

signin_codes = Table(
    # A person's one-time code to sign in to the web inbox, mailed to their verified contact address (issue
    # 16). The same record as ``verification_records`` (the pure ``notify.verification`` rules run on it),
    # kept apart so asking for a sign-in code never replaces a pending contact-address code.
    "signin_codes",
    metadata,
    Column("user_id", String(40), ForeignKey("users.id"), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("address", Text, nullable=False),
    Column("code_hash", String(64), nullable=True),
    Column("sent_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("send_id", String(40), nullable=True),
)

applications = Table(
    "applications",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("name", Text, nullable=False),
    Column("created_by", String(40), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("org_id", "name"),
)
