"""Both sides of a conversation and answering it: display names, HTML and attachments on sends; case notes.

Issue 15. ``send_manifests`` gains ``display_names`` (the To/Cc display names as written), ``body_html_sha256``
(the HTML alternative in the evidence store, indexed for ``retention.io.referenced``) and
``attachments`` (what was attached: name, type, size, digest; the bytes live in the rendered message).
``case_notes`` holds a case's internal notes. Existing sends have none of the three (text only).

Revision ID: 0016_conversation_answers
Revises: 0015_handover_reserve_retention
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = "0016_conversation_answers"
down_revision = "0015_handover_reserve_retention"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("send_manifests", schema=None) as batch_op:
        batch_op.add_column(sa.Column("display_names", mailnode.db.meta.JSONText(), nullable=True))
        batch_op.add_column(sa.Column("body_html_sha256", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("attachments", mailnode.db.meta.JSONText(), nullable=True))
        batch_op.create_index("ix_send_manifests_body_html_sha256", ["body_html_sha256"], unique=False)
    op.create_table(
        "case_notes",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("org_id", sa.String(length=40), nullable=False),
        sa.Column("case_id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("mailbox_id", sa.String(length=40), nullable=False),
        sa.Column("author_id", sa.String(length=40), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"]),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"]),
        sa.ForeignKeyConstraint(["mailbox_id"], ["mailboxes.id"]),
        sa.ForeignKeyConstraint(["org_id"], ["organisations.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("case_notes", schema=None) as batch_op:
        batch_op.create_index("ix_case_notes_conversation", ["conversation_id", "created_at"], unique=False)
        batch_op.create_index("ix_case_notes_case", ["case_id"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("case_notes", schema=None) as batch_op:
        batch_op.drop_index("ix_case_notes_case")
        batch_op.drop_index("ix_case_notes_conversation")
    op.drop_table("case_notes")
    with op.batch_alter_table("send_manifests", schema=None) as batch_op:
        batch_op.drop_index("ix_send_manifests_body_html_sha256")
        batch_op.drop_column("attachments")
        batch_op.drop_column("body_html_sha256")
        batch_op.drop_column("display_names")
