"""Reading sends: the list a mailbox's people see and one send with recipients, events and the offer.

Who sees a send: anyone holding a relation on its mailbox (``authz.mailboxes_visible``); everyone else
gets ``E_NO_SUCH_SEND`` (404), as for an absent one. Every send shows its state, the reason in words
(``states.words_for``) and the retry offer (``states.retry_offer``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, select

from mailnode.authz import mailboxes_visible
from mailnode.ids import parse_id
from mailnode.outbound.retry import no_such_send
from mailnode.outbound.states import SendState, retry_offer, words_for
from mailnode.outbound.tables import send_manifests, send_recipient_events, send_recipients


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def send_summary(r: Any, ambiguous: int) -> dict[str, Any]:
    """The list shape of a manifest row."""
    return {
        "id": r.id, "mailbox_id": r.mailbox_id, "author_id": r.author_id, "state": r.state,
        "state_reason": r.state_reason, "reason_words": words_for(r.state, r.state_reason),
        "subject": r.subject, "from": r.envelope_from, "to": r.to_addresses, "cc": r.cc_addresses,
        "bcc": r.bcc_addresses, "sealed_at": _iso(r.sealed_at), "release_at": _iso(r.release_at),
        "state_at": _iso(r.state_at), "attempts": r.attempts, "last_error": r.last_error,
        "rfc_message_id": r.rfc_message_id, "in_reply_to_message_id": r.in_reply_to_message_id,
        "conversation_id": r.conversation_id, "resend_of": r.resend_of, "auto_submitted": r.auto_submitted,
        "retry": retry_offer(r.state, ambiguous_recipients=ambiguous).to_json(),
    }


def list_sends(conn: Connection, *, org_id: str, principal_id: str, limit: int, cursor: str | None,
               mailbox_id: str | None = None, state: SendState | None = None) -> list[dict[str, Any]]:
    """Sends of the mailboxes the caller may see, newest first, after ``cursor`` (two statements + one)."""
    visible = mailboxes_visible(conn, org_id, principal_id)
    q = select(send_manifests).where(send_manifests.c.org_id == org_id,
                                     send_manifests.c.mailbox_id.in_(sorted(visible)))
    if mailbox_id:
        parse_id(mailbox_id, "mbx", "mailbox_id")
        q = q.where(send_manifests.c.mailbox_id == mailbox_id)
    if state is not None:
        q = q.where(send_manifests.c.state == state.value)
    if cursor:
        q = q.where(send_manifests.c.id < cursor)
    rows = conn.execute(q.order_by(send_manifests.c.id.desc()).limit(limit)).all()
    ambiguous: dict[str, int] = {}
    if rows:
        ambiguous = {r.manifest_id: int(r.n) for r in conn.execute(
            select(send_recipients.c.manifest_id, func.count().label("n"))
            .where(send_recipients.c.manifest_id.in_([r.id for r in rows]),
                   send_recipients.c.submission_state == SendState.OUTCOME_UNKNOWN.value)
            .group_by(send_recipients.c.manifest_id)).all()}
    return [send_summary(r, ambiguous.get(r.id, 0)) for r in rows]


def get_send(conn: Connection, *, org_id: str, principal_id: str, send_id: str) -> dict[str, Any]:
    """One send with its recipients (submission and delivery state, last error) and its events."""
    parse_id(send_id, "snd", "send_id")
    row = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id,
                                                    send_manifests.c.org_id == org_id)).first()
    if row is None or row.mailbox_id not in mailboxes_visible(conn, org_id, principal_id):
        raise no_such_send(send_id)
    recipients = conn.execute(select(send_recipients).where(send_recipients.c.manifest_id == send_id)
                              .order_by(send_recipients.c.kind, send_recipients.c.address)).all()
    events = conn.execute(select(send_recipient_events).where(send_recipient_events.c.manifest_id == send_id)
                          .order_by(send_recipient_events.c.received_at, send_recipient_events.c.id)).all()
    ambiguous = sum(1 for r in recipients if r.submission_state == SendState.OUTCOME_UNKNOWN.value)
    out = send_summary(row, ambiguous)
    out["recipients"] = [{
        "id": r.id, "kind": r.kind, "address": r.address, "submission_state": r.submission_state,
        "submission_state_at": _iso(r.submission_state_at), "delivery_state": r.delivery_state,
        "delivery_state_at": _iso(r.delivery_state_at), "bounce_type": r.bounce_type, "last_error": r.last_error,
        "attempts": r.attempts, "transport_message_id": r.transport_message_id,
        "provider_message_id": r.provider_message_id,
    } for r in recipients]
    out["events"] = [{
        "id": e.id, "event_type": e.event_type, "recipient": e.recipient, "recipient_id": e.recipient_id,
        "status": e.status, "bounce_type": e.bounce_type, "source": e.source, "received_at": _iso(e.received_at),
        "detail": e.detail,
    } for e in events]
    return out
