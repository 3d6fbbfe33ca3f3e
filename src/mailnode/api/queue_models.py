"""The answers of a mailbox's queue and of bulk case actions, as the OpenAPI document states them
(``mail.queue.QueuePage.to_json`` and ``BulkOutcome.to_json`` field for field; closed models: a field the
service adds and the model lacks fails loudly, never vanishes). Instants are ISO 8601 UTC strings.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.case_models import Case
from mailnode.api.responses import ERROR_CODE_PATTERN, id_field

_INSTANT: JsonDict = {"format": "date-time"}


class _Answer(BaseModel):
    """An answer's part: closed (a field the service adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


class QueueCounts(_Answer):
    """How many rows each view holds."""

    unassigned: int
    mine: int
    open: int
    closed: int
    sent: int


class QueueRow(_Answer):
    """One row of a view (``mail.queue.QueueRow``): a case, or in the ``sent`` view one of the mailbox's sends."""

    kind: Literal["case", "send"]
    id: str = Field(description="the case's cas_ id, or the send's snd_ id")
    conversation_id: str | None = id_field("cnv")
    key: str = Field(description="the row's sort and cursor key")
    correspondent_name: str | None
    correspondent_address: str | None
    subject: str | None
    snippet: str | None = Field(description="the start of the latest text, null when hidden or absent")
    snippet_hidden: str | None = Field(description="why the snippet is hidden, in words, or null")
    at: str = Field(json_schema_extra=_INSTANT)
    age_seconds: int
    holder_id: str | None
    holder: str | None = Field(description="who holds the case: you, a name or an id; null when nobody does")
    state: str = Field(description="the case's open or closed, or the send's state")
    state_words: str | None = Field(description="a send's state in words; null for a case")
    messages: int
    attachments: bool
    dangerous: bool
    automated: str | None


class Queue(_Answer):
    """One page of one view of a mailbox's queue, with every view's count; ``may_work``: the caller may
    claim and close here (``send.propose`` on the mailbox)."""

    mailbox_id: str = id_field("mbx")
    mailbox_name: str
    view: Literal["unassigned", "mine", "open", "closed", "sent"]
    counts: QueueCounts
    may_work: bool
    rows: list[QueueRow]
    next_cursor: str | None


class QueueAnswer(_Answer):
    """``GET /api/mailboxes/{mailbox_id}/queue``: ``{"queue": Queue}``."""

    queue: Queue


class BulkRefusal(_Answer):
    """Why one case of a bulk action was refused: the refusal's four parts."""

    code: str = Field(pattern=ERROR_CODE_PATTERN)
    what: str
    why: str
    fix: str


class BulkOutcome(_Answer):
    """What one case became: done (``ok``, ``case`` its new state) or refused (``error``)."""

    case_id: str
    ok: bool
    case: Case | None
    error: BulkRefusal | None


class BulkAnswer(_Answer):
    """``POST /api/cases/bulk``: one outcome per case named, in the order named (repeats once)."""

    outcomes: list[BulkOutcome]
