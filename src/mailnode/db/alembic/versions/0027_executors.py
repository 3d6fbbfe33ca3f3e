"""Executor liveness for several processes on one database (issue 19).

Each ``mailnode serve`` process beats in ``executors``; a survivor takes over the durable work of one whose
beat is older than ``budgets.EXECUTOR_LEASE_SECONDS`` (``mailnode.liveness``). A new table; no data to carry.

Revision ID: 0027_executors
Revises: 0026_operator_pages
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mailnode.db.meta import UTCDateTime

revision = "0027_executors"
down_revision = "0026_operator_pages"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "executors",
        sa.Column("executor_id", sa.String(200), primary_key=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("started_at", UTCDateTime, nullable=False),
        sa.Column("beat_at", UTCDateTime, nullable=False),
        sa.Column("stopped_at", UTCDateTime, nullable=True),
        sa.Column("taken_over_by", sa.String(200), nullable=True),
        sa.Column("taken_over_at", UTCDateTime, nullable=True),
        sa.Column("recovered_at", UTCDateTime, nullable=True),
    )
    op.create_index("ix_executors_unrecovered", "executors", ["recovered_at", "beat_at"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_executors_unrecovered", table_name="executors")
    op.drop_table("executors")
