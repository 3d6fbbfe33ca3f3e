"""Tables of the directory: organisations, users, teams, members, API tokens, domains, relationship tuples."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, String, Table, Text, UniqueConstraint

from mailnode.db.meta import UTCDateTime, metadata

organisations = Table(
    "organisations",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("created_at", UTCDateTime, nullable=False),
)

users = Table(
    "users",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("email", Text, nullable=False),
    Column("name", Text, nullable=False, server_default=""),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("org_id", "email"),
)

teams = Table(
    "teams",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("name", Text, nullable=False),
    Column("created_by", String(40), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("org_id", "name"),
)

team_members = Table(
    "team_members",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=False),
    Column("user_id", String(40), ForeignKey("users.id"), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("org_id", "user_id", "team_id"),
)

#: Principals that hold tokens: users (``usr_``) and applications (``app_``).
api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("principal_id", String(40), nullable=False),
    Column("token_sha256", String(64), nullable=False, unique=True),
    Column("label", Text, nullable=False, server_default=""),
    Column("created_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime, nullable=True),
    # The token this one was minted with (POST /api/tokens); revoking it revokes this one. NULL: minted by
    # the installer or by an administrator for an application.
    Column("parent_token_id", String(40), nullable=True),
    Index("ix_api_tokens_parent_token_id", "parent_token_id"),
)

domains = Table(
    "domains",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("domain", Text, nullable=False, unique=True),
    Column("created_at", UTCDateTime, nullable=False),
)

relationship_tuples = Table(
    "relationship_tuples",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("subject_id", String(40), nullable=False),
    Column("relation", String(40), nullable=False),
    Column("object_type", String(20), nullable=False),
    Column("object_id", String(40), nullable=False),
    Column("created_by", String(40), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("org_id", "subject_id", "object_type", "relation", "object_id"),
    Index("ix_relationship_tuples_object", "org_id", "object_type", "object_id", "relation"),
)
