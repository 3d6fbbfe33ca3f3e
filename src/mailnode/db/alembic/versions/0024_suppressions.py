"""The suppression list (issue 20): ``suppressions``, and why a recipient row was ``suppressed``.

A new table, one row per (organisation, address), and a nullable ``send_recipients.suppression_reason``.
No data to carry: existing rows were never suppressed.

Revision ID: 0024_suppressions
Revises: 0023_mail_fields
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = "0024_suppressions"
down_revision = "0023_mail_fields"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "suppressions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("org_id", sa.String(length=40), nullable=False),
        sa.Column("address", sa.Text(), nullable=False),
        sa.Column("reason", sa.String(length=20), nullable=False),
        sa.Column("event_id", sa.String(length=40), nullable=True),
        sa.Column("send_id", sa.String(length=40), nullable=True),
        sa.Column("recipient_id", sa.String(length=40), nullable=True),
        sa.Column("added_by", sa.String(length=40), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["org_id"], ["organisations.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("uq_suppressions_org_address", "suppressions", ["org_id", "address"], unique=True)
    op.create_index("ix_suppressions_org_id", "suppressions", ["org_id", "id"])
    with op.batch_alter_table("send_recipients") as batch:
        batch.add_column(sa.Column("suppression_reason", sa.String(length=20), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    # In place, not in batch mode (a copy of the table would be refused by foreign keys that refer to it).
    op.drop_column("send_recipients", "suppression_reason")
    op.drop_index("ix_suppressions_org_id", table_name="suppressions")
    op.drop_index("uq_suppressions_org_address", table_name="suppressions")
    op.drop_table("suppressions")
