"""Reading application mail: one mail (``GET /api/mail/{id}``) and the filtered list (``GET /api/mail``).

Application mail is what ``POST /api/mail`` seals: class ``realtime`` or ``deferrable`` and no
``Auto-Submitted`` (the node writes ``auto-generated`` only on its own mail, notices and sign-in codes, which
are sealed under the person they go to; ``notices.rules.is_notice_send``). Its author reads one mail
(``read_mail``; anyone else ``E_NO_SUCH_MAIL``, 404, as for an absent one). The list (``list_mail``) shows
a caller the application mail they sealed, and an administrator (``authz.is_admin``) the organisation's;
anyone else an empty list. Both shape each mail with ``mail_items``, so a listed mail reads as
``GET /api/mail/{id}`` shows it. Reads only; the routes in ``api.mail`` stay thin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, exists, func, select

from mailnode import budgets
from mailnode.authz import is_admin
from mailnode.errors import MailnodeError, not_found
from mailnode.ids import parse_id
from mailnode.outbound.render import sha256_hex
from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests, send_metadata, send_recipient_events, send_recipients, send_tags
from mailnode.vocabulary.mail_classes import MailClass
from mailnode.vocabulary.send_states import SendState, words_for

#: The classes ``POST /api/mail`` sends; correspondence goes through ``POST /api/sends``.
APPLICATION_CLASSES = (MailClass.REALTIME, MailClass.DEFERRABLE)

#: Statements ``list_mail`` runs for one page at most, whatever its size (``budgets``).
LIST_STATEMENTS = budgets.MAIL_LIST_PAGE_MAX_STATEMENTS


@dataclass(frozen=True)
class MailFilter:
    """The filters of ``GET /api/mail``; None leaves a field unfiltered.

    Attributes:
        state: the send's state.
        mail_class: ``realtime`` or ``deferrable``.
        recipient: a recipient address's key (``addresses.NormalisedAddress.key``: the whole address
            lower-cased); matches a mail naming it in ``to``, ``cc`` or ``bcc``.
        after: sealed at or after this instant (aware, UTC).
        before: sealed strictly before this instant (aware, UTC).
        tag: the mail carries this tag (exact, case-sensitive).
        metadata: ``(key, value)``: the mail's metadata holds ``key`` with exactly ``value``.
    """

    state: SendState | None = None
    mail_class: MailClass | None = None
    recipient: str | None = None
    after: datetime | None = None
    before: datetime | None = None
    tag: str | None = None
    metadata: tuple[str, str] | None = None


def no_such_mail(send_id: str) -> MailnodeError:
    """404 ``E_NO_SUCH_MAIL``: no application mail ``send_id`` of the caller's."""
    return not_found("E_NO_SUCH_MAIL", f"No mail {send_id}.", fix="Use the id POST /api/mail answered with.",
                     id=send_id)


def _application_mail() -> Any:
    """The condition that a manifest is application mail (see the module docstring)."""
    return send_manifests.c.mail_class.in_([c.value for c in APPLICATION_CLASSES]) & \
        send_manifests.c.auto_submitted.is_(None)


#: Digest of the empty text: a mail sealed with this text digest and an HTML part is HTML-only.
_EMPTY_TEXT_SHA256 = sha256_hex(b"")


