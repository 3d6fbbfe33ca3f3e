"""outbound: drafts, claim tokens and the lease index

Revision ID: 0004_outbound
Revises: 0002_mail
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = '0004_outbound'
down_revision = '0002_mail'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table('drafts',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('mailbox_id', sa.String(length=40), nullable=False),
    sa.Column('author_id', sa.String(length=40), nullable=False),
    sa.Column('in_reply_to_message_id', sa.String(length=40), nullable=True),
    sa.Column('to_addresses', mailnode.db.meta.JSONText(), nullable=False),
    sa.Column('cc_addresses', mailnode.db.meta.JSONText(), nullable=False),
    sa.Column('bcc_addresses', mailnode.db.meta.JSONText(), nullable=False),
    sa.Column('subject', sa.Text(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['mailbox_id'], ['mailboxes.id'], name=op.f('fk_drafts_mailbox_id_mailboxes')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_drafts_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drafts'))
    )
    with op.batch_alter_table('drafts', schema=None) as batch_op:
        batch_op.create_index('ix_drafts_author', ['org_id', 'author_id', 'id'], unique=False)
        batch_op.create_index('uq_drafts_author_parent', ['author_id', 'in_reply_to_message_id'], unique=True)

    with op.batch_alter_table('send_manifests', schema=None) as batch_op:
        batch_op.add_column(sa.Column('claim_token', sa.String(length=120), nullable=True))
        batch_op.create_index('ix_send_manifests_lease', ['state', 'lease_until'], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table('send_manifests', schema=None) as batch_op:
        batch_op.drop_index('ix_send_manifests_lease')
        batch_op.drop_column('claim_token')

    with op.batch_alter_table('drafts', schema=None) as batch_op:
        batch_op.drop_index('uq_drafts_author_parent')
        batch_op.drop_index('ix_drafts_author')

    op.drop_table('drafts')
