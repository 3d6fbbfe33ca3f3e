"""The doctor's ingress checks.

- ``receipts_quarantined``: each receipt whose materialisation raised or was abandoned after
  ``MATERIALISE_ATTEMPTS_MAX`` unfinished attempts (``ingress.quarantine``), with its id, mailbox, age in
  seconds since it was received, code and error, and the route that re-drives it. Degraded: the mail was
  accepted (``250``) and its raw bytes are kept, but nobody sees it as a message until it is re-driven.

Each takes ``(node, org_id)``, reads, and returns one ``Finding``.
"""

from __future__ import annotations

from sqlalchemy import func, select

from mailnode import budgets
from mailnode.doctor.findings import Finding, Severity
from mailnode.ingress import quarantine
from mailnode.node import Node
from mailnode.schema.ingress import ingress_receipts


def receipts_quarantined(node: Node, org_id: str | None) -> Finding:
    """Receipts set aside because materialising them failed, oldest first (at most LIST_LIMIT_MAX listed)."""
    name = "receipts_quarantined"
    if org_id is None:
        return Finding(name, Severity.REPORT, False, "no organisation: the node is not initialised",
                       "Run mailnode init.")
    t = ingress_receipts.c
    now = node.clock.now()
    with node.read() as conn:
        total = conn.execute(select(func.count()).select_from(ingress_receipts)
                             .where(t.org_id == org_id, t.quarantined_at.is_not(None))).scalar_one()
        rows = quarantine.quarantined(conn, org_id, limit=budgets.LIST_LIMIT_MAX)
    if not total:
        return Finding(name, Severity.DEGRADED, True, "no receipt is quarantined")
    items = [{key: value for key, value in quarantine.receipt_json(r, now).items()
              if key in ("id", "mailbox_id", "envelope_to", "received_at", "age_seconds", "quarantined_at",
                         "materialise_attempts", "quarantine_code", "quarantine_error")} for r in rows]
    text = "; ".join(f"{r['id']} to {r['envelope_to']}, received {r['age_seconds']} s ago: {r['quarantine_code']}: "
                     f"{r['quarantine_error']}" for r in items[:10])
    more = f" (and {total - 10} more)" if total > 10 else ""
    return Finding(name, Severity.DEGRADED, False, f"{total} receipts quarantined: {text}{more}",
                   "The mail was accepted and its raw bytes are kept, but it is not shown as a message. Fix the cause "
                   "(see the error and the log line materialise.quarantined), then re-drive each: POST "
                   "/api/receipts/{id}/redrive or mailnode receipt redrive ID.",
                   {"count": total, "receipts": items})


#: The ingress checks, in report order.
INGRESS_CHECKS = {
    "receipts_quarantined": receipts_quarantined,
}
