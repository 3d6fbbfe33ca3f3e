"""Materialise a receipt: parse, classify, thread, open or reuse a case, list attachments, file delivery reports.

``materialise_or_quarantine`` is what the durable workflow calls: it counts the attempt first and quarantines a
receipt whose materialisation raises or was attempted too often without finishing (``ingress.quarantine``).

Idempotent: the receipt's ``materialised_at`` is set by a conditional update (``IS NULL``) in the same
transaction as everything it creates, so materialising twice (a DBOS retry, the repair scan, ``ingest``
racing ``serve``) changes nothing the second time. The message's id is the receipt's ULID
(``ids.sibling_id``), so messages sort in arrival order whichever materialisation finishes first. The
message is indexed for search (``search.index``) in the same transaction. Never raises on the message's content: a
message that does not parse is stored with its ``parse_error`` and raw bytes. An unreadable delivery report is kept
as a message and logged with the stable token ``delivery_report.unreadable``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.exc import IntegrityError

from mailnode.ids import sibling_id
from mailnode.ingress import attachments as attachments_mod
from mailnode.ingress import quarantine
from mailnode.ingress import reports as reports_mod
from mailnode.ingress.authresults import verdicts
from mailnode.ingress.classify import automated, facts_from, reply_refusal
from mailnode.ingress.parse import parse_message
from mailnode.ingress.reports import ReportKind, read_report
from mailnode.mail.cases import open_case
from mailnode.mail.mailboxes import addresses_of
from mailnode.mail.threading import find_conversation, record_message_id, start_conversation
from mailnode.node import Node
from mailnode.outbound import events
from mailnode.outbound.return_path import VERP_LOCAL_PREFIX
from mailnode.schema.ingress import ingress_receipts
from mailnode.schema.mail_messages import message_attachments, messages
from mailnode.schema.outbound import send_recipients
from mailnode.search import index as search_index

log = logging.getLogger("mailnode.ingress")


class _AlreadyDone(Exception):
    """Raised inside the transaction to roll it back when another worker materialised first."""


@dataclass(frozen=True)
class Materialised:
    """What a receipt became."""

    receipt_id: str
    message_id: str
    conversation_id: str
    case_id: str
    created: bool


def materialise_receipt(node: Node, receipt_id: str) -> Materialised:
    """Materialise one receipt (idempotent); returns what it became.

    Raises ``E_EVIDENCE_MISSING`` (500) when the raw bytes are gone, ``KeyError`` for an unknown receipt.
    """
    with node.read() as conn:
        receipt = conn.execute(select(ingress_receipts).where(ingress_receipts.c.id == receipt_id)).first()
        if receipt is None:
            raise KeyError(receipt_id)
        if receipt.materialised_at is not None:
            return _existing(conn, receipt_id)
    raw = node.evidence.get(receipt.sha256)
    parsed = parse_message(raw)
    report = read_report(raw)
    if report.problem:
        log.warning("delivery_report.unreadable receipt=%s problem=%s", receipt_id, report.problem)
    facts = facts_from(parsed, receipt.envelope_from, report)
    auth = verdicts(parsed.authentication_results, node.settings.trusted_authserv_ids)
    now = node.clock.now()
    try:
        with node.begin() as conn:
            mailbox_addresses = addresses_of(conn, receipt.mailbox_id)
            conversation_id = find_conversation(conn, receipt.org_id, parsed.references, parsed.in_reply_to)
            if conversation_id is None:
                conversation_id = start_conversation(conn, receipt.org_id, parsed.subject, now)
            case_id = open_case(conn, org_id=receipt.org_id, conversation_id=conversation_id,
                                mailbox_id=receipt.mailbox_id, at=now)
            # The receipt's ULID: messages sort by arrival, not by which materialisation finished first.
            message_id = sibling_id("msg", receipt_id)
            auto = automated(facts)
            refusal = reply_refusal(facts, mailbox_addresses)
            conn.execute(messages.insert().values(
                id=message_id, org_id=receipt.org_id, mailbox_id=receipt.mailbox_id, receipt_id=receipt_id,
                conversation_id=conversation_id, case_id=case_id, envelope_from=receipt.envelope_from,
                envelope_to=receipt.envelope_to, rfc_message_id=parsed.message_id,
                in_reply_to=parsed.in_reply_to[0] if parsed.in_reply_to else None,
                references=list(parsed.references), subject=parsed.subject,
                from_name=parsed.from_.name if parsed.from_ else None,
                from_address=parsed.from_.address if parsed.from_ else None, date=parsed.date,
                received_at=receipt.received_at, automated=auto.value if auto else None,
                reply_refusal=refusal.value if refusal else None, dmarc=auth.dmarc, spf=auth.spf, dkim=auth.dkim,
                attachments=parsed.attachments.count, dangerous_attachments=parsed.attachments.dangerous,
                report_kind=report.kind.value if report.kind is not ReportKind.NONE else None,
                parse_error=parsed.parse_error, defects=list(parsed.defects),
                headers=[list(h) for h in parsed.headers], text_body=parsed.text_body, raw_sha256=receipt.sha256,
                size_bytes=receipt.size_bytes, text_body_type=parsed.bodies.text_type or "none",
                html_part=parsed.bodies.html_part,
            ))
            if parsed.attachments.attachments:
                conn.execute(message_attachments.insert(), attachment_rows(message_id, parsed.attachments))
            record_message_id(conn, receipt.org_id, parsed.message_id, conversation_id, message_id, now)
            # Searchable from the moment it exists (issue 15); rolled back with it on a lost race.
            search_index.reindex(conn, message_id)
            _file_report(conn, org_id=receipt.org_id, envelope_to=receipt.envelope_to, message_id=message_id,
                         report=report, now=now)
            done = conn.execute(update(ingress_receipts).where(ingress_receipts.c.id == receipt_id,
                                                               ingress_receipts.c.materialised_at.is_(None))
                                .values(materialised_at=now, message_id=message_id))
            if done.rowcount != 1:
                raise _AlreadyDone()
    except _AlreadyDone:
        with node.read() as conn:
            return _existing(conn, receipt_id)
    except IntegrityError:
        # A racing materialisation committed the same message id first: the receipt is done. Any other
        # integrity failure leaves the receipt unmaterialised and is raised.
        with node.read() as conn:
            finished = conn.execute(select(ingress_receipts.c.materialised_at)
                                .where(ingress_receipts.c.id == receipt_id)).scalar_one_or_none()
            if finished is None:
                raise
            return _existing(conn, receipt_id)
    return Materialised(receipt_id, message_id, conversation_id, case_id, created=True)


def attachment_rows(message_id: str, summary: attachments_mod.AttachmentSummary) -> list[dict[str, Any]]:
    """``message_attachments`` rows for a message's attachment list (pure)."""
    return [{"message_id": message_id, "part_id": a.part_id, "filename": a.filename, "safe_filename": a.safe_filename,
             "content_type": a.content_type, "sniffed_type": a.sniffed_type, "size_bytes": a.size_bytes,
             "sha256": a.sha256, "inline": a.inline, "content_id": a.content_id,
             "danger": a.danger.value if a.danger else None} for a in summary.attachments]


