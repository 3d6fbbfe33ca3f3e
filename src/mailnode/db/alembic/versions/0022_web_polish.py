"""The conversation page finds a conversation's cases and sends by index (issue 16, polish).

``mail.thread.read_thread`` (the conversation page and ``GET /api/conversations/{id}``) and
``mail.presence`` read a conversation's cases of every state and its sends by ``conversation_id``; the only
index on cases by conversation was the partial unique one over open cases, and sends had none, so both read
every case or send of the org (10,000 cases and 5,000 sends in ``bench/web_queue.py``). No data to carry.

Revision ID: 0022_web_polish
Revises: 0021_web_conversation
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0022_web_polish"
down_revision = "0021_web_conversation"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_index("ix_cases_conversation", "cases", ["conversation_id", "opened_at"])
    op.create_index("ix_send_manifests_conversation", "send_manifests", ["conversation_id", "sealed_at"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_send_manifests_conversation", table_name="send_manifests")
    op.drop_index("ix_cases_conversation", table_name="cases")
