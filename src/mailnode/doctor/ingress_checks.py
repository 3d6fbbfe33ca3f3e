"""The doctor's ingress checks.

- ``receipts_quarantined``: each receipt whose materialisation raised or was abandoned after
  ``MATERIALISE_ATTEMPTS_MAX`` unfinished attempts (``ingress.quarantine``), with its id, mailbox, age in
  seconds since it was received, code and error, and the route that re-drives it. Degraded: the mail was
  accepted (``250``) and its raw bytes are kept, but nobody sees it as a message until it is re-driven.
- ``materialisation_backlog``: how many accepted receipts wait to be materialised (neither materialised nor
  quarantined) and the age of the oldest, in seconds since it was received (UTC). Accept first, materialise
  after (issue 19): a burst is answered ``250`` at listener speed and drains after, so a backlog is normal
  while young. Degraded once the oldest is ``budgets.MATERIALISE_BACKLOG_AGE_MAX_SECONDS`` old or older: the
  backlog is not draining (no process materialises, or mail arrives faster than it is materialised).

Each takes ``(node, org_id)``, reads, and returns one ``Finding``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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


@dataclass(frozen=True)
class Backlog:
    """What ``materialisation_backlog`` read: receipts waiting, and the oldest one's age in seconds (None when
    none waits)."""

    waiting: int
    oldest_age_seconds: int | None


def backlog_finding(backlog: Backlog, age_max_seconds: float) -> Finding:
    """The ``materialisation_backlog`` finding for ``backlog`` (pure): ok while the oldest waiting receipt is
    younger than ``age_max_seconds``; an empty backlog is ok and says so in words."""
    name = "materialisation_backlog"
    data = {"waiting": backlog.waiting, "oldest_age_seconds": backlog.oldest_age_seconds,
            "age_max_seconds": age_max_seconds}
    if backlog.waiting == 0 or backlog.oldest_age_seconds is None:
        return Finding(name, Severity.DEGRADED, True,
                       "none waiting: every accepted receipt is materialised or quarantined", data=data)
    words = (f"{backlog.waiting} accepted receipts wait to be materialised, the oldest received "
             f"{backlog.oldest_age_seconds} s ago (degraded from {age_max_seconds:.0f} s)")
    if backlog.oldest_age_seconds < age_max_seconds:
        return Finding(name, Severity.DEGRADED, True, words, data=data)
    return Finding(name, Severity.DEGRADED, False, words,
                   "The backlog is not draining. Check that a mailnode serve process runs over this database and "
                   "logs no materialise errors; if mail arrives faster than it is materialised, add a process or "
                   "move to PostgreSQL (docs/operations.md).", data)


def read_backlog(node: Node, org_id: str, now: datetime) -> Backlog:
    """The organisation's receipts neither materialised nor quarantined: how many, and the oldest one's age in
    whole seconds at ``now`` (UTC)."""
    t = ingress_receipts.c
    with node.read() as conn:
        waiting, oldest = conn.execute(
            select(func.count(), func.min(t.received_at))
            .where(t.org_id == org_id, t.materialised_at.is_(None), t.quarantined_at.is_(None))).one()
    if not waiting or oldest is None:
        return Backlog(0, None)
    return Backlog(int(waiting), max(0, int((now - oldest).total_seconds())))


def materialisation_backlog(node: Node, org_id: str | None) -> Finding:
    """Accepted receipts waiting to be materialised, and the age of the oldest (``backlog_finding``)."""
    if org_id is None:
        return Finding("materialisation_backlog", Severity.REPORT, False,
                       "no organisation: the node is not initialised", "Run mailnode init.")
    return backlog_finding(read_backlog(node, org_id, node.clock.now()), budgets.MATERIALISE_BACKLOG_AGE_MAX_SECONDS)


#: The ingress checks, in report order.
INGRESS_CHECKS = {
    "receipts_quarantined": receipts_quarantined,
    "materialisation_backlog": materialisation_backlog,
}
