"""What a person reads of a message: the text made from HTML, where the HTML part is, and the attachment list.

Issue 15 ("Reading"): an HTML-only message showed no text and attachments were only a count. Materialisation now
records which part the text came from (``messages.text_body_type``), the HTML part's section number
(``messages.html_part``) and one ``message_attachments`` row per attachment (part id, file name as given and
safe to save, declared and sniffed type, size, sha256, inline or not, danger token). Existing messages keep
NULL in both columns and no rows: the API reads them from their raw bytes, so nothing is backfilled here.

Revision ID: 0014_message_reading
Revises: 0013_receipt_quarantine
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_message_reading"
down_revision = "0013_receipt_quarantine"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("text_body_type", sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column("html_part", sa.String(length=40), nullable=True))
    op.create_table(
        "message_attachments",
        sa.Column("message_id", sa.String(length=40), nullable=False),
        sa.Column("part_id", sa.String(length=40), nullable=False),
        sa.Column("filename", sa.Text(), nullable=True),
        sa.Column("safe_filename", sa.Text(), nullable=False),
        sa.Column("content_type", sa.Text(), nullable=False),
        sa.Column("sniffed_type", sa.String(length=100), nullable=True),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("inline", sa.Boolean(), nullable=False),
        sa.Column("content_id", sa.Text(), nullable=True),
        sa.Column("danger", sa.String(length=20), nullable=True),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"]),
        sa.PrimaryKeyConstraint("message_id", "part_id", name="pk_message_attachments"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("message_attachments")
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.drop_column("html_part")
        batch_op.drop_column("text_body_type")
