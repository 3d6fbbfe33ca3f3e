"""One received message as a reader sees it, and one attachment's bytes: the service behind
``GET /api/messages/{id}``, ``/attachments/{part}`` and the web conversation page (issue 16).

Both need ``mailbox.content.read`` on the message's mailbox; absent and not-yours answer alike
(``E_NO_SUCH_MESSAGE``, 404). What a reader sees (text, sanitised HTML, attachment list, one attachment's
bytes and headers) is ``ingress.reading``'s; this module reads the row and the evidence around it, so the API
and the pages cannot disagree. Content retention deleted is said (``content_deleted``), never shown as an
empty mail.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from mailnode.authz import holds
from mailnode.errors import not_found
from mailnode.ids import parse_id
from mailnode.ingress import reading
from mailnode.node import Node
from mailnode.retention import io as retention_io
from mailnode.retention import rules as retention
from mailnode.schema.mail_messages import message_attachments, messages


def no_message(message_id: str) -> Exception:
    """The 404 for a message that is absent or not the caller's to read."""
    return not_found("E_NO_SUCH_MESSAGE", f"No message {message_id}.",
                     fix="List messages with GET /api/mailboxes/{id}/messages.", message_id=message_id)


def readable(conn: Connection, *, org_id: str, principal_id: str, message_id: str) -> Any:
    """The message row when the caller holds ``mailbox.content.read`` on its mailbox; else ``E_NO_SUCH_MESSAGE``
    (404); ``E_REQUEST_INVALID`` (422) for a malformed id."""
    parse_id(message_id, "msg", "message_id")
    row = conn.execute(select(messages).where(messages.c.id == message_id, messages.c.org_id == org_id)).first()
    if row is None or not holds(conn, org_id, principal_id, "mailbox.content.read", "mailbox", row.mailbox_id):
        raise no_message(message_id)
    return row


def in_part_order(items: list[Any]) -> list[Any]:
    """Attachments in part order (``1.10`` after ``1.9``), whatever order the database sorted the text in."""
    return sorted(items, key=lambda a: [int(n) if n.isdigit() else 0 for n in a.part_id.split(".")])


def summary(r: Any, purge: tuple[str, datetime] | None = None) -> dict[str, Any]:
    """The metadata a list shows (no body). ``purge``: ``(kind, purged_at)`` when retention deleted the
    message's content (``retention_io.purges_of``); ``content_deleted_at`` is then its time, else null."""
    return {
        "content_deleted_at": purge[1].isoformat() if purge is not None else None,
        "id": r.id, "mailbox_id": r.mailbox_id, "subject": r.subject, "from_name": r.from_name,
        "from_address": r.from_address, "envelope_from": r.envelope_from, "envelope_to": r.envelope_to,
        "received_at": r.received_at.isoformat(), "date": r.date.isoformat() if r.date else None,
        "automated": r.automated, "reply_refusal": r.reply_refusal,
        "authentication": {"dmarc": r.dmarc, "spf": r.spf, "dkim": r.dkim},
        "attachments": r.attachments, "dangerous_attachments": r.dangerous_attachments,
        "report_kind": r.report_kind, "parse_error": None if purge is not None else r.parse_error,
        "conversation_id": r.conversation_id, "case_id": r.case_id, "rfc_message_id": r.rfc_message_id,
    }


def view(node: Node, *, org_id: str, principal_id: str, message_id: str, remote_images: bool) -> dict[str, Any]:
    """One message with its headers (as data), bodies and attachment list: ``summary`` plus ``in_reply_to``,
    ``references``, ``size_bytes``, ``sha256``, ``headers``, ``text_body``, ``text_body_type``, ``html_body``
    (sanitised; remote images removed unless ``remote_images``), ``remote_images_removed``,
    ``attachment_list``, ``defects`` and ``content_deleted`` (docs/api.md). ``E_NO_SUCH_MESSAGE`` (404),
    ``E_EVIDENCE_MISSING`` (500) when the raw bytes a reading needs are gone without a purge record.
    """
    with node.read() as conn:
        row = readable(conn, org_id=org_id, principal_id=principal_id, message_id=message_id)
        purge = retention_io.purges_of(conn, [row.id]).get(row.id)
        stored = [reading.stored_attachment(a) for a in conn.execute(
            select(message_attachments).where(message_attachments.c.message_id == row.id)
            .order_by(message_attachments.c.part_id)).all()] if purge is None else []
    return _shown(node, row, purge, stored, remote_images)