def _timeline(conn: Connection, ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Each recipient row's attributed delivery events (``send_recipient_events``), oldest first: one statement."""
    e = send_recipient_events.c
    out: dict[str, list[dict[str, Any]]] = {}
    for r in conn.execute(select(e.recipient_id, e.event_type, e.received_at, e.status, e.bounce_type, e.source,
                                 e.detail)
                          .where(e.manifest_id.in_(ids), e.recipient_id.is_not(None))
                          .order_by(e.received_at, e.id)).all():
        detail = r.detail if isinstance(r.detail, dict) else {}
        diagnostic = detail.get("diagnostic")
        out.setdefault(r.recipient_id, []).append({
            "event": r.event_type, "at": r.received_at.isoformat(), "status": r.status,
            "bounce_type": r.bounce_type, "source": r.source,
            "diagnostic": str(diagnostic) if diagnostic is not None else None})
    return out


def mail_items(conn: Connection, rows: Sequence[Any]) -> list[dict[str, Any]]:
    """The API shape of each manifest row in ``rows``, in their order: three statements whatever their number.

    Each: ``id``, ``mail_class``, ``mailbox_id``, ``from`` (``{"email", "name"}``), ``reply_to`` (as written),
    ``subject``, ``state``, ``state_reason``, ``words``, ``idempotency_key``, ``sealed_at`` (ISO 8601 UTC),
    ``attempts``, ``content_deleted_at`` (when retention deleted its sealed body, ISO 8601 UTC, else null),
    ``content`` (``{"text": bool, "html": bool, "attachments": [{filename, content_type, size_bytes}]}``),
    ``headers`` (the custom headers, ``{name: value}``), ``tags``, ``metadata`` and ``recipients``
    (``address``, ``kind``, ``submission_state``, ``delivery_state``, ``suppression_reason`` (why a
    ``suppressed`` recipient is, else null) and ``events``: the recipient's timeline
    oldest first, ``handed_over`` with its time, then each delivery event, ``delivered`` / ``deferred`` /
    ``bounced`` / ``complained`` / ``failed`` / ``rejected``, with ``status``, ``bounce_type``, ``source`` and
    ``diagnostic``, the remote server's words; by kind, then address).
    """
    if not rows:
        return []
    ids = [r.id for r in rows]
    timeline = _timeline(conn, ids)
    recipients: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
    for r in conn.execute(select(send_recipients.c.id, send_recipients.c.manifest_id, send_recipients.c.address,
                                 send_recipients.c.kind, send_recipients.c.submission_state,
                                 send_recipients.c.submission_state_at, send_recipients.c.delivery_state,
                                 send_recipients.c.suppression_reason)
                          .where(send_recipients.c.manifest_id.in_(ids))
                          .order_by(send_recipients.c.manifest_id, send_recipients.c.kind,
                                    send_recipients.c.address)).all():
        handed = ([{"event": "handed_over", "at": r.submission_state_at.isoformat(), "status": None,
                    "bounce_type": None, "source": "node", "diagnostic": None}]
                  if r.submission_state == SendState.HANDED_OVER.value else [])
        recipients[r.manifest_id].append({"address": r.address, "kind": r.kind,
                                          "submission_state": r.submission_state,
                                          "delivery_state": r.delivery_state,
                                          "suppression_reason": r.suppression_reason,
                                          "events": handed + timeline.get(r.id, [])})
    purges = retention_io.purges_of(conn, ids)
    out = []
    for row in rows:
        purge = purges.get(row.id)
        html = row.body_html_sha256 is not None
        out.append({"id": row.id, "mail_class": row.mail_class, "mailbox_id": row.mailbox_id,
                    "from": {"email": row.envelope_from, "name": row.from_name},
                    "reply_to": list(row.reply_to or []), "subject": row.subject, "state": row.state,
                    "state_reason": row.state_reason, "words": words_for(row.state, row.state_reason),
                    "idempotency_key": row.idempotency_key, "sealed_at": row.sealed_at.isoformat(),
                    "attempts": int(row.attempts),
                    "content_deleted_at": purge[1].isoformat() if purge is not None else None,
                    "content": {"text": not (html and row.body_typed_sha256 == _EMPTY_TEXT_SHA256), "html": html,
                                "attachments": [{"filename": a["filename"], "content_type": a["content_type"],
                                                 "size_bytes": a["size_bytes"]} for a in (row.attachments or [])]},
                    "headers": {str(n): str(v) for n, v in (row.custom_headers or [])},
                    "tags": list(row.tags or []), "metadata": dict(row.metadata or {}),
                    "recipients": recipients[row.id]})
    return out


def read_mail(conn: Connection, *, org_id: str, author_id: str, send_id: str) -> dict[str, Any]:
    """One send ``author_id`` sealed in ``org_id``, shaped by ``mail_items``.

    Raises ``E_ID_MALFORMED`` (422) for a ``send_id`` that is not a ``snd_`` id and ``E_NO_SUCH_MAIL`` (404)
    for one that is not the author's.
    """
    parse_id(send_id, "snd", "id")
    row = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id,
                                                    send_manifests.c.org_id == org_id,
                                                    send_manifests.c.author_id == author_id)).first()
    if row is None:
        raise no_such_mail(send_id)
    return mail_items(conn, [row])[0]


def read_mails(conn: Connection, *, org_id: str, author_id: str, send_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The sends among ``send_ids`` that ``author_id`` sealed in ``org_id``, by id, shaped by ``mail_items``: four
    statements however many (``POST /api/mail/batch`` answers its items with one read)."""
    if not send_ids:
        return {}
    rows = conn.execute(select(send_manifests).where(send_manifests.c.id.in_(list(send_ids)),
                                                     send_manifests.c.org_id == org_id,
                                                     send_manifests.c.author_id == author_id)).all()
    return {m["id"]: m for m in mail_items(conn, rows)}


def list_mail(conn: Connection, *, org_id: str, principal_id: str, filters: MailFilter, limit: int,
              cursor: str | None) -> list[dict[str, Any]]:
    """One page of the application mail ``principal_id`` may list, newest first (by id), after ``cursor``
    (the last id of the previous page), at most ``limit``, shaped by ``mail_items``.

    An administrator lists the organisation's application mail, anyone else the application mail they
    sealed. At most ``LIST_STATEMENTS`` statements whatever the page's size.
    """
    q = select(send_manifests).where(send_manifests.c.org_id == org_id, _application_mail())
    if not is_admin(conn, org_id, principal_id):
        q = q.where(send_manifests.c.author_id == principal_id)
    if filters.state is not None:
        q = q.where(send_manifests.c.state == filters.state.value)
    if filters.mail_class is not None:
        q = q.where(send_manifests.c.mail_class == filters.mail_class.value)
    if filters.recipient is not None:
        q = q.where(exists().where(send_recipients.c.manifest_id == send_manifests.c.id,
                                   func.lower(send_recipients.c.address) == filters.recipient))
    if filters.tag is not None:
        q = q.where(exists().where(send_tags.c.manifest_id == send_manifests.c.id, send_tags.c.org_id == org_id,
                                   send_tags.c.tag == filters.tag))
    if filters.metadata is not None:
        key, value = filters.metadata
        q = q.where(exists().where(send_metadata.c.manifest_id == send_manifests.c.id,
                                   send_metadata.c.org_id == org_id, send_metadata.c.key == key,
                                   send_metadata.c.value == value))
    if filters.after is not None:
        q = q.where(send_manifests.c.sealed_at >= filters.after)
    if filters.before is not None:
        q = q.where(send_manifests.c.sealed_at < filters.before)
    if cursor:
        q = q.where(send_manifests.c.id < cursor)
    rows = conn.execute(q.order_by(send_manifests.c.id.desc()).limit(limit)).all()
    return mail_items(conn, rows)
