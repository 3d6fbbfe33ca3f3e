"""foundation: directory, mailboxes, audit

Revision ID: 0001_foundation
Revises: 
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = '0001_foundation'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""

    op.create_table('organisations',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_organisations')),
    sa.UniqueConstraint('name', name=op.f('uq_organisations_name'))
    )
    op.create_table('api_tokens',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('principal_id', sa.String(length=40), nullable=False),
    sa.Column('token_sha256', sa.String(length=64), nullable=False),
    sa.Column('label', sa.Text(), server_default='', nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_api_tokens_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
    sa.UniqueConstraint('token_sha256', name=op.f('uq_api_tokens_token_sha256'))
    )
    op.create_table('audit_entries',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('actor_id', sa.String(length=80), nullable=True),
    sa.Column('actor_kind', sa.String(length=20), nullable=False),
    sa.Column('action', sa.String(length=60), nullable=False),
    sa.Column('subject', sa.Text(), nullable=True),
    sa.Column('outcome', sa.String(length=10), nullable=False),
    sa.Column('detail', sa.Text(), nullable=True),
    sa.Column('prev_hash', sa.String(length=64), nullable=False),
    sa.Column('hash', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_audit_entries_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_entries'))
    )
    with op.batch_alter_table('audit_entries', schema=None) as batch_op:
        batch_op.create_index('ix_audit_entries_action', ['org_id', 'action', 'at'], unique=False)
        batch_op.create_index('uq_audit_entries_org_seq', ['org_id', 'seq'], unique=True)

    op.create_table('domains',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('domain', sa.Text(), nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_domains_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_domains')),
    sa.UniqueConstraint('domain', name=op.f('uq_domains_domain'))
    )
    op.create_table('mailboxes',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('hold_window_seconds', sa.Integer(), nullable=True),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_mailboxes_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_mailboxes'))
    )
    op.create_table('relationship_tuples',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('subject_id', sa.String(length=40), nullable=False),
    sa.Column('relation', sa.String(length=40), nullable=False),
    sa.Column('object_type', sa.String(length=20), nullable=False),
    sa.Column('object_id', sa.String(length=40), nullable=False),
    sa.Column('created_by', sa.String(length=40), nullable=True),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_relationship_tuples_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_relationship_tuples')),
    sa.UniqueConstraint('org_id', 'subject_id', 'object_type', 'relation', 'object_id',
                        name=op.f('uq_relationship_tuples_org_id_subject_id_object_type_relation_object_id'))
    )
    with op.batch_alter_table('relationship_tuples', schema=None) as batch_op:
        batch_op.create_index('ix_relationship_tuples_object', ['org_id', 'object_type', 'object_id', 'relation'],
                              unique=False)

    op.create_table('teams',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('created_by', sa.String(length=40), nullable=True),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_teams_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_teams')),
    sa.UniqueConstraint('org_id', 'name', name=op.f('uq_teams_org_id_name'))
    )
    op.create_table('users',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('email', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), server_default='', nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_users_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('org_id', 'email', name=op.f('uq_users_org_id_email'))
    )
    op.create_table('mailbox_addresses',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('mailbox_id', sa.String(length=40), nullable=False),
    sa.Column('address', sa.Text(), nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['mailbox_id'], ['mailboxes.id'], name=op.f('fk_mailbox_addresses_mailbox_id_mailboxes')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_mailbox_addresses_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_mailbox_addresses')),
    sa.UniqueConstraint('address', name=op.f('uq_mailbox_addresses_address'))
    )
    with op.batch_alter_table('mailbox_addresses', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_mailbox_addresses_mailbox_id'), ['mailbox_id'], unique=False)

    op.create_table('team_members',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('team_id', sa.String(length=40), nullable=False),
    sa.Column('user_id', sa.String(length=40), nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_team_members_org_id_organisations')),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_team_members_team_id_teams')),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_team_members_user_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_team_members')),
    sa.UniqueConstraint('org_id', 'user_id', 'team_id', name=op.f('uq_team_members_org_id_user_id_team_id'))
    )



def downgrade() -> None:
    """Revert this revision."""

    op.drop_table('team_members')
    with op.batch_alter_table('mailbox_addresses', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_mailbox_addresses_mailbox_id'))

    op.drop_table('mailbox_addresses')
    op.drop_table('users')
    op.drop_table('teams')
    with op.batch_alter_table('relationship_tuples', schema=None) as batch_op:
        batch_op.drop_index('ix_relationship_tuples_object')

    op.drop_table('relationship_tuples')
    op.drop_table('mailboxes')
    op.drop_table('domains')
    with op.batch_alter_table('audit_entries', schema=None) as batch_op:
        batch_op.drop_index('uq_audit_entries_org_seq')
        batch_op.drop_index('ix_audit_entries_action')

    op.drop_table('audit_entries')
    op.drop_table('api_tokens')
    op.drop_table('organisations')

