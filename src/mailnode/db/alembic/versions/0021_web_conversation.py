"""The web conversation (issue 16): ``composer_presence``, who has a composer open on which conversation.

One row per (conversation, person), replaced by each heartbeat and live until ``expires_at``; the page warns
before you type when someone else is writing in the conversation (``mail.presence``). No data to carry.

Revision ID: 0021_web_conversation
Revises: 0020_web_queue
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = "0021_web_conversation"
down_revision = "0020_web_queue"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "composer_presence",
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("person_id", sa.String(length=40), nullable=False),
        sa.Column("org_id", sa.String(length=40), nullable=False),
        sa.Column("seen_at", mailnode.db.meta.UTCDateTime(), nullable=False),
        sa.Column("expires_at", mailnode.db.meta.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"]),
        sa.ForeignKeyConstraint(["org_id"], ["organisations.id"]),
        sa.PrimaryKeyConstraint("conversation_id", "person_id"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("composer_presence")
