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
from mailnode.vocabulary.send_states import SendState

_INSTANT: JsonDict = {"format": "date-time"}


class MailRecipient(BaseModel):
    """One recipient of a mail: its address, kind, submission state and delivery state (null until the
    provider reported one: ``accepted | bounced | deferred | failed | rejected``)."""

    model_config = ConfigDict(extra="forbid")

    address: str
    kind: Literal["to", "cc", "bcc"]
    submission_state: str
    delivery_state: str | None


class Mail(BaseModel):
    """One application mail (a send) in the node's vocabulary."""

    model_config = ConfigDict(extra="forbid")

    id: str = id_field("snd")
    mail_class: Literal["realtime", "deferrable"]
    mailbox_id: str = id_field("mbx")
    state: SendState
    state_reason: str | None
    words: str = Field(description="the sentence a person reads for the state and its reason")
    idempotency_key: str | None
    sealed_at: str = Field(json_schema_extra=_INSTANT)
    attempts: int = Field(ge=0, description="hand-over attempts made")
    content_deleted_at: str | None = Field(json_schema_extra=_INSTANT,
                                           description="when retention deleted the sealed body, else null")
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
