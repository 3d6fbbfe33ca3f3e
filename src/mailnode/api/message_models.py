"""The answers about received messages, as the OpenAPI document states them (``ingress.viewing.summary`` and
``viewing.view`` field for field; closed models: a field the service adds and the model lacks fails loudly,
never vanishes). Instants are strings in ISO 8601 UTC as the node writes them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.responses import id_field

_INSTANT: JsonDict = {"format": "date-time"}


class _Answer(BaseModel):
    """An answer's part: closed (a field the service adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


class MessageAuthentication(_Answer):
    """The message's DMARC, SPF and DKIM results as the node evaluated them on arrival (null: not evaluated)."""

    dmarc: str | None
    spf: str | None
    dkim: str | None


class MessageSummary(_Answer):
    """A received message as a list shows it (no body): ``content_deleted_at`` is set once retention deleted
    its content (spec/transactional.md §5)."""

    content_deleted_at: str | None = Field(json_schema_extra=_INSTANT)
    id: str = id_field("msg")
    mailbox_id: str = id_field("mbx")
    subject: str | None
    from_name: str | None
    from_address: str | None
    envelope_from: str = Field(description="the SMTP MAIL FROM (RFC 5321 §4.1.1.2)")
    envelope_to: str = Field(description="the SMTP RCPT TO this copy was delivered for")
    received_at: str = Field(json_schema_extra=_INSTANT)
    date: str | None = Field(json_schema_extra=_INSTANT, description="the Date header (RFC 5322), if readable")
    automated: str | None = Field(description="why the node judged it automated (ingress.classify), or null")
    reply_refusal: str | None = Field(description="why the node would not answer it automatically, or null")
    authentication: MessageAuthentication
    attachments: int = Field(description="how many attachments it carries")
    dangerous_attachments: int = Field(description="how many of them carry a danger token")
    report_kind: str | None = Field(description="the kind of report it is (a delivery or feedback report), or null")
    parse_error: str | None = Field(description="why it could not be fully parsed; null once its content is deleted")
    conversation_id: str = id_field("cnv")
    case_id: str | None = id_field("cas")
    rfc_message_id: str | None = Field(description="its Message-ID header (RFC 5322 §3.6.4)")


class MessagePage(_Answer):
    """``GET /api/mailboxes/{mailbox_id}/messages``: one page, newest first, and the cursor of the next
    (null at the end)."""

    messages: list[MessageSummary]
    next_cursor: str | None = id_field("msg")


class MessageHeader(_Answer):
    """One header field as data, in the order received (never re-rendered as a header)."""

    name: str
    value: str


class MessageAttachment(_Answer):
    """One attachment: the file name as given and safe to save, declared and sniffed type, decoded size and
    SHA-256, whether it is shown inline, its Content-ID (RFC 2392), its danger token and the route of its bytes."""

    part: str = Field(description="the part's IMAP section number (RFC 3501 §6.4.5)")
    filename: str | None
    safe_filename: str
    content_type: str
    sniffed_type: str | None
    size_bytes: int
    sha256: str
    inline: bool
    content_id: str | None
    danger: str | None
    url: str = Field(description="GET route of its decoded bytes")


class ContentDeletedNote(_Answer):
    """How retention's deletion of the content is said (``retention.rules.deletion_note``): the words of
    ``E_CONTENT_DELETED`` as data."""

    at: str = Field(json_schema_extra=_INSTANT)
    setting: str = Field(description="the retention setting that aged it out")
    words: str
    fix: str


class MessageView(MessageSummary):
    """One message with its headers, bodies and attachment list (``viewing.view``); once retention deleted
    its content, ``headers``, ``text_body``, ``text_body_type``, ``html_body``, ``attachment_list`` and
    ``defects`` are null and ``content_deleted`` says so."""

    in_reply_to: str | None
    references: list[str]
    size_bytes: int
    sha256: str
    headers: list[MessageHeader] | None
    text_body: str | None
    text_body_type: str | None = Field(description="where text_body came from (the text part or the HTML)")
    html_body: str | None = Field(description="the HTML sanitised for display")
    remote_images_removed: int
    attachment_list: list[MessageAttachment] | None
    defects: list[str] | None
    content_deleted: ContentDeletedNote | None


class MessageAnswer(_Answer):
    """``GET /api/messages/{message_id}``: ``{"message": MessageView}``."""

    message: MessageView
