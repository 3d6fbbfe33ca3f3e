"""Tables of the directory's contacts and principals: contact addresses, verification and sign-in codes, applications.

The provider breaker's tables live in ``schema/governance_provider.py``.
``contact_addresses``: where a person's notices go, and whether that address was verified (§4).
``verification_records``: one per person, the stored form of ``codes.verification.VerificationRecord``;
it is also the endpoint's cooldown, so a failed send keeps it with its code cleared.
``applications``: application principals (``app_...``), which hold tokens and relations like people (§6).
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, ForeignKey, Integer, String, Table, Text, UniqueConstraint

from mailnode.db.meta import UTCDateTime, metadata

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
    # 16). The same record as ``verification_records`` (the pure ``codes.verification`` rules run on it),
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
