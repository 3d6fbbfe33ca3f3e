"""Application mail's own fields (issue 20, "The send"): From display name, Reply-To, custom headers,
tags and metadata on the manifest, and the tag and metadata rows ``GET /api/mail`` filters on by index.

Every new manifest column is NULL for existing sends (they had none of these), and the two tables start
empty: no data to carry.

Revision ID: 0023_mail_fields
Revises: 0022_web_polish
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = "0023_mail_fields"
down_revision = "0022_web_polish"
branch_labels = None
depends_on = None

_COLUMNS = ("from_name", "reply_to", "custom_headers", "tags", "metadata")


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("send_manifests", schema=None) as batch_op:
        batch_op.add_column(sa.Column("from_name", sa.Text(), nullable=True))
        for name in _COLUMNS[1:]:
            batch_op.add_column(sa.Column(name, mailnode.db.meta.JSONText(), nullable=True))
    op.create_table(
        "send_tags",
        sa.Column("manifest_id", sa.String(length=40), nullable=False),
        sa.Column("tag", sa.String(length=64), nullable=False),
        sa.Column("org_id", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(["manifest_id"], ["send_manifests.id"]),
        sa.ForeignKeyConstraint(["org_id"], ["organisations.id"]),
        sa.PrimaryKeyConstraint("manifest_id", "tag"),
    )
    op.create_index("ix_send_tags_tag", "send_tags", ["org_id", "tag", "manifest_id"], unique=False)
    op.create_table(
        "send_metadata",
        sa.Column("manifest_id", sa.String(length=40), nullable=False),
        sa.Column("key", sa.String(length=20), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("org_id", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(["manifest_id"], ["send_manifests.id"]),
        sa.ForeignKeyConstraint(["org_id"], ["organisations.id"]),
        sa.PrimaryKeyConstraint("manifest_id", "key"),
    )
    op.create_index("ix_send_metadata_entry", "send_metadata", ["org_id", "key", "value", "manifest_id"],
                    unique=False)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_send_metadata_entry", table_name="send_metadata")
    op.drop_table("send_metadata")
    op.drop_index("ix_send_tags_tag", table_name="send_tags")
    op.drop_table("send_tags")
    # Not in batch mode: on SQLite that copies the table and drops the old one, which the foreign keys of the
    # tables referring to send_manifests refuse. SQLite 3.35 and later (Python 3.11's is newer) and
    # PostgreSQL drop a column in place.
    for name in reversed(_COLUMNS):
        op.drop_column("send_manifests", name)
