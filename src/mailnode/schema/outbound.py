"""Tables of outbound mail: manifests (one per send; the id is the effect key), recipients, and events.

Vocabularies (spec/outbound.md §1.2–§1.3, §2): a manifest's ``state`` is one of ``outbound.states.SendState``;
a recipient's ``delivery_state`` is NULL (unobserved) or ``accepted | bounced | deferred | failed | rejected``.
``send_recipient_events`` keeps every provider event and inbound delivery report, attributed
(``manifest_id`` set) or not (NULL); only attributed rows are ever counted by a breaker. ``drafts`` holds
unsealed compositions: one per (author, reply parent), read and edited only by their author.

A claim (``outbound.dispatch``) writes ``claim_token`` (``<executor id>/<ulid>``) and ``lease_until``;
every write that completes a claim is guarded by the token, so a worker whose lease was recovered
cannot overwrite what its successor did.
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, String, Table, Text, text

from mailnode.db.meta import JSONText, UTCDateTime, metadata

send_manifests = Table(
    "send_manifests",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("mailbox_id", String(40), ForeignKey("mailboxes.id"), nullable=False),
    Column("author_id", String(40), nullable=False),
    Column("mail_class", String(20), nullable=False, server_default="correspondence"),
    Column("in_reply_to_message_id", String(40), nullable=True),
    Column("conversation_id", String(40), nullable=True),
    Column("envelope_from", Text, nullable=False),
    Column("to_addresses", JSONText, nullable=False),
    Column("cc_addresses", JSONText, nullable=False),
    Column("bcc_addresses", JSONText, nullable=False),
    Column("subject", Text, nullable=False),
    Column("rfc_message_id", Text, nullable=False),
    Column("in_reply_to_header", Text, nullable=True),
    Column("references_header", Text, nullable=True),
    Column("auto_submitted", String(20), nullable=True),
    Column("fidelity", String(15), nullable=False),
    Column("body_typed_sha256", String(64), nullable=False),
    Column("body_normalised_sha256", String(64), nullable=False),
    Column("rendered_sha256", String(64), nullable=True),
    Column("sealed_at", UTCDateTime, nullable=False),
    Column("release_at", UTCDateTime, nullable=False),
    Column("state", String(20), nullable=False),
    Column("state_at", UTCDateTime, nullable=False),
    Column("state_reason", String(40), nullable=True),
    Column("last_error", Text, nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("first_attempt_at", UTCDateTime, nullable=True),
    Column("lease_until", UTCDateTime, nullable=True),
    Column("policy_outcome", String(20), nullable=True),
    Column("policy_versions", JSONText, nullable=True),
    Column("resend_of", String(40), nullable=True),
    Column("idempotency_key", Text, nullable=True),
    Column("claim_token", String(120), nullable=True),
    #: ``{address lower-cased: display name}`` for the To and Cc recipients that have one, or NULL (0015).
    Column("display_names", JSONText, nullable=True),
    #: The HTML alternative as the author gave it, in the evidence store, or NULL for text only (0015).
    Column("body_html_sha256", String(64), nullable=True),
    #: ``[{filename, content_type, size_bytes, sha256}]`` of the attachments, in order, or NULL (0015). The
    #: bytes live only inside the rendered message, so retention deletes them with it.
    Column("attachments", JSONText, nullable=True),
    #: The From display name an application gave (``POST /api/mail`` ``from``), or NULL (0023).
    Column("from_name", Text, nullable=True),
    #: ``["Name <addr>" | "addr", ...]``: the Reply-To addresses as written, or NULL (0023).
    Column("reply_to", JSONText, nullable=True),
    #: ``[[name, value], ...]``: the custom headers written (``outbound.mail_fields``), or NULL (0023).
    Column("custom_headers", JSONText, nullable=True),
    #: ``[tag, ...]`` and ``{key: value}`` an application labelled its mail with, or NULL (0023); the rows of
    #: ``send_tags`` and ``send_metadata`` are the same facts, indexed for ``GET /api/mail``'s filters.
    Column("tags", JSONText, nullable=True),
    Column("metadata", JSONText, nullable=True),
    Index("ix_send_manifests_due", "state", "release_at"),
    Index("ix_send_manifests_lease", "state", "lease_until"),
    Index("ix_send_manifests_mailbox", "mailbox_id", "id"),
    #: A conversation's sends (``mail.thread``: the conversation page), by seek (0022).
    Index("ix_send_manifests_conversation", "conversation_id", "sealed_at"),
    #: The notify sweeper's age-out query (mail class, waiting state, sealed before a cutoff); 0011.
    Index("ix_send_manifests_age_out", "mail_class", "state", "sealed_at"),
    #: ``retention.io.referenced`` asks whether a send still names a blob by each digest; 0011.
    Index("ix_send_manifests_body_typed_sha256", "body_typed_sha256"),
    Index("ix_send_manifests_body_normalised_sha256", "body_normalised_sha256"),
    Index("ix_send_manifests_rendered_sha256", "rendered_sha256"),
    Index("ix_send_manifests_body_html_sha256", "body_html_sha256"),
    Index("uq_send_manifests_idempotency", "org_id", "author_id", "idempotency_key", unique=True,
          sqlite_where=text("idempotency_key IS NOT NULL"), postgresql_where=text("idempotency_key IS NOT NULL")),
)

send_recipients = Table(
    "send_recipients",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("manifest_id", String(40), ForeignKey("send_manifests.id"), nullable=False),
    Column("kind", String(3), nullable=False),
    Column("address", Text, nullable=False),
    Column("submission_state", String(20), nullable=False),
    Column("submission_state_at", UTCDateTime, nullable=False),
    Column("delivery_state", String(20), nullable=True),
    Column("delivery_state_at", UTCDateTime, nullable=True),
    Column("bounce_type", String(10), nullable=True),
    Column("last_error", Text, nullable=True),
    Column("last_event_id", String(40), nullable=True),
    Column("transport_message_id", Text, nullable=True),
    Column("provider_message_id", Text, nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("created_at", UTCDateTime, nullable=False),
    #: Why a ``suppressed`` row was suppressed (``outbound.suppression.Reason``), else NULL (0024).
    Column("suppression_reason", String(20), nullable=True),
    Index("uq_send_recipients_manifest_address", "manifest_id", "address", unique=True),
    Index("ix_send_recipients_transport_id", "transport_message_id"),
    Index("ix_send_recipients_provider_message_id", "provider_message_id"),
    Index("ix_send_recipients_handed_over", "org_id", "submission_state", "submission_state_at"),
)

send_recipient_events = Table(
    "send_recipient_events",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    #: Normalised: delivered | bounced | deferred | complained | failed | rejected for attributed rows;
    #: delivery_report | complaint_report for unattributed inbound reports; the provider's type is in ``detail``.
    Column("event_type", String(30), nullable=False),
    Column("recipient", Text, nullable=True),
    Column("manifest_id", String(40), nullable=True),
    Column("recipient_id", String(40), nullable=True),
    Column("status", String(20), nullable=True),
    Column("bounce_type", String(10), nullable=True),
    #: ``dsn`` | ``arf`` | ``resend`` ...
    Column("source", String(20), nullable=False),
    #: The provider's event id (webhook dedup), or ``<msg id>:<recipient>`` for an inbound report.
    Column("source_event_id", Text, nullable=False),
    Column("message_id", String(40), nullable=True),
    Column("received_at", UTCDateTime, nullable=False),
    Column("detail", JSONText, nullable=True),
    Index("uq_send_recipient_events_source", "source", "source_event_id", unique=True),
    Index("ix_send_recipient_events_attributed", "org_id", "event_type", "received_at"),
    Index("ix_send_recipient_events_manifest", "manifest_id"),
)

#: One row per tag of an application mail (0023): ``GET /api/mail?tag=`` finds a page by index.
send_tags = Table(
    "send_tags",
    metadata,
    Column("manifest_id", String(40), ForeignKey("send_manifests.id"), primary_key=True),
    Column("tag", String(64), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Index("ix_send_tags_tag", "org_id", "tag", "manifest_id"),
)

#: One row per metadata entry of an application mail (0023): ``GET /api/mail?metadata=key:value``.
send_metadata = Table(
    "send_metadata",
    metadata,
    Column("manifest_id", String(40), ForeignKey("send_manifests.id"), primary_key=True),
    Column("key", String(20), primary_key=True),
    Column("value", Text, nullable=False),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Index("ix_send_metadata_entry", "org_id", "key", "value", "manifest_id"),
)

drafts = Table(
    "drafts",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("mailbox_id", String(40), ForeignKey("mailboxes.id"), nullable=False),
    Column("author_id", String(40), nullable=False),
    #: The message this draft answers; NULL for a new conversation (any number of those per author).
    Column("in_reply_to_message_id", String(40), nullable=True),
    Column("to_addresses", JSONText, nullable=False),
    Column("cc_addresses", JSONText, nullable=False),
    Column("bcc_addresses", JSONText, nullable=False),
    Column("subject", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index("uq_drafts_author_parent", "author_id", "in_reply_to_message_id", unique=True),
    Index("ix_drafts_author", "org_id", "author_id", "id"),
)
