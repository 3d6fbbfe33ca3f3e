"""Tables of governance: policies and their versions and stages, approvals, domain pauses, breaker limits.

Vocabularies (spec/outbound.md §4–§6): ``policy_versions.state`` is ``draft | published | superseded``
(at most one draft and one published version per policy, enforced by partial unique indexes);
``policy_versions.outcome`` is ``allow | hold | require_approval | deny``; ``approvals.state`` is
``pending | approved | denied | unsatisfiable | cancelled``; ``approval_decisions.decision`` is
``approve | deny``. A domain pause is a request while ``placed_at`` is NULL and in force while
``placed_at`` is set and ``lifted_at`` is NULL (at most one in force per organisation and domain).

``breaker_limits`` holds an organisation's overrides of the rate breakers' limits and minimum
observations (one row per organisation, NULL = the default in ``budgets.py``). The windows are not
overridable: each is the bound of an index seek in the one breaker statement and is bound as a
parameter before the statement runs (``governance.breakers``).
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, ForeignKey, Index, Integer, String, Table, Text, text

from mailnode.db.meta import UTCDateTime, metadata

policies = Table(
    "policies",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("name", Text, nullable=False),
    Column("created_by", String(40), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("uq_policies_org_name", "org_id", "name", unique=True),
)

policy_versions = Table(
    "policy_versions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("policy_id", String(40), ForeignKey("policies.id"), nullable=False),
    #: NULL while a draft; 1, 2, ... in publication order.
    Column("version", Integer, nullable=True),
    Column("state", String(12), nullable=False),
    Column("outcome", String(20), nullable=False),
    #: Conditions; NULL = unconstrained.
    Column("when_mailbox_id", String(40), nullable=True),
    Column("when_actor_id", String(40), nullable=True),
    Column("when_actor_kind", String(12), nullable=True),
    Column("when_recipient_external", Boolean, nullable=True),
    Column("when_is_reply", Boolean, nullable=True),
    Column("when_org_daily_volume_min", Integer, nullable=True),
    Column("canonical_sha256", String(64), nullable=False),
    Column("created_by", String(40), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("published_by", String(40), nullable=True),
    Column("published_at", UTCDateTime, nullable=True),
    Column("superseded_at", UTCDateTime, nullable=True),
    Index("ix_policy_versions_live", "org_id", "state"),
    Index("uq_policy_versions_version", "policy_id", "version", unique=True),
    Index("uq_policy_versions_one_draft", "policy_id", unique=True,
          sqlite_where=text("state = 'draft'"), postgresql_where=text("state = 'draft'")),
    Index("uq_policy_versions_one_live", "policy_id", unique=True,
          sqlite_where=text("state = 'published'"), postgresql_where=text("state = 'published'")),
)

policy_stages = Table(
    "policy_stages",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("policy_version_id", String(40), ForeignKey("policy_versions.id"), nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("required_count", Integer, nullable=False),
    Column("team_id", String(40), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Index("uq_policy_stages_version_ordinal", "policy_version_id", "ordinal", unique=True),
)

approvals = Table(
    "approvals",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("subject_kind", String(30), nullable=False),
    Column("subject_id", String(40), nullable=False),
    #: The object whose relation holders may decide: a mailbox for a send, the organisation for a pause.
    Column("scope_id", String(40), nullable=False),
    #: The person (or Butler) who asked; never eligible to decide.
    Column("actor_id", String(40), nullable=False),
    Column("state", String(15), nullable=False),
    Column("requested_at", UTCDateTime, nullable=False),
    Column("resolved_at", UTCDateTime, nullable=True),
    Column("expires_at", UTCDateTime, nullable=True),
    Index("uq_approvals_subject", "subject_kind", "subject_id", unique=True),
    Index("ix_approvals_pending", "org_id", "state", "requested_at"),
)

approval_stages = Table(
    "approval_stages",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("approval_id", String(40), ForeignKey("approvals.id"), nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("required_count", Integer, nullable=False),
    Column("team_id", String(40), nullable=True),
    Index("uq_approval_stages_approval_ordinal", "approval_id", "ordinal", unique=True),
)

approval_decisions = Table(
    "approval_decisions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("approval_id", String(40), ForeignKey("approvals.id"), nullable=False),
    Column("stage_ordinal", Integer, nullable=False),
    Column("decider_id", String(40), nullable=False),
    Column("decision", String(10), nullable=False),
    Column("decided_at", UTCDateTime, nullable=False),
    Column("withdrawn_at", UTCDateTime, nullable=True),
    #: One decision per person per approval; a withdrawn row still blocks a second one.
    Index("uq_approval_decisions_one_per_person", "approval_id", "decider_id", unique=True),
)

domain_pauses = Table(
    "domain_pauses",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    #: The sending domain (the envelope From's), IDNA A-labels, lower case.
    Column("domain", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("requested_by", String(40), nullable=False),
    Column("requested_at", UTCDateTime, nullable=False),
    Column("placed_at", UTCDateTime, nullable=True),
    Column("lifted_at", UTCDateTime, nullable=True),
    Column("lifted_by", String(40), nullable=True),
    Column("lifted_reason", Text, nullable=True),
    Index("ix_domain_pauses_domain", "org_id", "domain"),
    Index("uq_domain_pauses_in_force", "org_id", "domain", unique=True,
          sqlite_where=text("placed_at IS NOT NULL AND lifted_at IS NULL"),
          postgresql_where=text("placed_at IS NOT NULL AND lifted_at IS NULL")),
)

breaker_limits = Table(
    "breaker_limits",
    metadata,
    Column("org_id", String(40), ForeignKey("organisations.id"), primary_key=True),
    Column("volume_max_recipients", Integer, nullable=True),
    Column("bounce_max_percent", Integer, nullable=True),
    Column("bounce_min_observations", Integer, nullable=True),
    Column("complaint_max_percent", Integer, nullable=True),
    Column("complaint_min_observations", Integer, nullable=True),
    Column("updated_by", String(40), nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)
