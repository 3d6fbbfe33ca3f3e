"""Routes for quarantined receipts (administrators; ``ingress.quarantine``; issue 14 item 1).

``GET /api/receipts?state=quarantined&limit=&cursor=`` lists the receipts whose materialisation raised or was
abandoned, in id order: ``{"receipts": [{id, mailbox_id, envelope_from, envelope_to, size_bytes, sha256, source,
received_at, age_seconds, materialised_at, message_id, materialise_attempts, redrives, quarantined_at,
quarantine_code, quarantine_error}], "next_cursor"}``. ``state`` is the one filter and ``quarantined`` its one
value today (the default); another value is 422 ``E_STATE_UNKNOWN``, a ``cursor`` that is not a receipt id 422
``E_REQUEST_INVALID`` naming ``query.cursor``. Never the message's content: the raw bytes
stay in the evidence store under ``sha256``.

``POST /api/receipts/{id}/redrive``: 202 ``{"receipt": {...}, "started": bool}``: the quarantine is cleared
(audited ``receipt.redrive``) and, when this process runs the durable executor, the materialisation starts at
once (``started`` true); otherwise the node's repair scan starts it within
``MATERIALISE_SCAN_INTERVAL_SECONDS``. 404 ``E_NO_SUCH_RECEIPT``, 409 ``E_RECEIPT_NOT_QUARANTINED``.

Anyone but an administrator gets 403 ``E_NOT_AN_ADMINISTRATOR`` on both.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode import budgets, runtime
from mailnode.api.deps import CallerDep, NodeDep, Page, paged
from mailnode.api.responses import ReceiptId, errors, id_field
from mailnode.errors import invalid
from mailnode.ids import is_id
from mailnode.ingress import quarantine

router = APIRouter(prefix="/api/receipts", tags=["ingress"])

#: The values ``state`` accepts.
STATES = ("quarantined",)


def receipt_page(limit: int | None = Query(default=None), cursor: str | None = Query(default=None)) -> Page:
    """``limit`` clamped to 1..LIST_LIMIT_MAX; ``cursor`` a receipt id (``rcpt_...``), else 422
    ``E_REQUEST_INVALID`` naming ``query.cursor``."""
    if cursor and not is_id(cursor, "rcpt"):
        raise RequestValidationError([{"type": "value_error", "loc": ("query", "cursor"), "input": cursor[:100],
                                       "msg": f"{cursor[:100]!r} is not a receipt id (rcpt_...); pass back the "
                                              "next_cursor of the previous page unchanged"}])
    n = budgets.LIST_LIMIT_DEFAULT if limit is None else max(1, min(limit, budgets.LIST_LIMIT_MAX))
    return Page(limit=n, cursor=cursor or None)


ReceiptPageDep = Annotated[Page, Depends(receipt_page)]


_INSTANT: JsonDict = {"format": "date-time"}


class Receipt(BaseModel):
    """A received message's receipt (``quarantine.receipt_json``): envelope, size, attempts and quarantine;
    never its content. ``age_seconds``: since it was received."""

    model_config = ConfigDict(extra="forbid")

    id: str = id_field("rcpt")
    mailbox_id: str | None
    envelope_from: str
    envelope_to: str
    size_bytes: int
    sha256: str
    source: str
    received_at: str = Field(json_schema_extra=_INSTANT)
    age_seconds: int
    materialised_at: str | None = Field(json_schema_extra=_INSTANT)
    message_id: str | None
    materialise_attempts: int
    redrives: int
    quarantined_at: str | None = Field(json_schema_extra=_INSTANT)
    quarantine_code: str | None
    quarantine_error: str | None


class ReceiptPage(BaseModel):
    """``GET /api/receipts``: one page, and the cursor of the next (null at the end)."""

    model_config = ConfigDict(extra="forbid")

    receipts: list[Receipt]
    next_cursor: str | None = id_field("rcpt")


class Redriven(BaseModel):
    """``POST /api/receipts/{receipt_id}/redrive``: the receipt, and whether its workflow was started now
    (false when no durable runtime runs in this process: ``serve`` picks it up)."""

    model_config = ConfigDict(extra="forbid")

    receipt: Receipt
    started: bool


@router.get("", response_model=ReceiptPage, responses=errors(403))
def list_(node: NodeDep, caller: CallerDep, page: ReceiptPageDep, state: str = "quarantined") -> dict[str, Any]:
    """Quarantined receipts in id order."""
    if state not in STATES:
        raise invalid("E_STATE_UNKNOWN", f"{state[:50]!r} is not a receipt state this route lists.",
                      "Receipts are listed by a closed vocabulary of states.", "Use one of: " + ", ".join(STATES) + ".",
                      state=state[:50])
    with node.read() as conn:
        items = quarantine.list_quarantined(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                            now=node.clock.now(), limit=page.limit, cursor=page.cursor)
    return paged("receipts", items, page)


@router.post("/{receipt_id}/redrive", status_code=202, response_model=Redriven, responses=errors(403, 409))
def redrive(receipt_id: ReceiptId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Clear a receipt's quarantine and materialise it again."""
    with node.begin() as conn:
        receipt = quarantine.redrive(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                     receipt_id=receipt_id, at=node.clock.now())
    started = False
    if runtime.is_launched():
        from mailnode.ingress.workflows import start

        start([receipt_id], {receipt_id: receipt["redrives"]})
        started = True
    return {"receipt": receipt, "started": started}
