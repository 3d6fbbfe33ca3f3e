"""Quarantine: a receipt whose materialisation raised, or never finished, is set aside instead of retried.

As Mailman's runners shunt a message that breaks them, a receipt whose materialisation raises (MemoryError,
RecursionError, a bug) or which was attempted ``budgets.MATERIALISE_ATTEMPTS_MAX`` times without finishing (the
process died each time: a kernel out-of-memory kill records nothing, so attempts are counted and committed
before parsing starts) is quarantined (issue 14 item 1):

- its raw bytes stay in the evidence store and the receipt row records when, a stable code and the error:
  ``E_MATERIALISE_FAILED`` (materialisation raised; the error names the exception) or
  ``E_MATERIALISE_ABANDONED`` (attempted too often without finishing);
- the repair scan (``workflows.scan_unmaterialised``) skips it, so a restart does not parse it again;
- doctor reports it (``receipts_quarantined``) and ``GET /api/receipts?state=quarantined`` lists it
  (administrators);
- an administrator re-drives it once the cause is fixed (``POST /api/receipts/{id}/redrive``,
  ``mailnode receipt redrive ID``; audited ``receipt.redrive``): the quarantine and the attempt count are
  cleared and ``redrives`` goes up by one, which gives the next durable workflow an id of its own.

Decisions are pure (:func:`abandoned`, :func:`failure_text`); the rest reads or writes one receipt row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, select, update

from mailnode import audit, budgets
from mailnode.authz import require_admin
from mailnode.errors import MailnodeError, not_found
from mailnode.node import Node
from mailnode.schema.ingress import ingress_receipts

#: Materialisation raised; ``quarantine_error`` names the exception and its text.
FAILED = "E_MATERIALISE_FAILED"
#: Attempted ``MATERIALISE_ATTEMPTS_MAX`` times without finishing (the process died during each attempt).
ABANDONED = "E_MATERIALISE_ABANDONED"


def abandoned(attempts: int) -> bool:
    """Whether an attempt numbered ``attempts`` (1 for the first) must quarantine instead of parsing (pure):
    the ``MATERIALISE_ATTEMPTS_MAX`` before it each started and never finished."""
    return attempts > budgets.MATERIALISE_ATTEMPTS_MAX


def abandoned_text(attempts: int) -> str:
    """``quarantine_error`` of an abandoned receipt (pure)."""
    before = attempts - 1
    return (f"Materialisation was started {before} times and never finished (the process stopped during each "
            "attempt; the kernel's out-of-memory killer is the usual cause), so it was not started again.")


def failure_text(exc: BaseException) -> str:
    """``quarantine_error`` of a receipt whose materialisation raised (pure): the exception for the operator
    who must fix it, bounded to 1,000 characters."""
    text = str(exc).strip()
    said = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"Materialisation raised {said[:1000]}"


def begin_attempt(node: Node, receipt_id: str) -> int | None:
    """Count one materialisation attempt, committed before anything is parsed; returns its number (1 for the
    first), or ``None`` when the receipt is already materialised or quarantined (nothing to attempt)."""
    t = ingress_receipts.c
    with node.begin() as conn:
        done = conn.execute(update(ingress_receipts)
                            .where(t.id == receipt_id, t.materialised_at.is_(None), t.quarantined_at.is_(None))
                            .values(materialise_attempts=t.materialise_attempts + 1,
                                    materialise_started_at=node.clock.now()))
        if done.rowcount != 1:
            return None
        return int(conn.execute(select(t.materialise_attempts).where(t.id == receipt_id)).scalar_one())


def quarantine(node: Node, receipt_id: str, code: str, error: str) -> None:
    """Set the receipt aside with ``code`` and ``error`` (unless it was materialised meanwhile)."""
    t = ingress_receipts.c
    with node.begin() as conn:
        conn.execute(update(ingress_receipts).where(t.id == receipt_id, t.materialised_at.is_(None))
                     .values(quarantined_at=node.clock.now(), quarantine_code=code, quarantine_error=error))


def receipt_json(row: Row[Any], now: datetime) -> dict[str, Any]:
    """The API shape of a receipt: ids, envelope, size, when it came, its attempts and its quarantine
    (``age_seconds`` since it was received). Never the message's content."""
    return {
        "id": row.id, "mailbox_id": row.mailbox_id, "envelope_from": row.envelope_from,
        "envelope_to": row.envelope_to, "size_bytes": row.size_bytes, "sha256": row.sha256, "source": row.source,
        "received_at": row.received_at.isoformat(),
        "age_seconds": int((now - row.received_at).total_seconds()),
        "materialised_at": row.materialised_at.isoformat() if row.materialised_at else None,
        "message_id": row.message_id,
        "materialise_attempts": row.materialise_attempts, "redrives": row.redrives,
        "quarantined_at": row.quarantined_at.isoformat() if row.quarantined_at else None,
        "quarantine_code": row.quarantine_code, "quarantine_error": row.quarantine_error,
    }


