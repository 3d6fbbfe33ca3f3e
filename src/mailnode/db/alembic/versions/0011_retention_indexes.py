"""Indexes for the retention blob-reference check and the notify sweeper's age-out query.

``retention.io.referenced`` asks, before removing an evidence blob, whether any message, receipt
or send still names its digest; without an index on each digest column that is a scan of three whole
tables per removed blob. The notify sweeper's age-out query selects sends by mail class, waiting state and
``sealed_at`` before a cutoff. Indexes only; no data moves. ``tests/retention/test_indexes.py``
checks that SQLite's query plans use them.

Revision ID: 0011_retention_indexes
Revises: 0010_receipt_workflow
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0011_retention_indexes"
down_revision = "0010_receipt_workflow"
branch_labels = None
depends_on = None

#: (table, index name, columns), in the order they are created.
INDEXES: tuple[tuple[str, str, list[str]], ...] = (
    ("send_manifests", "ix_send_manifests_age_out", ["mail_class", "state", "sealed_at"]),
    ("send_manifests", "ix_send_manifests_body_typed_sha256", ["body_typed_sha256"]),
    ("send_manifests", "ix_send_manifests_body_normalised_sha256", ["body_normalised_sha256"]),
    ("send_manifests", "ix_send_manifests_rendered_sha256", ["rendered_sha256"]),
    ("messages", "ix_messages_raw_sha256", ["raw_sha256"]),
    ("ingress_receipts", "ix_ingress_receipts_sha256", ["sha256"]),
)


def upgrade() -> None:
    """Apply this revision."""
    for table, name, columns in INDEXES:
        op.create_index(name, table, columns, unique=False)


def downgrade() -> None:
    """Revert this revision."""
    for table, name, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
