"""Doctor's findings on the Limits and health page read by index (issue 21).

``/limits`` shows doctor's findings on every render. Two of its checks read whole tables on a node where what
they look for is absent (the usual case): the quarantine finding counts and lists quarantined receipts of the
org (``quarantined_at IS NOT NULL``, which neither SQLite nor PostgreSQL serves from the plain index on
``quarantined_at`` together with ``org_id``), and the loop-detection finding asks whether any message of the
org is a threaded reply. Two partial indexes hold just those rows (30,000 receipts and 10,000 messages in
``bench/web_pages.py``: 17 ms and 15 ms per render before). No data to carry.

Revision ID: 0026_operator_pages
Revises: 0025_app_webhooks
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026_operator_pages"
down_revision = "0025_app_webhooks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_index("ix_ingress_receipts_quarantined_org", "ingress_receipts", ["org_id", "id"],
                    sqlite_where=sa.text("quarantined_at IS NOT NULL"),
                    postgresql_where=sa.text("quarantined_at IS NOT NULL"))
    op.create_index("ix_messages_threaded", "messages", ["org_id"],
                    sqlite_where=sa.text("in_reply_to IS NOT NULL"),
                    postgresql_where=sa.text("in_reply_to IS NOT NULL"))


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_messages_threaded", table_name="messages")
    op.drop_index("ix_ingress_receipts_quarantined_org", table_name="ingress_receipts")
