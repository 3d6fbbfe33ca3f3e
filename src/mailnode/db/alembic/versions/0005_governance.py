"""governance: policies, approvals, domain pauses, breaker limits

Revision ID: 0005_governance
Revises: 0002_mail
Create Date: 2026-11-30

A sibling of 0003_butlers and 0004_outbound on 0002_mail (migrate.upgrade applies every head). The
partial unique indexes hold the invariants: one draft and one published version per policy, one pause
in force per (organisation, domain).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import mailnode.db.meta

revision = '0005_governance'
down_revision = '0002_mail'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table('approvals',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('subject_kind', sa.String(length=30), nullable=False),
    sa.Column('subject_id', sa.String(length=40), nullable=False),
    sa.Column('scope_id', sa.String(length=40), nullable=False),
    sa.Column('actor_id', sa.String(length=40), nullable=False),
    sa.Column('state', sa.String(length=15), nullable=False),
    sa.Column('requested_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('resolved_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('expires_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_approvals_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_approvals'))
    )
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.create_index('ix_approvals_pending', ['org_id', 'state', 'requested_at'], unique=False)
        batch_op.create_index('uq_approvals_subject', ['subject_kind', 'subject_id'], unique=True)

    op.create_table('breaker_limits',
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('volume_max_recipients', sa.Integer(), nullable=True),
    sa.Column('bounce_max_percent', sa.Integer(), nullable=True),
    sa.Column('bounce_min_observations', sa.Integer(), nullable=True),
    sa.Column('complaint_max_percent', sa.Integer(), nullable=True),
    sa.Column('complaint_min_observations', sa.Integer(), nullable=True),
    sa.Column('updated_by', sa.String(length=40), nullable=False),
    sa.Column('updated_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_breaker_limits_org_id_organisations')),
    sa.PrimaryKeyConstraint('org_id', name=op.f('pk_breaker_limits'))
    )
    op.create_table('domain_pauses',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('domain', sa.Text(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('requested_by', sa.String(length=40), nullable=False),
    sa.Column('requested_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('placed_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('lifted_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('lifted_by', sa.String(length=40), nullable=True),
    sa.Column('lifted_reason', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_domain_pauses_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_domain_pauses'))
    )
    with op.batch_alter_table('domain_pauses', schema=None) as batch_op:
        batch_op.create_index('ix_domain_pauses_domain', ['org_id', 'domain'], unique=False)
        batch_op.create_index('uq_domain_pauses_in_force', ['org_id', 'domain'], unique=True,
                              sqlite_where=sa.text('placed_at IS NOT NULL AND lifted_at IS NULL'),
                              postgresql_where=sa.text('placed_at IS NOT NULL AND lifted_at IS NULL'))

    op.create_table('policies',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('created_by', sa.String(length=40), nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_policies_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_policies'))
    )
    with op.batch_alter_table('policies', schema=None) as batch_op:
        batch_op.create_index('uq_policies_org_name', ['org_id', 'name'], unique=True)

    op.create_table('approval_decisions',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('approval_id', sa.String(length=40), nullable=False),
    sa.Column('stage_ordinal', sa.Integer(), nullable=False),
    sa.Column('decider_id', sa.String(length=40), nullable=False),
    sa.Column('decision', sa.String(length=10), nullable=False),
    sa.Column('decided_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('withdrawn_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['approval_id'], ['approvals.id'],
                            name=op.f('fk_approval_decisions_approval_id_approvals')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_approval_decisions_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_approval_decisions'))
    )
    with op.batch_alter_table('approval_decisions', schema=None) as batch_op:
        batch_op.create_index('uq_approval_decisions_one_per_person', ['approval_id', 'decider_id'], unique=True)

    op.create_table('approval_stages',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('approval_id', sa.String(length=40), nullable=False),
    sa.Column('ordinal', sa.Integer(), nullable=False),
    sa.Column('required_count', sa.Integer(), nullable=False),
    sa.Column('team_id', sa.String(length=40), nullable=True),
    sa.ForeignKeyConstraint(['approval_id'], ['approvals.id'], name=op.f('fk_approval_stages_approval_id_approvals')),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_approval_stages_org_id_organisations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_approval_stages'))
    )
    with op.batch_alter_table('approval_stages', schema=None) as batch_op:
        batch_op.create_index('uq_approval_stages_approval_ordinal', ['approval_id', 'ordinal'], unique=True)

    op.create_table('policy_versions',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('policy_id', sa.String(length=40), nullable=False),
    sa.Column('version', sa.Integer(), nullable=True),
    sa.Column('state', sa.String(length=12), nullable=False),
    sa.Column('outcome', sa.String(length=20), nullable=False),
    sa.Column('when_mailbox_id', sa.String(length=40), nullable=True),
    sa.Column('when_actor_id', sa.String(length=40), nullable=True),
    sa.Column('when_actor_kind', sa.String(length=12), nullable=True),
    sa.Column('when_recipient_external', sa.Boolean(), nullable=True),
    sa.Column('when_is_reply', sa.Boolean(), nullable=True),
    sa.Column('when_org_daily_volume_min', sa.Integer(), nullable=True),
    sa.Column('canonical_sha256', sa.String(length=64), nullable=False),
    sa.Column('created_by', sa.String(length=40), nullable=False),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.Column('published_by', sa.String(length=40), nullable=True),
    sa.Column('published_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.Column('superseded_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_policy_versions_org_id_organisations')),
    sa.ForeignKeyConstraint(['policy_id'], ['policies.id'], name=op.f('fk_policy_versions_policy_id_policies')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_policy_versions'))
    )
    with op.batch_alter_table('policy_versions', schema=None) as batch_op:
        batch_op.create_index('ix_policy_versions_live', ['org_id', 'state'], unique=False)
        batch_op.create_index('uq_policy_versions_one_draft', ['policy_id'], unique=True,
                              sqlite_where=sa.text("state = 'draft'"), postgresql_where=sa.text("state = 'draft'"))
        batch_op.create_index('uq_policy_versions_one_live', ['policy_id'], unique=True,
                              sqlite_where=sa.text("state = 'published'"),
                              postgresql_where=sa.text("state = 'published'"))
        batch_op.create_index('uq_policy_versions_version', ['policy_id', 'version'], unique=True)

    op.create_table('policy_stages',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('policy_version_id', sa.String(length=40), nullable=False),
    sa.Column('ordinal', sa.Integer(), nullable=False),
    sa.Column('required_count', sa.Integer(), nullable=False),
    sa.Column('team_id', sa.String(length=40), nullable=True),
    sa.Column('created_at', mailnode.db.meta.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['organisations.id'], name=op.f('fk_policy_stages_org_id_organisations')),
    sa.ForeignKeyConstraint(['policy_version_id'], ['policy_versions.id'],
                            name=op.f('fk_policy_stages_policy_version_id_policy_versions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_policy_stages'))
    )
    with op.batch_alter_table('policy_stages', schema=None) as batch_op:
        batch_op.create_index('uq_policy_stages_version_ordinal', ['policy_version_id', 'ordinal'], unique=True)



def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table('policy_stages', schema=None) as batch_op:
        batch_op.drop_index('uq_policy_stages_version_ordinal')

    op.drop_table('policy_stages')
    with op.batch_alter_table('policy_versions', schema=None) as batch_op:
        batch_op.drop_index('uq_policy_versions_version')
        batch_op.drop_index('uq_policy_versions_one_live', sqlite_where=sa.text("state = 'published'"),
                            postgresql_where=sa.text("state = 'published'"))
        batch_op.drop_index('uq_policy_versions_one_draft', sqlite_where=sa.text("state = 'draft'"),
                            postgresql_where=sa.text("state = 'draft'"))
        batch_op.drop_index('ix_policy_versions_live')

    op.drop_table('policy_versions')
    with op.batch_alter_table('approval_stages', schema=None) as batch_op:
        batch_op.drop_index('uq_approval_stages_approval_ordinal')

    op.drop_table('approval_stages')
    with op.batch_alter_table('approval_decisions', schema=None) as batch_op:
        batch_op.drop_index('uq_approval_decisions_one_per_person')

    op.drop_table('approval_decisions')
    with op.batch_alter_table('policies', schema=None) as batch_op:
        batch_op.drop_index('uq_policies_org_name')

    op.drop_table('policies')
    with op.batch_alter_table('domain_pauses', schema=None) as batch_op:
        batch_op.drop_index('uq_domain_pauses_in_force',
                            sqlite_where=sa.text('placed_at IS NOT NULL AND lifted_at IS NULL'),
                            postgresql_where=sa.text('placed_at IS NOT NULL AND lifted_at IS NULL'))
        batch_op.drop_index('ix_domain_pauses_domain')

    op.drop_table('domain_pauses')
    op.drop_table('breaker_limits')
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.drop_index('uq_approvals_subject')
        batch_op.drop_index('ix_approvals_pending')

    op.drop_table('approvals')
