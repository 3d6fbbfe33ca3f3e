"""Quarantine a receipt whose materialisation fails or never finishes, instead of retrying it in a loop.

A message that takes the materialisation down (MemoryError, RecursionError, a bug, or the kernel killing the
process) used to stay unmaterialised, so every restart parsed it again: a crash loop (issue 14 item 1). Each
attempt is now counted before parsing starts (``materialise_attempts``, ``materialise_started_at``), and a
receipt whose materialisation raised, or which was attempted ``MATERIALISE_ATTEMPTS_MAX`` times without
finishing, is quarantined (``quarantined_at``, ``quarantine_code``, ``quarantine_error``): kept with its raw
bytes, shown by doctor and ``GET /api/receipts``, skipped by the repair scan, re-driven by an administrator
(``redrives`` numbers the re-drives, so each gets a durable workflow id of its own). Existing rows start at
zero attempts and unquarantined.

Revision ID: 0013_receipt_quarantine
Revises: 0012_token_parents
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = "0013_receipt_quarantine"
down_revision = "0012_token_parents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("ingress_receipts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("materialise_attempts", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("materialise_started_at", mailnode.db.meta.UTCDateTime(timezone=True),
                                      nullable=True))
        batch_op.add_column(sa.Column("quarantined_at", mailnode.db.meta.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("quarantine_code", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("quarantine_error", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("redrives", sa.Integer(), nullable=False, server_default="0"))
        batch_op.create_index("ix_ingress_receipts_quarantined", ["quarantined_at"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("ingress_receipts", schema=None) as batch_op:
        batch_op.drop_index("ix_ingress_receipts_quarantined")
        for column in ("redrives", "quarantine_error", "quarantine_code", "quarantined_at", "materialise_started_at",
                       "materialise_attempts"):
            batch_op.drop_column(column)