def quarantined(conn: Connection, org_id: str, *, limit: int, cursor: str | None = None) -> list[Row[Any]]:
    """Quarantined receipts of the organisation in id order after ``cursor``."""
    t = ingress_receipts.c
    q = select(ingress_receipts).where(t.org_id == org_id, t.quarantined_at.is_not(None))
    if cursor:
        q = q.where(t.id > cursor)
    return list(conn.execute(q.order_by(t.id).limit(limit)).all())


def list_quarantined(conn: Connection, *, org_id: str, principal_id: str | None, now: datetime, limit: int,
                     cursor: str | None = None) -> list[dict[str, Any]]:
    """:func:`quarantined` as API shapes. Administrators only (``E_NOT_AN_ADMINISTRATOR``, 403); a
    ``principal_id`` of ``None`` is the installer at the data directory (the CLI)."""
    if principal_id is not None:
        require_admin(conn, org_id, principal_id, "list quarantined receipts")
    return [receipt_json(r, now) for r in quarantined(conn, org_id, limit=limit, cursor=cursor)]


def redrive(conn: Connection, *, org_id: str, principal_id: str | None, receipt_id: str,
            at: datetime) -> dict[str, Any]:
    """Clear a receipt's quarantine so it is materialised again; audited ``receipt.redrive``.

    Administrators only (``E_NOT_AN_ADMINISTRATOR``, 403; ``principal_id`` ``None`` is the installer). Raises
    ``E_NO_SUCH_RECEIPT`` (404) and ``E_RECEIPT_NOT_QUARANTINED`` (409). Returns the receipt as it now is;
    the caller starts its workflow (``workflows.start_redriven``) or leaves it to the repair scan.
    """
    if principal_id is not None:
        require_admin(conn, org_id, principal_id, "re-drive a quarantined receipt")
    t = ingress_receipts.c
    row = conn.execute(select(ingress_receipts).where(t.id == receipt_id, t.org_id == org_id)).first()
    if row is None:
        raise not_found("E_NO_SUCH_RECEIPT", f"No receipt {receipt_id}.",
                        fix="List quarantined receipts with GET /api/receipts?state=quarantined.")
    if row.quarantined_at is None:
        raise MailnodeError(code="E_RECEIPT_NOT_QUARANTINED", what=f"Receipt {receipt_id} is not quarantined.",
                            why="Only a quarantined receipt is re-driven; any other is materialised or on its way.",
                            fix="List quarantined receipts with GET /api/receipts?state=quarantined.", status=409,
                            detail={"receipt_id": receipt_id,
                                    "materialised_at": row.materialised_at.isoformat() if row.materialised_at
                                    else None})
    conn.execute(update(ingress_receipts).where(t.id == receipt_id)
                 .values(quarantined_at=None, quarantine_code=None, quarantine_error=None, materialise_attempts=0,
                         redrives=t.redrives + 1))
    audit.append(conn, org_id=org_id, at=at, action="receipt.redrive", actor_id=principal_id, subject=receipt_id,
                 detail={"quarantine_code": row.quarantine_code, "quarantined_at": row.quarantined_at.isoformat(),
                         "redrives": row.redrives + 1},
                 actor_kind="installer" if principal_id is None else None)
    fresh = conn.execute(select(ingress_receipts).where(t.id == receipt_id)).one()
    return receipt_json(fresh, at)
