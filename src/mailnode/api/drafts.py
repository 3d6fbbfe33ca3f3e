"""Routes for drafts: ``POST/GET /api/drafts``, ``GET/PUT/DELETE /api/drafts/{id}`` (the author only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.deps import CallerDep, DraftPageDep, NodeDep, paged
from mailnode.api.models import Strict
from mailnode.api.responses import DraftId, errors, id_field
from mailnode.outbound import drafts
from mailnode.retention import holds

router = APIRouter(prefix="/api/drafts", tags=["drafts"])


class DraftIn(Strict):
    """A new draft: its mailbox, the message it answers (optional), recipients, subject and body."""

    mailbox_id: str
    in_reply_to_message_id: str | None = None
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    bcc: list[str] = Field(default_factory=list)
    subject: str = ""
    body: str = ""


class DraftPatch(Strict):
    """The fields of a draft to replace; absent fields stay as they are."""

    to: list[str] | None = None
    cc: list[str] | None = None
    bcc: list[str] | None = None
    subject: str | None = None
    body: str | None = None


_INSTANT: JsonDict = {"format": "date-time"}


class Draft(BaseModel):
    """A draft (``drafts.draft_json``): addresses as kept, the reply it answers (null for a new mail)."""

    model_config = ConfigDict(extra="forbid")

    id: str = id_field("dft")
    mailbox_id: str = id_field("mbx")
    author_id: str
    in_reply_to_message_id: str | None
    to: list[str]
    cc: list[str]
    bcc: list[str]
    subject: str
    body: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    updated_at: str = Field(json_schema_extra=_INSTANT)


class DraftAnswer(BaseModel):
    """``{"draft": Draft}``."""

    model_config = ConfigDict(extra="forbid")

    draft: Draft


class DraftPage(BaseModel):
    """``GET /api/drafts``: one page, and the cursor of the next (null at the end)."""

    model_config = ConfigDict(extra="forbid")

    drafts: list[Draft]
    next_cursor: str | None = id_field("dft")


class DraftDeleted(BaseModel):
    """``DELETE /api/drafts/{draft_id}``: the draft deleted."""

    model_config = ConfigDict(extra="forbid")

    deleted: str = id_field("dft")


@router.post("", status_code=201, response_model=DraftAnswer, responses=errors(403))
def create(body: DraftIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Save a draft (``send.propose`` on its mailbox; one per reply parent)."""
    with node.begin() as conn:
        return {"draft": drafts.create(conn, org_id=caller.org_id, author_id=caller.principal_id,
                                       at=node.clock.now(), mailbox_id=body.mailbox_id,
                                       in_reply_to_message_id=body.in_reply_to_message_id, to=body.to, cc=body.cc,
                                       bcc=body.bcc, subject=body.subject, body=body.body)}


@router.get("", response_model=DraftPage)
def list_(node: NodeDep, caller: CallerDep, page: DraftPageDep) -> dict[str, Any]:
    """The caller's drafts."""
    with node.read() as conn:
        return paged("drafts", drafts.list_(conn, org_id=caller.org_id, author_id=caller.principal_id,
                                            limit=page.limit, cursor=page.cursor), page)


@router.get("/{draft_id}", response_model=DraftAnswer)
def get(draft_id: DraftId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One of the caller's drafts."""
    with node.read() as conn:
        return {"draft": drafts.get(conn, org_id=caller.org_id, author_id=caller.principal_id, draft_id=draft_id)}


@router.put("/{draft_id}", response_model=DraftAnswer, responses=errors(403))
def edit(draft_id: DraftId, body: DraftPatch, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Replace the fields given."""
    values = {k: getattr(body, k) for k in body.model_fields_set}
    with node.begin() as conn:
        return {"draft": drafts.edit(conn, org_id=caller.org_id, author_id=caller.principal_id, at=node.clock.now(),
                                     draft_id=draft_id, **values)}


@router.delete("/{draft_id}", response_model=DraftDeleted, responses=errors(409))
def remove(draft_id: DraftId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Delete one of the caller's drafts (``E_LEGAL_HOLD``, 409, and ``hold.blocked`` when a hold covers it)."""
    with holds.deleting(node) as conn:
        drafts.remove(conn, org_id=caller.org_id, author_id=caller.principal_id, at=node.clock.now(),
                      draft_id=draft_id)
    return {"deleted": draft_id}
