"""Record the token each API token was minted with, so revoking a token revokes what it minted.

``POST /api/tokens`` mints a token for its caller; before this revision the new token survived the
revocation of the one that minted it (issue 14 item 5). ``parent_token_id`` is that token's id, NULL for a
token minted by the installer (``mailnode init``, ``mailnode token create``) or by an administrator for an
application. Existing rows keep NULL: nothing recorded which token minted them. The index serves the
revocation's search for children.

Revision ID: 0012_token_parents
Revises: 0011_retention_indexes
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_token_parents"
down_revision = "0011_retention_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent_token_id", sa.String(length=40), nullable=True))
        batch_op.create_index("ix_api_tokens_parent_token_id", ["parent_token_id"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_index("ix_api_tokens_parent_token_id")
        batch_op.drop_column("parent_token_id")
