"""Routes for received mail: messages, raw bytes, cases (claim, close, delete) and delivery events.

A conversation's thread and a case's notes are in ``api.conversations``.

Reading a mailbox's message list needs metadata read (``mailbox.metadata.read`` or content read);
reading a message's headers, bodies, attachments or raw bytes needs ``mailbox.content.read``. What a reader
sees of a message (text, sanitised HTML, attachment list, one attachment's bytes) is ``ingress.reading``'s.
Absent and not-yours answer alike (404). Header values are returned as JSON data and never re-rendered as headers.

Content retention deleted (spec/transactional.md §5; what is deleted: ``retention.rules``) is said, never
shown as an empty mail: every message shape carries ``content_deleted_at`` (ISO 8601 UTC, or null), and
``GET /api/messages/{id}`` then answers null ``headers``, ``text_body``, ``html_body``, ``attachment_list`` and
``defects`` with a ``content_deleted`` note (when, the setting, the words of ``E_CONTENT_DELETED``); ``/raw``
and ``/attachments/{part}`` answer 410.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from fastapi.responses import Response
from sqlalchemy import select

from mailnode.api.case_models import CaseAnswer, CaseDeleted, CasePage
from mailnode.api.deps import CallerDep, CasePageDep, EventPageDep, MessagePageDep, NodeDep, id_filter, paged
from mailnode.api.message_models import MessageAnswer, MessagePage
from mailnode.api.models import Strict
from mailnode.api.responses import CaseId, MailboxId, MessageId, bytes_response, errors
from mailnode.api.send_models import DeliveryEventPage
from mailnode.authz import METADATA_READERS, holds, mailboxes_visible, require_admin
from mailnode.errors import no_such_mailbox
from mailnode.ingress import viewing
from mailnode.ingress.reading import SHOWN_IMAGE_TYPES
from mailnode.mail import cases as cases_mod
from mailnode.mail.mailboxes import get_mailbox_row
from mailnode.retention import holds as hold_rules
from mailnode.retention import io as retention_io
from mailnode.schema.mail_messages import cases, messages
from mailnode.schema.outbound import send_recipient_events

router = APIRouter(prefix="/api", tags=["messages"])


#: The list shape of a message row (``ingress.viewing.summary``), kept under its old name for the routes.
message_summary = viewing.summary


def _readable(conn: Any, caller: Any, message_id: MessageId) -> Any:
    return viewing.readable(conn, org_id=caller.org_id, principal_id=caller.principal_id, message_id=message_id)


def _readable_message(node: Any, caller: Any, message_id: MessageId) -> Any:
    with node.read() as conn:
        return _readable(conn, caller, message_id)


@router.get("/mailboxes/{mailbox_id}/messages", response_model=MessagePage)
def list_messages(mailbox_id: MailboxId, node: NodeDep, caller: CallerDep, page: MessagePageDep) -> dict[str, Any]:
    """Messages delivered to a mailbox, newest first (metadata read)."""
    with node.read() as conn:
        get_mailbox_row(conn, caller.org_id, mailbox_id)
        if not holds(conn, caller.org_id, caller.principal_id, METADATA_READERS, "mailbox", mailbox_id):
            raise no_such_mailbox(mailbox_id)
        q = select(messages).where(messages.c.mailbox_id == mailbox_id)
        if page.cursor:
            q = q.where(messages.c.id < page.cursor)
        rows = conn.execute(q.order_by(messages.c.id.desc()).limit(page.limit)).all()
        purges = retention_io.purges_of(conn, [r.id for r in rows])
    return paged("messages", [message_summary(r, purges.get(r.id)) for r in rows], page)


@router.get("/messages/{message_id}", response_model=MessageAnswer)
def get_message(message_id: MessageId, node: NodeDep, caller: CallerDep, remote_images: bool = False) -> dict[str, Any]:
    """One message with its headers (as data), bodies and attachment list (content read).

    ``text_body`` is the text/plain part, else the text made from the HTML (``text_body_type`` says which);
    ``html_body`` is the HTML sanitised for display (no scripts, handlers, forms or frames; ``cid:`` images
    point at ``/api/messages/{id}/attachments/{part}``; remote images removed and counted in
    ``remote_images_removed`` unless ``remote_images=true``); ``attachment_list`` lists each attachment (part,
    file name as given and safe to save, declared and sniffed type, size, sha256, inline, content id, danger,
    url). Once retention deleted its content: ``headers``, ``text_body``, ``html_body``, ``attachment_list``
    and ``defects`` are null (whatever the row still holds), ``content_deleted_at`` is set and
    ``content_deleted`` is ``retention.deletion_note`` (``{at, setting, words, fix}``); otherwise
    ``content_deleted`` is null. ``E_EVIDENCE_MISSING`` (500) when the raw bytes a reading needs are gone
    without a purge record.
    """
    return {"message": viewing.view(node, org_id=caller.org_id, principal_id=caller.principal_id,
                                    message_id=message_id, remote_images=remote_images)}


@router.get("/messages/{message_id}/attachments/{part}", response_class=Response,
            responses={**bytes_response("the attachment's decoded bytes, as a download", "application/octet-stream",
                                        *sorted(SHOWN_IMAGE_TYPES)), **errors(403, 410)})
def get_attachment(message_id: MessageId, part: str, node: NodeDep, caller: CallerDep) -> Response:
    """One attachment's decoded bytes (content read), as a download: ``Content-Disposition: attachment`` with
    the safe-to-save name (RFC 6266, RFC 5987 ``filename*``), ``X-Content-Type-Options: nosniff`` and
    ``Content-Security-Policy: default-src 'none'; sandbox``; a raster image whose bytes agree with its type is
    served under that type, anything else as ``application/octet-stream``.

    ``E_NO_SUCH_ATTACHMENT`` (404) for a part the message does not list, ``E_ATTACHMENT_UNREADABLE`` (422) for
    one that cannot be decoded, ``E_CONTENT_DELETED`` (410) once retention deleted the message's content,
    ``E_EVIDENCE_MISSING`` (500) when its raw bytes are gone without a purge record.
    """
    served = viewing.attachment(node, org_id=caller.org_id, principal_id=caller.principal_id,
                                message_id=message_id, part=part)
    return Response(content=served.content, media_type=served.media_type, headers=served.headers)


@router.get("/messages/{message_id}/raw", response_class=Response,
            responses={**bytes_response("the message as received (RFC 5322)", "message/rfc822"), **errors(403, 410)})
def get_raw(message_id: MessageId, node: NodeDep, caller: CallerDep) -> Response:
    """The exact bytes received (content read), as ``message/rfc822``.

    ``E_CONTENT_DELETED`` (410) once retention deleted them (spec/transactional.md §5); ``E_EVIDENCE_MISSING``
    (500) when the blob is gone without a purge record.
    """
    row = _readable_message(node, caller, message_id)
    return Response(content=retention_io.read_content(node, source_id=row.id, digest=row.raw_sha256),
                    media_type="message/rfc822")


@router.get("/cases", response_model=CasePage)
def list_cases(node: NodeDep, caller: CallerDep, page: CasePageDep, mailbox_id: str | None = None,
               state: Literal["open", "closed"] | None = None) -> dict[str, Any]:
    """Cases of the mailboxes the caller may see, optionally one mailbox and one state (open|closed); another
    state or a malformed ``mailbox_id`` is 422 ``E_REQUEST_INVALID`` naming it."""
    mailbox_id = id_filter(mailbox_id, "mailbox_id", "mbx")
    with node.read() as conn:
        visible = mailboxes_visible(conn, caller.org_id, caller.principal_id)
        q = select(cases).where(cases.c.org_id == caller.org_id, cases.c.mailbox_id.in_(sorted(visible)))
        if mailbox_id:
            q = q.where(cases.c.mailbox_id == mailbox_id)
        if state:
            q = q.where(cases.c.state == state)
        if page.cursor:
            q = q.where(cases.c.id > page.cursor)
        rows = conn.execute(q.order_by(cases.c.id).limit(page.limit)).all()
    return paged("cases", [cases_mod.case_json(r) for r in rows], page)


class ClaimIn(Strict):
    """Body of POST /api/cases/{id}/claim (optional)."""

    assignee: str | None = None
    take: bool = False


@router.post("/cases/{case_id}/claim", response_model=CaseAnswer, responses=errors(403, 409))
def claim_case(case_id: CaseId, node: NodeDep, caller: CallerDep, body: ClaimIn | None = None) -> dict[str, Any]:
    """Assign a case (to the caller by default); ``take: true`` takes a held one (audited)."""
    body = body or ClaimIn()
    with node.begin() as conn:
        return {"case": cases_mod.claim(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                        at=node.clock.now(), case_id=case_id, assignee_id=body.assignee,
                                        take=body.take)}


@router.post("/cases/{case_id}/close", response_model=CaseAnswer, responses=errors(403, 409))
def close_case(case_id: CaseId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Close a case the caller holds."""
    with node.begin() as conn:
        return {"case": cases_mod.close(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                        at=node.clock.now(), case_id=case_id)}


