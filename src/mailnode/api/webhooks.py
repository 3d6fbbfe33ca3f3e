"""``POST /api/webhooks/resend``: provider events, verified by their Svix signature (no bearer token).

The signature is checked over the raw request bytes before anything is parsed or written
(``outbound.webhooks.verify_resend_webhook``): forged, stale or re-serialised bodies get 401
``E_WEBHOOK_SIGNATURE_INVALID`` and change nothing; an unknown event type gets 422 (the provider retries
after an upgrade). A verified event is recorded once per event id (``outbound.provider_events``). A node
without a signing secret answers 404 ``E_WEBHOOK_NOT_CONFIGURED``; a body nested deeper than
``budgets.JSON_NESTING_MAX`` is refused 422 ``E_JSON_TOO_DEEP`` before anything reads it
(``api.json_limit``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from mailnode.api.deps import NodeDep
from mailnode.api.responses import errors
from mailnode.node import Node
from mailnode.outbound.provider_events import record_provider_event
from mailnode.outbound.webhooks import EventKind, ProviderEvent, verify_resend_webhook

router = APIRouter(prefix="/api/webhooks", tags=["webhooks"])


class RecordedEvent(BaseModel):
    """One provider event as received: the provider's id (``svix-id``), its type verbatim and the normalised
    kind (null for a type mailnode ignores), and what happened (``provider_events.record_provider_event``)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    type: str
    kind: EventKind | None
    recorded: bool
    duplicate: bool
    ignored: bool
    attributed: bool = Field(description="matched to one of the node's send recipients")
    event_id: str | None = Field(description="the node's own id of the recorded event, or null")


class RecordedEventAnswer(BaseModel):
    """``{"event": RecordedEvent}``."""

    model_config = ConfigDict(extra="forbid")

    event: RecordedEvent


def _record(node: Node, event: ProviderEvent) -> dict[str, Any]:
    with node.begin() as conn:
        return record_provider_event(conn, event, node.clock.now())


@router.post("/resend", response_model=RecordedEventAnswer, responses=errors(401, 404))
async def resend(request: Request, node: NodeDep) -> dict[str, Any]:
    """Verify and record one Resend event; 200 with what happened (recorded, duplicate or ignored)."""
    body = await request.body()
    event = verify_resend_webhook(body, dict(request.headers), node.settings.resend_webhook_secret)
    outcome = await asyncio.to_thread(_record, node, event)
    return {"event": {"id": event.event_id, "type": event.provider_type,
                      "kind": event.kind.value if event.kind else None, **outcome}}
