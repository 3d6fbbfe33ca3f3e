"""Accepting a delivery: the raw bytes into the evidence store, then one receipt per delivered-to address.

This is the only way mail enters the node (``mailnode ingest`` calls ``accept``; the SMTP listener's group
committer calls ``accept_group`` for the deliveries that arrived together). The bytes are written (fsynced)
before the receipt rows commit, and the SMTP listener answers ``250`` only after its delivery's group
committed, so an accepted message is never lost; if either write fails, the caller answers
``4xx`` and nothing half-written remains (a stored blob without a receipt is harmless and deduplicated).
"""

from __future__ import annotations

from dataclasses import dataclass

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.ids import new_id
from mailnode.ingress.routing import Route
from mailnode.node import Node
from mailnode.schema.ingress import ingress_receipts


@dataclass(frozen=True)
class Envelope:
    """The SMTP envelope of a delivery. ``mail_from`` is ``""`` for the null reverse path."""

    mail_from: str
    routes: tuple[Route, ...]
    remote_addr: str | None = None
    helo: str | None = None
    source: str = "smtp"


def normalise_reverse_path(value: str | None) -> str:
    """The reverse path as stored: ``""`` for ``<>`` (aiosmtpd reports the string ``'<>'``) or None."""
    text = (value or "").strip()
    if text in ("", "<>"):
        return ""
    return text.strip("<>")


def recipient_key(address: str) -> str:
    """The form two envelope recipients are compared in: the local part as written, the domain lower-cased.

    RFC 5321 §2.4: the local part of a mailbox "MUST BE treated as case sensitive", while domain names are
    not; angle brackets and surrounding blanks are not part of the address. ``"A@Example.TEST"`` and
    ``"<A@example.test>"`` are one recipient; ``"a@example.test"`` is another.
    """
    text = (address or "").strip().strip("<>").strip()
    local, at, domain = text.rpartition("@")
    return f"{local}@{domain.lower()}" if at else text


def distinct_routes(routes: tuple[Route, ...]) -> tuple[Route, ...]:
    """The routes with repeats dropped (compared by :func:`recipient_key` of the routed address), first kept.

    One SMTP transaction (or one ingested file) delivers once per address however often ``RCPT TO`` named
    it (issue 14 item 2: 2,000 repeats of one recipient made 2,000 receipts, cases and Butler runs).
    """
    seen: set[str] = set()
    kept: list[Route] = []
    for route in routes:
        key = recipient_key(route.address)
        if key not in seen:
            seen.add(key)
            kept.append(route)
    return tuple(kept)


def too_large(size: int) -> MailnodeError:
    """``E_MESSAGE_TOO_LARGE`` naming the limit, its value and the ask."""
    return MailnodeError(
        code="E_MESSAGE_TOO_LARGE",
        what=f"The message is {size} bytes; MESSAGE_MAX_BYTES is {budgets.MESSAGE_MAX_BYTES}.",
        why="The node refuses messages over its size budget (SMTP 552, RFC 5321 §4.5.3.1.10).",
        fix="Send a smaller message, or raise MESSAGE_MAX_BYTES in budgets.py and redeploy.",
        status=413,
        detail={"limit_name": "MESSAGE_MAX_BYTES", "limit": budgets.MESSAGE_MAX_BYTES, "observed": size},
    )


def check(raw: bytes, envelope: Envelope) -> None:
    """Refuse a delivery that can never be accepted, before anything is written (pure).

    Raises ``E_MESSAGE_TOO_LARGE`` (413) over ``budgets.MESSAGE_MAX_BYTES`` and ``E_NO_RECIPIENTS`` (422) when
    the envelope names no route.
    """
    if len(raw) > budgets.MESSAGE_MAX_BYTES:
        raise too_large(len(raw))
    if not envelope.routes:
        raise MailnodeError(code="E_NO_RECIPIENTS", what="The delivery names no recipient on this node.",
                            why="A receipt is written per delivered-to mailbox address.",
                            fix="Address the message to one of the node's mailbox addresses.", status=422)


def accept(node: Node, raw: bytes, envelope: Envelope) -> list[str]:
    """Store ``raw`` and write one receipt per distinct route; returns the receipt ids in route order.

    A route repeated in the envelope (same address by :func:`recipient_key`) gets one receipt.

    Raises ``E_MESSAGE_TOO_LARGE`` (413) before anything is written, ``E_NO_RECIPIENTS`` (422) when
    no route is given, ``OSError`` or a database error when a write fails (nothing committed).
    """
    return accept_group(node, [(raw, envelope)])[0]


def accept_group(node: Node, deliveries: list[tuple[bytes, Envelope]]) -> list[list[str]]:
    """Accept several deliveries together: every blob written (``EvidenceStore.put_many``: one fsync per
    blob, one per directory), then every receipt row in **one** transaction. Returns each delivery's receipt
    ids, in the order given.

    All or nothing: if any write fails, the error propagates and no receipt of the group is committed (blobs
    already stored are harmless and deduplicated). Each delivery is first checked (:func:`check`), so an
    over-sized or recipient-less delivery raises before anything is written; the group committer checks
    them one by one before grouping, so one bad delivery does not fail the others.
    """
    for raw, envelope in deliveries:
        check(raw, envelope)
    digests = node.evidence.put_many([raw for raw, _ in deliveries])
    now = node.clock.now()
    out: list[list[str]] = []
    rows: list[dict[str, object]] = []
    for (raw, envelope), digest in zip(deliveries, digests, strict=True):
        ids: list[str] = []
        for route in distinct_routes(envelope.routes):
            rid = new_id("rcpt")
            rows.append({
                "id": rid, "org_id": route.org_id, "mailbox_id": route.mailbox_id,
                "envelope_from": normalise_reverse_path(envelope.mail_from), "envelope_to": route.address,
                "remote_addr": envelope.remote_addr, "helo": envelope.helo, "size_bytes": len(raw),
                "sha256": digest, "source": envelope.source, "received_at": now,
            })
            ids.append(rid)
        out.append(ids)
    with node.begin() as conn:
        conn.execute(ingress_receipts.insert(), rows)
    return out
