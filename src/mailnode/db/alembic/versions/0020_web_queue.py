"""Indexes for the web queue (issue 16): each case's latest message, and the counts of a mailbox's views.

``mail.queue`` lists a mailbox's cases by their latest message: walking ``ix_messages_mailbox`` newest
first, it asks of each message whether a later one of the same case exists, one seek in
``ix_messages_case``. The view counts group a mailbox's cases by state and holder, read from
``ix_cases_mailbox_state_assignee`` alone. Indexes only; no data moves. ``bench/web_queue.py`` measures the
page with 10,000 conversations in one mailbox.

Revision ID: 0020_web_queue
Revises: 0019_web_sessions
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0020_web_queue"
down_revision = "0019_web_sessions"
branch_labels = None
depends_on = None

#: (table, index name, columns), in the order they are created.
INDEXES: tuple[tuple[str, str, list[str]], ...] = (
    ("messages", "ix_messages_case", ["case_id", "id"]),
    ("cases", "ix_cases_mailbox_state_assignee", ["mailbox_id", "state", "assignee_id"]),
)


def upgrade() -> None:
    """Apply this revision."""
    for table, name, columns in INDEXES:
        op.create_index(name, table, columns, unique=False)


def downgrade() -> None:
    """Revert this revision."""
    for table, name, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