def materialise_or_quarantine(node: Node, receipt_id: str) -> Materialised | None:
    """Materialise one receipt, or quarantine it; returns what it became, or ``None`` when it is quarantined.

    The attempt is counted (and committed) first, so an attempt the kernel kills is still counted: attempt
    ``MATERIALISE_ATTEMPTS_MAX + 1`` quarantines with ``E_MATERIALISE_ABANDONED`` instead of parsing again. An
    exception from materialisation (MemoryError, RecursionError, a bug) quarantines with
    ``E_MATERIALISE_FAILED`` and is logged with its traceback (``materialise.quarantined``). A database error
    quarantines too (PostgreSQL's "index row too large" is an OperationalError a message's content causes): a
    quarantined receipt is visible and re-drivable, while a failed workflow would stay unmaterialised unseen;
    when the database is unreachable the quarantine write fails as well and that error is raised. An already
    materialised receipt returns its message; an already quarantined one returns ``None``. Raises ``KeyError`` for an
    unknown receipt.
    """
    attempt = quarantine.begin_attempt(node, receipt_id)
    if attempt is None:
        with node.read() as conn:
            row = conn.execute(select(ingress_receipts.c.materialised_at)
                               .where(ingress_receipts.c.id == receipt_id)).first()
            if row is None:
                raise KeyError(receipt_id)
            return _existing(conn, receipt_id) if row.materialised_at is not None else None
    if quarantine.abandoned(attempt):
        log.error("materialise.quarantined receipt=%s code=%s attempts=%d", receipt_id, quarantine.ABANDONED,
                  attempt - 1)
        quarantine.quarantine(node, receipt_id, quarantine.ABANDONED, quarantine.abandoned_text(attempt))
        return None
    if node.settings.fault_materialise_delay_seconds:  # a slow attempt, already counted (crash tests)
        time.sleep(node.settings.fault_materialise_delay_seconds)
    try:
        if node.settings.fault_materialise_memory_error:
            raise MemoryError("fault_materialise_memory_error is set")
        return materialise_receipt(node, receipt_id)
    except Exception as exc:  # recorded on the receipt and logged with its traceback
        log.exception("materialise.quarantined receipt=%s code=%s", receipt_id, quarantine.FAILED)
        quarantine.quarantine(node, receipt_id, quarantine.FAILED, quarantine.failure_text(exc))
        return None


