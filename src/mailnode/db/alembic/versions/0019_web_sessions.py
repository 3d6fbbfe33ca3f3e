"""Web sessions (issue 16, signing in): a person's server-side session of the web inbox.

- ``web_sessions``: one row per signed-in browser. The cookie carries a random secret; only its SHA-256 is
  stored. ``csrf_token`` is what every state-changing request of that session carries. ``token_id`` is the
  API token signed in with (NULL for a mailed code): revoking the token ends the session. ``ended_at`` /
  ``ended_reason`` record a sign-out; idle and absolute lifetimes are read from ``last_seen_at`` and
  ``created_at`` against ``budgets.WEB_SESSION_*``.
- ``signin_codes``: a person's one-time sign-in code (keyed hash), mailed to their verified contact address;
  the same shape as ``verification_records``, apart so it never replaces a contact-address code.
- ``signin_attempts``: sign-in attempts that opened no session and codes asked for, counted per client and
  per address in ``budgets.WEB_SIGNIN_WINDOW_SECONDS`` by the sign-in rate limits (rows older than the
  window are deleted as new ones arrive).

Revision ID: 0019_web_sessions
Revises: 0018_butler_operations
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = "0019_web_sessions"
down_revision = "0018_butler_operations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("org_id", sa.String(length=40), nullable=False),
        sa.Column("principal_id", sa.String(length=40), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=40), nullable=True),
        sa.Column("method", sa.String(length=16), nullable=False),
        sa.Column("created_at", mailnode.db.meta.UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", mailnode.db.meta.UTCDateTime(), nullable=False),
        sa.Column("ended_at", mailnode.db.meta.UTCDateTime(), nullable=True),
        sa.Column("ended_reason", sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(["org_id"], ["organisations.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("secret_sha256"),
    )
    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.create_index("ix_web_sessions_principal_id", ["principal_id"], unique=False)
    op.create_table(
        "signin_codes",
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("org_id", sa.String(length=40), nullable=False),
        sa.Column("address", sa.Text(), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=True),
        sa.Column("sent_at", mailnode.db.meta.UTCDateTime(), nullable=False),
        sa.Column("expires_at", mailnode.db.meta.UTCDateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("send_id", sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(["org_id"], ["organisations.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("user_id"),
    )
    op.create_table(
        "signin_attempts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("at", mailnode.db.meta.UTCDateTime(), nullable=False),
        sa.Column("client", sa.Text(), nullable=False),
        sa.Column("address", sa.Text(), nullable=True),
        sa.Column("method", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=60), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("signin_attempts", schema=None) as batch_op:
        batch_op.create_index("ix_signin_attempts_client_at", ["client", "at"], unique=False)
        batch_op.create_index("ix_signin_attempts_address_at", ["address", "at"], unique=False)
        batch_op.create_index("ix_signin_attempts_at", ["at"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("signin_attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_signin_attempts_at")
        batch_op.drop_index("ix_signin_attempts_address_at")
        batch_op.drop_index("ix_signin_attempts_client_at")
    op.drop_table("signin_attempts")
    op.drop_table("signin_codes")
    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_web_sessions_principal_id")
    op.drop_table("web_sessions")
