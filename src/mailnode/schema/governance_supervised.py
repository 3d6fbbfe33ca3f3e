"""The table of supervised grants (seed 003 §7 via spec/butler.md §8.2 ``inspect``; spec/outbound.md §6.2).

A supervised grant (``sgr_``) lets one person (``grantee_id``, who asked for it) read one mailbox's mail facts
(``scope``: ``metadata`` — subject lines and sender addresses — or ``content``) for ``duration_seconds``,
for a stated ``reason``. It is a request while ``granted_at`` is NULL and ``refused_at`` is NULL; two holders
of ``approval.decide`` on the mailbox other than the grantee grant it (approval subject kind
``supervised_read``, ``budgets.SUPERVISED_STAGES``), which sets ``granted_at`` and ``expires_at`` =
``granted_at + duration_seconds``; a denial or an unfillable approval sets ``refused_at``. It is live while
``granted_at <= now < expires_at``. Every read it opens is audited ``supervised.opened`` before the facts
are shown. Not a relationship tuple: nothing else in the node reads it as one.
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, String, Table, Text

from mailnode.db.meta import UTCDateTime, metadata

#: What a grant opens: ``metadata`` (subject lines, sender addresses) or ``content``.
SUPERVISED_SCOPES = ("metadata", "content")

supervised_grants = Table(
    "supervised_grants",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("mailbox_id", String(40), ForeignKey("mailboxes.id"), nullable=False),
    #: The person who asked and who may read under it.
    Column("grantee_id", String(40), nullable=False),
    #: One of ``SUPERVISED_SCOPES``.
    Column("scope", String(20), nullable=False),
    Column("reason", Text, nullable=False),
    #: How long the grant lives once granted (seconds, at most ``budgets.SUPERVISED_GRANT_MAX_SECONDS``).
    Column("duration_seconds", Integer, nullable=False),
    Column("requested_at", UTCDateTime, nullable=False),
    Column("granted_at", UTCDateTime, nullable=True),
    Column("expires_at", UTCDateTime, nullable=True),
    Column("refused_at", UTCDateTime, nullable=True),
    Index("ix_supervised_grants_grantee", "org_id", "grantee_id", "mailbox_id"),
)