def _existing(conn: Connection, receipt_id: str) -> Materialised:
    row = conn.execute(select(messages.c.id, messages.c.conversation_id, messages.c.case_id)
                       .where(messages.c.receipt_id == receipt_id)).one()
    return Materialised(receipt_id, row.id, row.conversation_id, row.case_id, created=False)


def _file_report(conn: Connection, *, org_id: str, envelope_to: str, message_id: str,
                 report: reports_mod.DeliveryReport, now: datetime) -> None:
    """Record each reported recipient as an event, attributed when it is about one of this node's sends.

    A VERP delivered-to address attributes the reported recipient with the same address, or the only
    reported recipient (a per-recipient envelope makes the report about that row even when the remote
    side rewrote the address); otherwise the quoted original Message-ID is tried.
    """
    if report.kind is ReportKind.NONE:
        return
    verp = _verp_recipient(conn, envelope_to)
    source = "arf" if report.kind is ReportKind.FEEDBACK else "dsn"
    for reported in report.recipients:
        event = reports_mod.event_for(report.kind, reported.status, reported.action)
        attribution = None
        if verp is not None and (len(report.recipients) == 1 or verp[1] == reported.address.lower()):
            attribution = verp[0]
        if attribution is None and report.original_message_id:
            attribution = events.by_message_id(conn, org_id, report.original_message_id, reported.address)
        status = reported.status or ""
        events.record(
            conn, org_id=org_id, event=event.value if event else None, attribution=attribution,
            recipient=reported.address,
            status=reported.status, source=source, source_event_id=f"{message_id}:{reported.address.lower()}",
            at=now, message_id=message_id,
            bounce_type="hard" if status.startswith("5") else "soft" if status.startswith("4") else None,
            detail={"diagnostic": reported.diagnostic, "action": reported.action, "report_source": report.source.value,
                    "feedback_type": report.feedback_type},
        )


def _verp_recipient(conn: Connection, envelope_to: str) -> tuple[events.Attribution, str] | None:
    """The recipient row (and its address) a VERP delivered-to address names, if the receipt came that way."""
    local = envelope_to.rpartition("@")[0]
    if not local.lower().startswith(VERP_LOCAL_PREFIX):
        return None
    recipient_id = local[len(VERP_LOCAL_PREFIX):].upper().replace("SRP_", "srp_", 1)
    row = conn.execute(select(send_recipients.c.id, send_recipients.c.manifest_id, send_recipients.c.address)
                       .where(send_recipients.c.id == recipient_id)).first()
    if row is None:
        return None
    return events.Attribution(row.manifest_id, row.id), row.address.lower()
