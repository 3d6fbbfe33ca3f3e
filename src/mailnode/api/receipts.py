"""Routes for quarantined receipts (administrators; ``ingress.quarantine``; issue 14 item 1).

``GET /api/receipts?state=quarantined&limit=&cursor=`` lists the receipts whose materialisation raised or was
abandoned, in id order: ``{"receipts": [{id, mailbox_id, envelope_from, envelope_to, size_bytes, sha256, source,
received_at, age_seconds, materialised_at, message_id, materialise_attempts, redrives, quarantined_at,
quarantine_code, quarantine_error}], "next_cursor"}``. ``state`` is the one filter and ``quarantined`` its one
value today (the default); another value is 422 ``E_STATE_UNKNOWN``. Never the message's content: the raw bytes
stay in the evidence store under ``sha256``.

``POST /api/receipts/{id}/redrive``: 202 ``{"receipt": {...}, "started": bool}``: the quarantine is cleared
(audited ``receipt.redrive``) and, when this process runs the durable executor, the materialisation starts at
once (``started`` true); otherwise the node's repair scan starts it within
``MATERIALISE_SCAN_INTERVAL_SECONDS``. 404 ``E_NO_SUCH_RECEIPT``, 409 ``E_RECEIPT_NOT_QUARANTINED``.

Anyone but an administrator gets 403 ``E_NOT_AN_ADMINISTRATOR`` on both.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode import runtime
from mailnode.api.deps import CallerDep, NodeDep, PageDep, paged
from mailnode.errors import invalid
from mailnode.ingress import quarantine

router = APIRouter(prefix="/api/receipts", tags=["ingress"])

#: The values ``state`` accepts.
STATES = ("quarantined",)


@router.get("")
def list_(node: NodeDep, caller: CallerDep, page: PageDep, state: str = "quarantined") -> dict[str, Any]:
    """Quarantined receipts in id order."""
    if state not in STATES:
        raise invalid("E_STATE_UNKNOWN", f"{state[:50]!r} is not a receipt state this route lists.",
                      "Receipts are listed by a closed vocabulary of states.", "Use one of: " + ", ".join(STATES) + ".",
                      state=state[:50])
    with node.read() as conn:
        items = quarantine.list_quarantined(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                            now=node.clock.now(), limit=page.limit, cursor=page.cursor)
    return paged("receipts", items, page)


@router.post("/{receipt_id}/redrive", status_code=202)
def redrive(receipt_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
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