def view_rows(node: Node, *, rows: list[Any], purges: dict[str, tuple[str, datetime]],
              remote_images_for: str | None) -> dict[str, dict[str, Any]]:
    """``view`` for message rows the caller already read and may read (``mailbox.content.read`` on each
    row's mailbox checked by the caller, as the conversation thread does), with their ``purges``
    (``retention_io.purges_of``): ``{message id: what view answers}``, their attachments read in one
    statement instead of four statements a message. ``remote_images_for``: the message whose remote
    images are shown. ``E_EVIDENCE_MISSING`` (500) as ``view``."""
    wanted = sorted(r.id for r in rows if purges.get(r.id) is None)
    stored: dict[str, list[Any]] = {}
    if wanted:
        with node.read() as conn:
            for a in conn.execute(select(message_attachments).where(message_attachments.c.message_id.in_(wanted))
                                  .order_by(message_attachments.c.message_id, message_attachments.c.part_id)).all():
                stored.setdefault(a.message_id, []).append(reading.stored_attachment(a))
    return {r.id: _shown(node, r, purges.get(r.id), stored.get(r.id, []), r.id == remote_images_for)
            for r in rows}


def _shown(node: Node, row: Any, purge: tuple[str, datetime] | None, stored: list[Any],
           remote_images: bool) -> dict[str, Any]:
    """What ``view`` answers for one readable row, its purge and its stored attachments."""
    out = summary(row, purge)
    out.update({"in_reply_to": row.in_reply_to, "references": row.references, "size_bytes": row.size_bytes,
                "sha256": row.raw_sha256})
    if purge is not None:
        out.update({"headers": None, "text_body": None, "text_body_type": None, "html_body": None,
                    "remote_images_removed": 0, "attachment_list": None, "defects": None,
                    "content_deleted": retention.deletion_note(source_id=row.id, kind=purge[0],
                                                               purged_at=purge[1])})
        return out
    raw = (retention_io.read_content(node, source_id=row.id, digest=row.raw_sha256)
           if reading.needs_raw(row.text_body_type, row.html_part) else None)
    seen = reading.read(row.id, text_body=row.text_body, text_body_type=row.text_body_type,
                        stored=in_part_order(stored), raw=raw, remote_images=remote_images)
    out.update({"headers": [{"name": n, "value": v} for n, v in row.headers], "text_body": seen.text_body,
                "text_body_type": seen.text_body_type, "html_body": seen.html_body,
                "remote_images_removed": seen.remote_images_removed,
                "attachment_list": [reading.attachment_json(row.id, a) for a in seen.attachments],
                "defects": row.defects, "content_deleted": None})
    return out


def attachment(node: Node, *, org_id: str, principal_id: str, message_id: str, part: str) -> Any:
    """One attachment's decoded bytes with their download headers (``reading.download``'s ``Served``:
    ``content``, ``media_type``, ``headers``). ``E_NO_SUCH_MESSAGE`` (404), ``E_NO_SUCH_ATTACHMENT`` (404),
    ``E_ATTACHMENT_UNREADABLE`` (422), ``E_CONTENT_DELETED`` (410), ``E_EVIDENCE_MISSING`` (500)."""
    with node.read() as conn:
        row = readable(conn, org_id=org_id, principal_id=principal_id, message_id=message_id)
    raw = retention_io.read_content(node, source_id=row.id, digest=row.raw_sha256)
    return reading.download(row.id, raw, part)
