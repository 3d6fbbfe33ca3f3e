"""Routes for a mailbox's queue: ``GET /api/mailboxes/{id}/queue`` and ``POST /api/cases/bulk``.

The same service functions as the web inbox's queue page (``mail.queue``): the views with their counts and
one page of rows, and bulk claim or close with one outcome per case. Refusals: ``E_NO_SUCH_MAILBOX`` (404),
``E_QUEUE_VIEW_UNKNOWN`` / ``E_QUEUE_CURSOR_INVALID`` / ``E_QUEUE_BULK_EMPTY`` / ``E_QUEUE_BULK_TOO_MANY``
(422); each case's own refusal is in its outcome, not the status.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import Field

from mailnode import budgets
from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.models import Strict
from mailnode.api.queue_models import BulkAnswer, QueueAnswer
from mailnode.api.responses import MailboxId
from mailnode.mail import queue
from mailnode.mail.queue_rules import parse_view

router = APIRouter(prefix="/api", tags=["queue"])


@router.get("/mailboxes/{mailbox_id}/queue", response_model=QueueAnswer)
def get_queue(mailbox_id: MailboxId, node: NodeDep, caller: CallerDep, view: str | None = None,
              cursor: str | None = None, limit: int | None = None) -> dict[str, Any]:
    """One page of a view (``unassigned`` default, ``mine``, ``open``, ``closed``, ``sent``) with every view's
    count: ``{"queue": {mailbox_id, mailbox_name, view, counts, may_work, rows, next_cursor}}``; ``limit``
    clamped to 1..``budgets.LIST_LIMIT_MAX`` (default ``budgets.QUEUE_PAGE_ROWS``)."""
    chosen = parse_view(view)
    size = budgets.QUEUE_PAGE_ROWS if limit is None else max(1, min(limit, budgets.LIST_LIMIT_MAX))
    with node.read() as conn:
        page = queue.read_queue(conn, org_id=caller.org_id, principal_id=caller.principal_id, mailbox_id=mailbox_id,
                                view=chosen, now=node.clock.now(), limit=size, cursor=cursor)
    return {"queue": page.to_json()}


class BulkIn(Strict):
    """Body of ``POST /api/cases/bulk``: claim (for the caller) or close the named cases."""

    action: Literal["claim", "close"]
    #: 1..``budgets.QUEUE_BULK_MAX`` cases, documented and left to ``mail.queue.bulk`` to refuse
    #: (``E_QUEUE_BULK_EMPTY``, ``E_QUEUE_BULK_TOO_MANY``), whose codes a framework refusal would replace.
    case_ids: list[str] = Field(json_schema_extra={"minItems": 1, "maxItems": budgets.QUEUE_BULK_MAX})


@router.post("/cases/bulk", response_model=BulkAnswer)
def bulk_cases(body: BulkIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Claim or close each case in its own transaction: 200 ``{"outcomes": [{case_id, ok, case, error}]}``,
    where a refused case's ``error`` is its four-part refusal and the others are done."""
    outcomes = queue.bulk(node, org_id=caller.org_id, principal_id=caller.principal_id, action=body.action,
                          case_ids=body.case_ids)
    return {"outcomes": [o.to_json() for o in outcomes]}
