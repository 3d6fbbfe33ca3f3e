"""inbound and outbound tables

Revision ID: 0002_mail
Revises: 0001_foundation
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = '0002_mail'
down_revision = '0001_foundation'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""

    op.create_table('conversations',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('subject', sa.Text(), nullable=True),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_conversations_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_conversations'))
    )
    op.create_table('send_recipient_events',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('event_type', sa.String(length=30), nullable=False),
    sa.Column('recipient', sa.Text(), nullable=True),
    sa.Column('manifest_id', sa.String(length=40), nullable=True),
    sa.Column('recipient_id', sa.String(length=40), nullable=True),
    sa.Column('status', sa.String(length=20), nullable=True),
    sa.Column('bounce_type', sa.String(length=10), nullable=True),
    sa.Column('source', sa.String(length=20), nullable=False),
    sa.Column('source_event_id', sa.Text(), nullable=False),
    sa.Column('message_id', sa.String(length=40), nullable=True),
    sa.Column('received_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('detail', mailnode.db.meta.JSONText(), nullable=True),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'],
                            name=op.f('fk_send_recipient_events_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_send_recipient_events'))
    )
    with op.batch_alter_table('send_recipient_events', schema=None) as batch_op:
        batch_op.create_index('ix_send_recipient_events_attributed', ['org_id', 'event_type', 'received_at'],
                              unique=False)
        batch_op.create_index('ix_send_recipient_events_manifest', ['manifest_id'], unique=False)
        batch_op.create_index('uq_send_recipient_events_source', ['source', 'source_event_id'], unique=True)

    op.create_table('cases',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('conversation_id', sa.String(length=40), nullable=False),
    sa.Column('mailbox_id', sa.String(length=40), nullable=False),
    sa.Column('state', sa.String(length=10), nullable=False),
    sa.Column('assignee_id', sa.String(length=40), nullable=True),
    sa.Column('assigned_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('opened_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('closed_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('closed_by', sa.String(length=40), nullable=True),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversations.id'],
                            name=op.f('fk_cases_conversation_id_conversations')),
    sa.ForeignKeyConstraint(['mailbox_id'], ['mailboxes.id'], name=op.f('fk_cases_mailbox_id_mailboxes')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_cases_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cases'))
    )
    with op.batch_alter_table('cases', schema=None) as batch_op:
        batch_op.create_index('ix_cases_mailbox_state', ['mailbox_id', 'state', 'id'], unique=False)
        batch_op.create_index('uq_cases_open_per_conversation_mailbox', ['conversation_id', 'mailbox_id'], unique=True,
                              sqlite_where=sa.text("state = 'open'"), postgresql_where=sa.text("state = 'open'"))

    op.create_table('ingress_receipts',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('mailbox_id', sa.String(length=40), nullable=True),
    sa.Column('envelope_from', sa.Text(), nullable=False),
    sa.Column('envelope_to', sa.Text(), nullable=False),
    sa.Column('remote_addr', sa.Text(), nullable=True),
    sa.Column('helo', sa.Text(), nullable=True),
    sa.Column('size_bytes', sa.Integer(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('source', sa.String(length=10), nullable=False),
    sa.Column('received_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('materialised_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('message_id', sa.String(length=40), nullable=True),
    sa.ForeignKeyConstraint(['mailbox_id'], ['mailboxes.id'], name=op.f('fk_ingress_receipts_mailbox_id_mailboxes')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_ingress_receipts_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ingress_receipts'))
    )
    with op.batch_alter_table('ingress_receipts', schema=None) as batch_op:
        batch_op.create_index('ix_ingress_receipts_unmaterialised', ['materialised_at', 'received_at'], unique=False)

    op.create_table('message_ids',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('rfc_message_id', sa.Text(), nullable=False),
    sa.Column('conversation_id', sa.String(length=40), nullable=False),
    sa.Column('source_id', sa.String(length=40), nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversations.id'],
                            name=op.f('fk_message_ids_conversation_id_conversations')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_message_ids_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_message_ids'))
    )
    with op.batch_alter_table('message_ids', schema=None) as batch_op:
        batch_op.create_index('ix_message_ids_lookup', ['org_id', 'rfc_message_id'], unique=False)

    op.create_table('send_manifests',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('mailbox_id', sa.String(length=40), nullable=False),
    sa.Column('author_id', sa.String(length=40), nullable=False),
    sa.Column('mail_class', sa.String(length=20), server_default='correspondence', nullable=False),
    sa.Column('in_reply_to_message_id', sa.String(length=40), nullable=True),
    sa.Column('conversation_id', sa.String(length=40), nullable=True),
    sa.Column('envelope_from', sa.Text(), nullable=False),
    sa.Column('to_addresses', mailnode.db.meta.JSONText(), nullable=False),
    sa.Column('cc_addresses', mailnode.db.meta.JSONText(), nullable=False),
    sa.Column('bcc_addresses', mailnode.db.meta.JSONText(), nullable=False),
    sa.Column('subject', sa.Text(), nullable=False),
    sa.Column('rfc_message_id', sa.Text(), nullable=False),
    sa.Column('in_reply_to_header', sa.Text(), nullable=True),
    sa.Column('references_header', sa.Text(), nullable=True),
    sa.Column('auto_submitted', sa.String(length=20), nullable=True),
    sa.Column('fidelity', sa.String(length=15), nullable=False),
    sa.Column('body_typed_sha256', sa.String(length=64), nullable=False),
    sa.Column('body_normalised_sha256', sa.String(length=64), nullable=False),
    sa.Column('rendered_sha256', sa.String(length=64), nullable=True),
    sa.Column('sealed_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('release_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('state_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('state_reason', sa.String(length=40), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('first_attempt_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('lease_until', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('policy_outcome', sa.String(length=20), nullable=True),
    sa.Column('policy_versions', mailnode.db.meta.JSONText(), nullable=True),
    sa.Column('resend_of', sa.String(length=40), nullable=True),
    sa.Column('idempotency_key', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['mailbox_id'], ['mailboxes.id'], name=op.f('fk_send_manifests_mailbox_id_mailboxes')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_send_manifests_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_send_manifests'))
    )
    with op.batch_alter_table('send_manifests', schema=None) as batch_op:
        batch_op.create_index('ix_send_manifests_due', ['state', 'release_at'], unique=False)
        batch_op.create_index('ix_send_manifests_mailbox', ['mailbox_id', 'id'], unique=False)
        batch_op.create_index('uq_send_manifests_idempotency', ['org_id', 'author_id', 'idempotency_key'], unique=True,
                              sqlite_where=sa.text('idempotency_key IS NOT NULL'),
                              postgresql_where=sa.text('idempotency_key IS NOT NULL'))

    op.create_table('messages',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('mailbox_id', sa.String(length=40), nullable=False),
    sa.Column('receipt_id', sa.String(length=40), nullable=False),
    sa.Column('conversation_id', sa.String(length=40), nullable=False),
    sa.Column('case_id', sa.String(length=40), nullable=True),
    sa.Column('envelope_from', sa.Text(), nullable=False),
    sa.Column('envelope_to', sa.Text(), nullable=False),
    sa.Column('rfc_message_id', sa.Text(), nullable=True),
    sa.Column('in_reply_to', sa.Text(), nullable=True),
    sa.Column('references', mailnode.db.meta.JSONText(), nullable=False),
    sa.Column('subject', sa.Text(), nullable=True),
    sa.Column('from_name', sa.Text(), nullable=True),
    sa.Column('from_address', sa.Text(), nullable=True),
    sa.Column('date', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('received_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('automated', sa.String(length=40), nullable=True),
    sa.Column('reply_refusal', sa.String(length=40), nullable=True),
    sa.Column('dmarc', sa.String(length=20), nullable=True),
    sa.Column('spf', sa.String(length=20), nullable=True),
    sa.Column('dkim', sa.String(length=20), nullable=True),
    sa.Column('attachments', sa.Integer(), nullable=False),
    sa.Column('dangerous_attachments', sa.Integer(), nullable=False),
    sa.Column('report_kind', sa.String(length=20), nullable=True),
    sa.Column('parse_error', sa.Text(), nullable=True),
    sa.Column('defects', mailnode.db.meta.JSONText(), nullable=False),
    sa.Column('headers', mailnode.db.meta.JSONText(), nullable=False),
    sa.Column('text_body', sa.Text(), nullable=True),
    sa.Column('raw_sha256', sa.String(length=64), nullable=False),
    sa.Column('size_bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversations.id'],
                            name=op.f('fk_messages_conversation_id_conversations')),
    sa.ForeignKeyConstraint(['mailbox_id'], ['mailboxes.id'], name=op.f('fk_messages_mailbox_id_mailboxes')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_messages_org_id_organisations')),
    sa.ForeignKeyConstraint(['receipt_id'], ['ingress_receipts.id'],
                            name=op.f('fk_messages_receipt_id_ingress_receipts')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_messages')),
    sa.UniqueConstraint('receipt_id', name=op.f('uq_messages_receipt_id'))
    )
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.create_index('ix_messages_conversation', ['conversation_id', 'received_at'], unique=False)
        batch_op.create_index('ix_messages_mailbox', ['mailbox_id', 'id'], unique=False)

    op.create_table('send_recipients',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('manifest_id', sa.String(length=40), nullable=False),
    sa.Column('kind', sa.String(length=3), nullable=False),
    sa.Column('address', sa.Text(), nullable=False),
    sa.Column('submission_state', sa.String(length=20), nullable=False),
    sa.Column('submission_state_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('delivery_state', sa.String(length=20), nullable=True),
    sa.Column('delivery_state_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('bounce_type', sa.String(length=10), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('last_event_id', sa.String(length=40), nullable=True),
    sa.Column('transport_message_id', sa.Text(), nullable=True),
    sa.Column('provider_message_id', sa.Text(), nullable=True),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['manifest_id'], ['send_manifests.id'],
                            name=op.f('fk_send_recipients_manifest_id_send_manifests')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_send_recipients_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_send_recipients'))
    )
    with op.batch_alter_table('send_recipients', schema=None) as batch_op:
        batch_op.create_index('ix_send_recipients_handed_over', ['org_id', 'submission_state', 'submission_state_at'],
                              unique=False)
        batch_op.create_index('ix_send_recipients_provider_message_id', ['provider_message_id'], unique=False)
        batch_op.create_index('ix_send_recipients_transport_id', ['transport_message_id'], unique=False)
        batch_op.create_index('uq_send_recipients_manifest_address', ['manifest_id', 'address'], unique=True)




def downgrade() -> None:
    """Revert this revision."""

    with op.batch_alter_table('send_recipients', schema=None) as batch_op:
        batch_op.drop_index('uq_send_recipients_manifest_address')
        batch_op.drop_index('ix_send_recipients_transport_id')
        batch_op.drop_index('ix_send_recipients_provider_message_id')
        batch_op.drop_index('ix_send_recipients_handed_over')

    op.drop_table('send_recipients')
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.drop_index('ix_messages_mailbox')
        batch_op.drop_index('ix_messages_conversation')

    op.drop_table('messages')
    with op.batch_alter_table('send_manifests', schema=None) as batch_op:
        batch_op.drop_index('uq_send_manifests_idempotency', sqlite_where=sa.text('idempotency_key IS NOT NULL'),
                            postgresql_where=sa.text('idempotency_key IS NOT NULL'))
        batch_op.drop_index('ix_send_manifests_mailbox')
        batch_op.drop_index('ix_send_manifests_due')

    op.drop_table('send_manifests')
    with op.batch_alter_table('message_ids', schema=None) as batch_op:
        batch_op.drop_index('ix_message_ids_lookup')

    op.drop_table('message_ids')
    with op.batch_alter_table('ingress_receipts', schema=None) as batch_op:
        batch_op.drop_index('ix_ingress_receipts_unmaterialised')

    op.drop_table('ingress_receipts')
    with op.batch_alter_table('cases', schema=None) as batch_op:
        batch_op.drop_index('uq_cases_open_per_conversation_mailbox', sqlite_where=sa.text("state = 'open'"),
                            postgresql_where=sa.text("state = 'open'"))
        batch_op.drop_index('ix_cases_mailbox_state')

    op.drop_table('cases')
    with op.batch_alter_table('send_recipient_events', schema=None) as batch_op:
        batch_op.drop_index('uq_send_recipient_events_source')
        batch_op.drop_index('ix_send_recipient_events_manifest')
        batch_op.drop_index('ix_send_recipient_events_attributed')

    op.drop_table('send_recipient_events')
    op.drop_table('conversations')

