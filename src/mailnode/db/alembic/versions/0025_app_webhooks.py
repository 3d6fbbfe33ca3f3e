"""Webhooks to applications (issue 20, "Events to the application"): endpoints, deliveries and attempts.

New tables only (``schema/app_events.py``); no data to carry.

Revision ID: 0025_app_webhooks
Revises: 0024_suppressions
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mailnode.db.meta import JSONText, UTCDateTime

revision = "0025_app_webhooks"
down_revision = "0024_suppressions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("org_id", sa.String(40), sa.ForeignKey("organisations.id"), nullable=False),
        sa.Column("owner_id", sa.String(40), nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("event_types", JSONText, nullable=False),
        sa.Column("tag_filter", JSONText, nullable=True),
        sa.Column("secret", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("disabled_at", UTCDateTime, nullable=True),
        sa.Column("disabled_reason", sa.Text, nullable=True),
    )
    op.create_index("ix_webhook_endpoints_org", "webhook_endpoints", ["org_id", "id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("org_id", sa.String(40), sa.ForeignKey("organisations.id"), nullable=False),
        sa.Column("endpoint_id", sa.String(40), sa.ForeignKey("webhook_endpoints.id"), nullable=False),
        sa.Column("event_id", sa.String(40), nullable=False),
        sa.Column("event_key", sa.String(120), nullable=False),
        sa.Column("event_type", sa.String(40), nullable=False),
        sa.Column("payload", JSONText, nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_attempt_at", UTCDateTime, nullable=True),
        sa.Column("last_status_code", sa.Integer, nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("delivered_at", UTCDateTime, nullable=True),
    )
    op.create_index("uq_webhook_deliveries_event_id", "webhook_deliveries", ["event_id"], unique=True)
    op.create_index("uq_webhook_deliveries_endpoint_event", "webhook_deliveries", ["endpoint_id", "event_key"],
                    unique=True)
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["state", "next_attempt_at"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("delivery_id", sa.String(40), sa.ForeignKey("webhook_deliveries.id"), nullable=False),
        sa.Column("attempted_at", UTCDateTime, nullable=False),
        sa.Column("address", sa.String(64), nullable=True),
        sa.Column("status_code", sa.Integer, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("response_excerpt", sa.Text, nullable=True),
        sa.Column("response_bytes", sa.Integer, nullable=True),
        sa.Column("duration_ms", sa.Integer, nullable=True),
    )
    op.create_index("ix_webhook_attempts_delivery", "webhook_attempts", ["delivery_id", "attempted_at"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_webhook_attempts_delivery", table_name="webhook_attempts")
    op.drop_table("webhook_attempts")
    op.drop_index("ix_webhook_deliveries_due", table_name="webhook_deliveries")
    op.drop_index("uq_webhook_deliveries_endpoint_event", table_name="webhook_deliveries")
    op.drop_index("uq_webhook_deliveries_event_id", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index("ix_webhook_endpoints_org", table_name="webhook_endpoints")
    op.drop_table("webhook_endpoints")
