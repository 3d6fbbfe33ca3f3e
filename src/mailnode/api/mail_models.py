"""The answers of the application mail API (``api.mail``), as the OpenAPI document states them: the shape
``outbound.mail_reads.mail_items`` builds, field for field (a model that lacked a field would drop it from
the answer: keep the two together).

Instants are strings in ISO 8601 UTC as the node writes them (``datetime.isoformat``), not re-serialised.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.responses import id_field
from mailnode.vocabulary.mail_classes import MailClass
from mailnode.vocabulary.send_states import SendState

_INSTANT: JsonDict = {"format": "date-time"}


class MailEvent(BaseModel):
    """One entry of a recipient's timeline: ``handed_over`` (the node's, ``source`` ``node``) or a delivery
    event recorded for it (``delivered | deferred | bounced | complained | failed | rejected``)."""

    model_config = ConfigDict(extra="forbid")

    event: str
    at: str = Field(json_schema_extra=_INSTANT)
    status: str | None = Field(description="the DSN status, e.g. 5.1.1, when one was given")
    bounce_type: str | None
    source: str = Field(description="node, dsn, arf, resend ...")
    diagnostic: str | None = Field(description="the remote server's own words, when it gave any")


class MailRecipient(BaseModel):
    """One recipient of a mail: its address, kind, submission state, delivery state (null until the
    provider reported one: ``accepted | bounced | deferred | failed | rejected``), why it is suppressed (null
    unless its state is ``suppressed``) and its timeline, oldest first."""

    model_config = ConfigDict(extra="forbid")

    address: str
    kind: Literal["to", "cc", "bcc"]
    submission_state: str
    delivery_state: str | None
    suppression_reason: Literal["hard_bounce", "complaint", "manual", "import"] | None
    events: list[MailEvent]


class MailFrom(BaseModel):
    """The sender: the mailbox address and the display name written in From (null: none)."""

    model_config = ConfigDict(extra="forbid")

    email: str
    name: str | None


class MailAttachment(BaseModel):
    """One attachment as sealed: its name, type and size in bytes (decoded)."""

    model_config = ConfigDict(extra="forbid")

    filename: str
    content_type: str
    size_bytes: int = Field(ge=0)


class MailContent(BaseModel):
    """Which body parts the mail has (its text and HTML are not repeated here) and its attachments."""

    model_config = ConfigDict(extra="forbid")

    text: bool
    html: bool
    attachments: list[MailAttachment]


class Mail(BaseModel):
    """One application mail (a send) in the node's vocabulary."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    id: str = id_field("snd")
    mail_class: MailClass = Field(description="realtime or deferrable as sent; a resend of one "
                                          "(POST /api/sends/{id}/retry) is sealed as correspondence")
    mailbox_id: str = id_field("mbx")
    from_: MailFrom = Field(alias="from")
    reply_to: list[str]
    subject: str
    state: SendState
    state_reason: str | None
    words: str = Field(description="the sentence a person reads for the state and its reason")
    idempotency_key: str | None
    sealed_at: str = Field(json_schema_extra=_INSTANT)
    attempts: int = Field(ge=0, description="hand-over attempts made")
    content_deleted_at: str | None = Field(json_schema_extra=_INSTANT,
                                           description="when retention deleted the sealed body, else null")
    content: MailContent
    headers: dict[str, str] = Field(description="the custom headers given, by name")
    tags: list[str]
    metadata: dict[str, str]
    recipients: list[MailRecipient]


class MailAnswer(BaseModel):
    """``{"mail": Mail}``: POST /api/mail (200 realtime, 202 deferrable) and GET /api/mail/{id}."""

    model_config = ConfigDict(extra="forbid")

    mail: Mail


class MailPage(BaseModel):
    """One page of GET /api/mail: the mail newest first and the cursor of the next page (null at the end)."""

    model_config = ConfigDict(extra="forbid")

    mail: list[Mail]
    next_cursor: str | None = id_field("snd", default=None)
