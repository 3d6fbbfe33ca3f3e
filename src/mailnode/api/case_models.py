"""The answers about cases and their notes, as the OpenAPI document states them (``cases.case_json`` and
``notes.note_json`` field for field; closed models: a field the service adds and the model lacks fails
loudly, never vanishes). Instants are strings in ISO 8601 UTC as the node writes them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.responses import id_field

_INSTANT: JsonDict = {"format": "date-time"}


class _Answer(BaseModel):
    """An answer's part: closed (a field the service adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


class Case(_Answer):
    """A case: one conversation's work in one mailbox, open or closed, and who holds it."""

    id: str = id_field("cas")
    conversation_id: str = id_field("cnv")
    mailbox_id: str = id_field("mbx")
    state: str = Field(description="open or closed")
    assignee_id: str | None
    assigned_at: str | None = Field(json_schema_extra=_INSTANT)
    opened_at: str = Field(json_schema_extra=_INSTANT)
    closed_at: str | None = Field(json_schema_extra=_INSTANT)


class CaseAnswer(_Answer):
    """``{"case": Case}``: a case claimed, closed or reopened."""

    case: Case


class CasePage(_Answer):
    """``GET /api/cases``: one page, and the cursor of the next (null at the end)."""

    cases: list[Case]
    next_cursor: str | None = id_field("cas")


class CaseDeleted(_Answer):
    """``DELETE /api/cases/{case_id}``: the case deleted."""

    deleted: str = id_field("cas")


class Note(_Answer):
    """A note on a case, for the people who work it."""

    id: str = id_field("nte")
    case_id: str = id_field("cas")
    conversation_id: str = id_field("cnv")
    mailbox_id: str = id_field("mbx")
    author_id: str
    body: str
    created_at: str = Field(json_schema_extra=_INSTANT)


class NoteAnswer(_Answer):
    """``{"note": Note}``: ``POST /api/cases/{case_id}/notes``."""

    note: Note
