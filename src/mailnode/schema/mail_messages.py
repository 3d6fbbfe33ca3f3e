"""Tables of messages, their attachments, conversations, cases, and the Message-ID index that threads them.

``message_ids`` maps an RFC 5322 Message-ID (never assumed unique: duplicates and absent ids are normal)
to the conversation it belongs to, for inbound messages and for this node's own sent messages (recorded
at seal), so a reply to either joins the right conversation.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    text,
)

from mailnode.db.meta import JSONText, UTCDateTime, metadata

conversations = Table(
    "conversations",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("subject", Text, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
)

messages = Table(
    "messages",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("mailbox_id", String(40), ForeignKey("mailboxes.id"), nullable=False),
    Column("receipt_id", String(40), ForeignKey("ingress_receipts.id"), nullable=False, unique=True),
    Column("conversation_id", String(40), ForeignKey("conversations.id"), nullable=False),
    Column("case_id", String(40), nullable=True),
    Column("envelope_from", Text, nullable=False),
    Column("envelope_to", Text, nullable=False),
    Column("rfc_message_id", Text, nullable=True),
    Column("in_reply_to", Text, nullable=True),
    Column("references", JSONText, nullable=False),
    Column("subject", Text, nullable=True),
    Column("from_name", Text, nullable=True),
    Column("from_address", Text, nullable=True),
    Column("date", UTCDateTime, nullable=True),
    Column("received_at", UTCDateTime, nullable=False),
    Column("automated", String(40), nullable=True),
    Column("reply_refusal", String(40), nullable=True),
    Column("dmarc", String(20), nullable=True),
    Column("spf", String(20), nullable=True),
    Column("dkim", String(20), nullable=True),
    Column("attachments", Integer, nullable=False),
    Column("dangerous_attachments", Integer, nullable=False),
    Column("report_kind", String(20), nullable=True),
    Column("parse_error", Text, nullable=True),
    Column("defects", JSONText, nullable=False),
    Column("headers", JSONText, nullable=False),
    Column("text_body", Text, nullable=True),
    #: Which part ``text_body`` came from: ``text/plain``, ``text/html`` (made from the HTML) or ``none``; NULL
    #: for a message materialised before issue 15, whose text, HTML and attachment list are read from its raw
    #: bytes instead (``ingress.reading``).
    Column("text_body_type", String(20), nullable=True),
    #: The section number of the HTML body part (``ingress.attachments.sections``), or NULL when it has none.
    Column("html_part", String(40), nullable=True),
    Column("raw_sha256", String(64), nullable=False),
    Column("size_bytes", Integer, nullable=False),
    Index("ix_messages_mailbox", "mailbox_id", "id"),
    Index("ix_messages_conversation", "conversation_id", "received_at"),
    #: ``retention.io.referenced``: does a message still name this blob (0011).
    Index("ix_messages_raw_sha256", "raw_sha256"),
    #: ``mail.queue``: a case's latest message, and a page's per-case totals (0020).
    Index("ix_messages_case", "case_id", "id"),
    #: doctor's loop-detection finding asks whether any message of the org is a threaded reply; without this it
    #: read every message of a node that has none (0026).
    Index("ix_messages_threaded", "org_id",
          sqlite_where=text("in_reply_to IS NOT NULL"), postgresql_where=text("in_reply_to IS NOT NULL")),
)

#: One row per attachment a reader sees (``ingress.attachments.listed``), written at materialisation with the
#: message; a message whose ``text_body_type`` is NULL has none written and is read from its raw bytes.
message_attachments = Table(
    "message_attachments",
    metadata,
    Column("message_id", String(40), ForeignKey("messages.id"), nullable=False),
    #: IMAP section number (RFC 3501 §6.4.5): ``2``, ``1.2``.
    Column("part_id", String(40), nullable=False),
    Column("filename", Text, nullable=True),
    Column("safe_filename", Text, nullable=False),
    Column("content_type", Text, nullable=False),
    Column("sniffed_type", String(100), nullable=True),
    Column("size_bytes", Integer, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("inline", Boolean, nullable=False),
    Column("content_id", Text, nullable=True),
    Column("danger", String(20), nullable=True),
    PrimaryKeyConstraint("message_id", "part_id", name="pk_message_attachments"),
)

message_ids = Table(
    "message_ids",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("rfc_message_id", Text, nullable=False),
    Column("conversation_id", String(40), ForeignKey("conversations.id"), nullable=False),
    #: ``msg_...`` for an inbound message, ``snd_...`` for one of this node's sends.
    Column("source_id", String(40), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_message_ids_lookup", "org_id", "rfc_message_id"),
)

cases = Table(
    "cases",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("conversation_id", String(40), ForeignKey("conversations.id"), nullable=False),
    Column("mailbox_id", String(40), ForeignKey("mailboxes.id"), nullable=False),
    Column("state", String(10), nullable=False),
    Column("assignee_id", String(40), nullable=True),
    Column("assigned_at", UTCDateTime, nullable=True),
    Column("opened_at", UTCDateTime, nullable=False),
    Column("closed_at", UTCDateTime, nullable=True),
    Column("closed_by", String(40), nullable=True),
    Index("uq_cases_open_per_conversation_mailbox", "conversation_id", "mailbox_id", unique=True,
          sqlite_where=text("state = 'open'"), postgresql_where=text("state = 'open'")),
    Index("ix_cases_mailbox_state", "mailbox_id", "state", "id"),
    #: ``mail.queue.view_counts``: a mailbox's cases grouped by state and holder, from the index alone (0020).
    Index("ix_cases_mailbox_state_assignee", "mailbox_id", "state", "assignee_id"),
    #: A conversation's cases of every state (``mail.thread``, ``mail.presence``), by seek (0022).
    Index("ix_cases_conversation", "conversation_id", "opened_at"),
)

#: Internal notes on a case (issue 15): written by a person holding ``send.propose`` on the case's mailbox,
#: shown in the conversation, never sent. Deleted with their case (``mail.cases.remove``); 0015.
case_notes = Table(
    "case_notes",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("case_id", String(40), ForeignKey("cases.id"), nullable=False),
    Column("conversation_id", String(40), ForeignKey("conversations.id"), nullable=False),
    Column("mailbox_id", String(40), ForeignKey("mailboxes.id"), nullable=False),
    Column("author_id", String(40), nullable=False),
    Column("body", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_case_notes_conversation", "conversation_id", "created_at"),
    Index("ix_case_notes_case", "case_id"),
)

#: Who has a composer open on which conversation (issue 16, collision detection): one row per (conversation,
#: person), refreshed by the composer's heartbeat and live until ``expires_at``
#: (``budgets.COMPOSER_PRESENCE_TTL_SECONDS`` after the last one). Not history: rows are replaced and expire;
#: ``mail.presence``. 0021.
composer_presence = Table(
    "composer_presence",
    metadata,
    Column("conversation_id", String(40), ForeignKey("conversations.id"), primary_key=True),
    Column("person_id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("seen_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
)
