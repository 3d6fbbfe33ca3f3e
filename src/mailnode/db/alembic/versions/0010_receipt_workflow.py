"""Merge the transactional and retention branches; record when a receipt's durable workflow finished.

``mailnode ingest`` materialises in its own process without the durable executor, so the Butler trigger
of an ingested message is owed until ``serve``'s scan runs its workflow; ``workflow_done_at`` tells the
scan which receipts still need it. Existing rows are backfilled from ``materialised_at``: they were
materialised by the workflow (or before Butlers existed), so nothing is re-triggered.

Revision ID: 0010_receipt_workflow
Revises: 0008_transactional, 0009_notices_retention
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = "0010_receipt_workflow"
down_revision = ("0008_transactional", "0009_notices_retention")
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("ingress_receipts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("workflow_done_at", mailnode.db.meta.UTCDateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_ingress_receipts_workflow_pending", ["workflow_done_at", "received_at"],
                              unique=False)
    op.execute("UPDATE ingress_receipts SET workflow_done_at = materialised_at WHERE materialised_at IS NOT NULL")


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("ingress_receipts", schema=None) as batch_op:
        batch_op.drop_index("ix_ingress_receipts_workflow_pending")
        batch_op.drop_column("workflow_done_at")
