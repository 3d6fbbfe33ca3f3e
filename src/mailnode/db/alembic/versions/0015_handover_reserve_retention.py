"""Provider requests in flight and request tickets; one ``hold.blocked`` per hold episode (issue 17).

``provider_requests`` holds each provider request made and not yet answered, so concurrent workers count
it against the class's ceiling before its answer raises the reading; ``provider_status`` gains the ticket
counter (``requests_issued``) and the tickets its reading and its pause came from (``reading_ticket``,
``pause_ticket``), so an answer to an older request never overwrites either (items 2). Existing rows
start at ticket 0 with no recorded tickets (an untracked fact counts as older than any ticketed answer).
``retained_content.hold_blocked_by`` records the holds the last ``hold.blocked`` entry named (item 5);
NULL for existing rows, so each row held today gets one more entry, then one per episode.

Revision ID: 0015_handover_reserve_retention
Revises: 0014_message_reading
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = "0015_handover_reserve_retention"
down_revision = "0014_message_reading"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("provider_status", schema=None) as batch_op:
        batch_op.add_column(sa.Column("requests_issued", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("reading_ticket", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("pause_ticket", sa.Integer(), nullable=True))
    op.create_table(
        "provider_requests",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("transport", sa.String(length=20), nullable=False),
        sa.Column("ticket", sa.Integer(), nullable=False),
        sa.Column("mail_class", sa.String(length=20), nullable=False),
        sa.Column("manifest_id", sa.String(length=40), nullable=True),
        sa.Column("started_at", mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
        sa.Column("lease_until", mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_provider_requests_transport", "provider_requests", ["transport", "lease_until"],
                    unique=False)
    with op.batch_alter_table("retained_content", schema=None) as batch_op:
        batch_op.add_column(sa.Column("hold_blocked_by", mailnode.db.meta.JSONText(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("retained_content", schema=None) as batch_op:
        batch_op.drop_column("hold_blocked_by")
    op.drop_index("ix_provider_requests_transport", table_name="provider_requests")
    op.drop_table("provider_requests")
    with op.batch_alter_table("provider_status", schema=None) as batch_op:
        for column in ("pause_ticket", "reading_ticket", "requests_issued"):
            batch_op.drop_column(column)