@router.post("/cases/{case_id}/reopen", response_model=CaseAnswer, responses=errors(403, 409))
def reopen_case(case_id: CaseId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Reopen a closed case (``send.propose`` on its mailbox); the caller holds it. 200 ``{"case": ...}``.

    ``E_CASE_OPEN`` (409), ``E_CASE_SUPERSEDED`` (409: a newer case of the conversation is open),
    ``E_NO_SUCH_CASE`` (404), ``E_MAY_NOT_WORK_CASE`` (403). See ``mail.cases.reopen``.
    """
    with node.begin() as conn:
        return {"case": cases_mod.reopen(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                         at=node.clock.now(), case_id=case_id)}


@router.delete("/cases/{case_id}", response_model=CaseDeleted, responses=errors(403, 409))
def delete_case(case_id: CaseId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Delete a closed case (``send.propose`` on its mailbox); its messages stay, unlinked. 200
    ``{"deleted": case_id}``.

    ``E_CASE_OPEN`` (409) for an open case; ``E_LEGAL_HOLD`` (409) when a legal hold covers it, with
    ``hold.blocked`` audited in a transaction of its own (``retention.holds.deleting``); ``E_NO_SUCH_CASE``
    (404), ``E_MAY_NOT_WORK_CASE`` (403). spec/outbound.md §7; issue 9.
    """
    with hold_rules.deleting(node) as conn:
        cases_mod.remove(conn, org_id=caller.org_id, principal_id=caller.principal_id, at=node.clock.now(),
                         case_id=case_id)
    return {"deleted": case_id}


@router.get("/delivery-events", response_model=DeliveryEventPage, responses=errors(403))
def list_delivery_events(node: NodeDep, caller: CallerDep, page: EventPageDep,
                         attributed: bool | None = None) -> dict[str, Any]:
    """Provider events and delivery reports, newest first (administrators); ``attributed`` filters."""
    t = send_recipient_events
    with node.read() as conn:
        require_admin(conn, caller.org_id, caller.principal_id, "read delivery events")
        q = select(t).where(t.c.org_id == caller.org_id)
        if attributed is True:
            q = q.where(t.c.manifest_id.is_not(None))
        elif attributed is False:
            q = q.where(t.c.manifest_id.is_(None))
        if page.cursor:
            q = q.where(t.c.id < page.cursor)
        rows = conn.execute(q.order_by(t.c.id.desc()).limit(page.limit)).all()
    items = [{"id": r.id, "event_type": r.event_type, "recipient": r.recipient, "manifest_id": r.manifest_id,
              "recipient_id": r.recipient_id, "status": r.status, "bounce_type": r.bounce_type, "source": r.source,
              "message_id": r.message_id, "received_at": r.received_at.isoformat(), "detail": r.detail} for r in rows]
    return paged("events", items, page)
