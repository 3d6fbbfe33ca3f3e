"""Operating Butlers (issue 17 items 11, 13, 14): why a run ended, a Butler disabled, supervised grants.

- ``butler_runs.outcome_detail``: why a run ended as it did when that is more than its reason token: the
  node, the expression and the four-part error of a failed run (``{code, what, why, fix, node, expression,
  ...}``), the findings of a refused one. NULL for a run that finished or was ended from outside its walk
  (a pause, a cancelled send). Existing rows keep NULL: what their fault was went to the server log only.
- ``butlers.disabled_at`` / ``disabled_by`` / ``disabled_reason``: a Butler an administrator disabled opens
  no new run (in-flight runs finish), with its grants untouched; NULL while enabled.
- ``supervised_grants``: an administrator's time-limited read of a mailbox's mail facts (``metadata`` or
  ``content``), requested with a reason, granted by two ``approval.decide`` holders on the mailbox
  (``approvals`` subject kind ``supervised_read``) and live from ``granted_at`` to ``expires_at``.

Revision ID: 0018_butler_operations
Revises: 0017_search
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = "0018_butler_operations"
down_revision = "0017_search"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("butler_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("outcome_detail", mailnode.db.meta.JSONText(), nullable=True))
    with op.batch_alter_table("butlers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("disabled_at", mailnode.db.meta.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("disabled_by", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("disabled_reason", sa.Text(), nullable=True))
    op.create_table(
        "supervised_grants",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("org_id", sa.String(length=40), nullable=False),
        sa.Column("mailbox_id", sa.String(length=40), nullable=False),
        sa.Column("grantee_id", sa.String(length=40), nullable=False),
        sa.Column("scope", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("duration_seconds", sa.Integer(), nullable=False),
        sa.Column("requested_at", mailnode.db.meta.UTCDateTime(), nullable=False),
        sa.Column("granted_at", mailnode.db.meta.UTCDateTime(), nullable=True),
        sa.Column("expires_at", mailnode.db.meta.UTCDateTime(), nullable=True),
        sa.Column("refused_at", mailnode.db.meta.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["org_id"], ["organisations.id"]),
        sa.ForeignKeyConstraint(["mailbox_id"], ["mailboxes.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("supervised_grants", schema=None) as batch_op:
        batch_op.create_index("ix_supervised_grants_grantee", ["org_id", "grantee_id", "mailbox_id"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("supervised_grants", schema=None) as batch_op:
        batch_op.drop_index("ix_supervised_grants_grantee")
    op.drop_table("supervised_grants")
    with op.batch_alter_table("butlers", schema=None) as batch_op:
        batch_op.drop_column("disabled_reason")
        batch_op.drop_column("disabled_by")
        batch_op.drop_column("disabled_at")
    with op.batch_alter_table("butler_runs", schema=None) as batch_op:
        batch_op.drop_column("outcome_detail")
