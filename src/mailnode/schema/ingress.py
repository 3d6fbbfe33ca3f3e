"""Tables of ingress: one receipt per delivery (per delivered-to address), written before ``250``."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, String, Table, Text, text

from mailnode.db.meta import UTCDateTime, metadata

#: One row per delivered-to address of an SMTP transaction or an ingested file. ``materialised_at`` is
#: NULL until the message, conversation and case exist; ``workflow_done_at`` until the durable workflow
#: (materialise, then the Butler trigger) finished. The start-up and scheduled scans look for either NULL.
ingress_receipts = Table(
    "ingress_receipts",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("mailbox_id", String(40), ForeignKey("mailboxes.id"), nullable=True),
    #: The null reverse path is stored as the empty string (RFC 5321 §4.5.5).
    Column("envelope_from", Text, nullable=False),
    Column("envelope_to", Text, nullable=False),
    Column("remote_addr", Text, nullable=True),
    Column("helo", Text, nullable=True),
    Column("size_bytes", Integer, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("source", String(10), nullable=False),
    Column("received_at", UTCDateTime, nullable=False),
    Column("materialised_at", UTCDateTime, nullable=True),
    Column("message_id", String(40), nullable=True),
    #: When the receipt's durable workflow (materialise, then the Butler trigger) finished. A receipt
    #: materialised in-process by ``mailnode ingest`` has none yet, so ``serve``'s scan still triggers it.
    Column("workflow_done_at", UTCDateTime, nullable=True),
    #: Materialisation attempts started (counted, and committed, before parsing begins) and when the last began.
    #: A receipt attempted ``MATERIALISE_ATTEMPTS_MAX`` times without finishing (the process died each time,
    #: the kernel's out-of-memory killer among the causes) is quarantined on the next attempt (0012).
    Column("materialise_attempts", Integer, nullable=False, server_default="0"),
    Column("materialise_started_at", UTCDateTime, nullable=True),
    #: Set when materialisation raised or was abandoned: the receipt keeps its raw bytes, the repair scan skips
    #: it, doctor (``receipts_quarantined``) and ``GET /api/receipts`` show it, and an administrator re-drives
    #: it (``ingress.quarantine``). ``quarantine_code`` is ``E_MATERIALISE_FAILED`` or ``E_MATERIALISE_ABANDONED``.
    Column("quarantined_at", UTCDateTime, nullable=True),
    Column("quarantine_code", String(40), nullable=True),
    Column("quarantine_error", Text, nullable=True),
    #: How many times an administrator re-drove it; part of the durable workflow id (``workflows.workflow_id``).
    Column("redrives", Integer, nullable=False, server_default="0"),
    Index("ix_ingress_receipts_unmaterialised", "materialised_at", "received_at"),
    Index("ix_ingress_receipts_workflow_pending", "workflow_done_at", "received_at"),
    #: ``retention.io.referenced``: does a receipt still name this blob (0011).
    Index("ix_ingress_receipts_sha256", "sha256"),
    Index("ix_ingress_receipts_quarantined", "quarantined_at"),
    #: doctor's quarantine finding (count and first page, by org): the quarantined few, not every receipt (0026;
    #: neither engine serves ``quarantined_at IS NOT NULL AND org_id = ?`` from the index above).
    Index("ix_ingress_receipts_quarantined_org", "org_id", "id",
          sqlite_where=text("quarantined_at IS NOT NULL"), postgresql_where=text("quarantined_at IS NOT NULL")),
)
