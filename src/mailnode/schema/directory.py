"""Tables of the directory: organisations, users, teams, members, API tokens, web sessions, domains,
relationship tuples."""

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

web_sessions = Table(
    "web_sessions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    # A person (usr_); an application never signs in to the web inbox.
    Column("principal_id", String(40), nullable=False),
    # The SHA-256 of the cookie's random secret; the secret itself is never stored.
    Column("secret_sha256", String(64), nullable=False, unique=True),
    # The per-session CSRF token every state-changing request carries (random, not a secret of the cookie).
    Column("csrf_token", String(64), nullable=False),
    # The API token signed in with (NULL for a mailed code): revoking it ends the session.
    Column("token_id", String(40), nullable=True),
    # How the person signed in: ``token`` or ``code``.
    Column("method", String(16), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("last_seen_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime, nullable=True),
    # Why it ended: ``signed_out``, ``signed_out_everywhere``.
    Column("ended_reason", String(40), nullable=True),
    Index("ix_web_sessions_principal_id", "principal_id"),
)

signin_attempts = Table(
    # Every sign-in attempt to the web inbox that did not open a session, and every code asked for: the rows
    # the per-client and per-address rate limits count in their window (issue 16). Node-wide: an attempt
    # with an unknown token or address belongs to no organisation.
    "signin_attempts",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("at", UTCDateTime, nullable=False),
    # The client's address as the HTTP server saw it.
    Column("client", Text, nullable=False),
    # The address typed (normalised), for a code; NULL for a token.
    Column("address", Text, nullable=True),
    # ``token``, ``code_request`` or ``code``.
    Column("method", String(16), nullable=False),
    # The refusal's code, or ``code_requested``.
    Column("outcome", String(60), nullable=False),
    Index("ix_signin_attempts_client_at", "client", "at"),
    Index("ix_signin_attempts_address_at", "address", "at"),
    Index("ix_signin_attempts_at", "at"),
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
