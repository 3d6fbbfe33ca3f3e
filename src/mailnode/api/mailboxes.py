"""Routes for mailboxes: ``POST/GET /api/mailboxes``, ``GET/PATCH /api/mailboxes/{id}``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from mailnode.api.deps import CallerDep, MailboxPageDep, NodeDep, paged
from mailnode.api.directory_models import MailboxAnswer, MailboxPage
from mailnode.api.models import Strict
from mailnode.api.responses import MailboxId, errors
from mailnode.mail import mailboxes

router = APIRouter(prefix="/api/mailboxes", tags=["mailboxes"])


class MailboxIn(Strict):
    """Body of POST /api/mailboxes."""

    name: str
    addresses: list[str] = Field(min_length=1)
    hold_window_seconds: int | None = None


class MailboxPatch(Strict):
    """Body of PATCH /api/mailboxes/{id}; absent fields are left alone, a null hold window restores the default."""

    name: str | None = None
    addresses: list[str] | None = None
    hold_window_seconds: int | None = None


@router.post("", status_code=201, response_model=MailboxAnswer, responses=errors(403, 409))
def create(body: MailboxIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Create a mailbox (administrators)."""
    with node.begin() as conn:
        return {"mailbox": mailboxes.create_mailbox(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                                    at=node.clock.now(), name=body.name, addresses=body.addresses,
                                                    hold_window_seconds=body.hold_window_seconds)}


@router.get("", response_model=MailboxPage)
def list_(node: NodeDep, caller: CallerDep, page: MailboxPageDep) -> dict[str, Any]:
    """The mailboxes the caller may know of."""
    with node.read() as conn:
        items = mailboxes.list_mailboxes(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                         limit=page.limit, cursor=page.cursor)
        return paged("mailboxes", items, page)


@router.get("/{mailbox_id}", response_model=MailboxAnswer)
def get(mailbox_id: MailboxId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One mailbox (404 unless the caller may know of it)."""
    with node.read() as conn:
        return {"mailbox": mailboxes.get_mailbox(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                                 mailbox_id=mailbox_id)}


@router.patch("/{mailbox_id}", response_model=MailboxAnswer, responses=errors(403, 409))
def patch(mailbox_id: MailboxId, body: MailboxPatch, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Change a mailbox's name, addresses or hold window (administrators); null hold window = default."""
    kwargs: dict[str, Any] = {}
    if "hold_window_seconds" in body.model_fields_set:
        kwargs["hold_window_seconds"] = body.hold_window_seconds
    with node.begin() as conn:
        return {"mailbox": mailboxes.update_mailbox(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                                    at=node.clock.now(), mailbox_id=mailbox_id, name=body.name,
                                                    addresses=body.addresses, **kwargs)}
