"""The answer of ``GET /api/conversations/{conversation_id}``, as the OpenAPI document states it
(``api.conversations.get_conversation`` field for field; closed models: a field the service adds and the
model lacks fails loudly, never vanishes). Instants are ISO 8601 UTC strings.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.case_models import Case, Note
from mailnode.api.message_models import ContentDeletedNote, MessageSummary
from mailnode.api.responses import id_field

_INSTANT: JsonDict = {"format": "date-time"}


class _Answer(BaseModel):
    """An answer's part: closed (a field the service adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


class ThreadMessage(MessageSummary):
    """A received message in the thread: its text body when the caller may read it (``body_visible``)."""

    text_body: str | None
    body_visible: bool


class ThreadSendAuthor(_Answer):
    """Who sealed a send: ``person``, ``butler``, ``application``, ``node`` (the node's own mail) or
    ``unknown``."""

    id: str
    kind: str


class ThreadSendWait(_Answer):
    """What a send waits on before it can leave: its gate and the next step (``awaiting``), or the hold
    window and when it ends (``held``)."""

    gate: str | None
    approval_id: str | None = id_field("apr")
    release_at: str | None = Field(json_schema_extra=_INSTANT)
    next_step: str | None


class ThreadSendAttachment(_Answer):
    """One attachment as sealed: its name, type, decoded size and SHA-256."""

    filename: str
    content_type: str
    size_bytes: int
    sha256: str


class ThreadSendBody(_Answer):
    """A send's body as sealed; ``html`` null for text only."""

    text: str
    html: str | None


class ThreadSend(_Answer):
    """One of the node's own sends in the thread (``outbound.reads.send_summary`` without ``retry``), with
    its author, what it waits on, and its body when the caller may read it (``body_visible_because`` says
    why) and retention has not deleted it (``content_deleted``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    id: str = id_field("snd")
    mailbox_id: str = id_field("mbx")
    author_id: str
    state: str
    state_reason: str | None
    reason_words: str
    subject: str
    from_: str = Field(alias="from", description="the envelope sender (RFC 5321 MAIL FROM)")
    to: list[str]
    cc: list[str]
    bcc: list[str]
    sealed_at: str = Field(json_schema_extra=_INSTANT)
    release_at: str = Field(json_schema_extra=_INSTANT)
    state_at: str = Field(json_schema_extra=_INSTANT)
    attempts: int
    last_error: str | None
    rfc_message_id: str
    in_reply_to_message_id: str | None = Field(description="the received message it answers, or null")
    conversation_id: str | None = id_field("cnv")
    resend_of: str | None = id_field("snd")
    auto_submitted: str | None
    content_deleted_at: str | None = Field(json_schema_extra=_INSTANT)
    author: ThreadSendAuthor
    waits_on: ThreadSendWait | None
    display_names: dict[str, str] = Field(description="{address lower-cased: display name} of To and Cc")
    attachments: list[ThreadSendAttachment]
    body_visible: bool
    body_visible_because: str | None = Field(
        description="author, release_or_cancel, approve or content_read; null when the body is not visible")
    content_deleted: ContentDeletedNote | None
    body: ThreadSendBody | None


class ThreadEntry(_Answer):
    """One entry of the thread, in order: ``kind`` names which of ``message``, ``send`` or ``note`` it
    carries (only that one is present); ``at`` is when it was received, sealed or written."""

    kind: Literal["message", "send", "note"]
    at: str = Field(json_schema_extra=_INSTANT)
    message: ThreadMessage | None = None
    send: ThreadSend | None = None
    note: Note | None = None


class Conversation(_Answer):
    """A conversation: its received messages (metadata read), cases, and the thread of messages, sends and
    notes in order."""

    id: str = id_field("cnv")
    subject: str | None
    created_at: str = Field(json_schema_extra=_INSTANT)
    messages: list[MessageSummary]
    cases: list[Case]
    thread: list[ThreadEntry]


class ConversationAnswer(_Answer):
    """``GET /api/conversations/{conversation_id}``: ``{"conversation": Conversation}``."""

    conversation: Conversation

