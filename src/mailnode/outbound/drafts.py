"""Drafts: unsealed compositions, one per (author, reply parent), read and edited only by their author.

Saving a draft needs ``send.propose`` on its mailbox (404 ``E_MAY_NOT_SEND_AS_MAILBOX`` otherwise, as at
seal). A reply draft's parent must be readable by the author (``E_NO_SUCH_PARENT``). Addresses given are
validated as at seal (``E_ADDRESS_MALFORMED``, ``E_HEADER_INJECTION``; a display name is kept:
``Alice <alice@example.test>``), and so are the subject and body
(``outbound.seal.check_composition``: ``E_HEADER_INJECTION``, ``E_TEXT_MALFORMED``, ``E_SUBJECT_TOO_LONG``
422, ``E_BODY_TOO_LARGE`` 413), so a draft saved is a draft that can be sealed; a draft may have no
recipient yet. A second draft for the same parent is ``E_DRAFT_EXISTS`` (409) naming the first. Anyone but the
author gets ``E_NO_SUCH_DRAFT`` (404). Sealing retires the draft (``outbound.seal``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select, update
from sqlalchemy.exc import IntegrityError

from mailnode import audit
from mailnode.addresses import NormalisedAddress, parse_recipient
from mailnode.authz import holds
from mailnode.errors import MailnodeError, conflict, not_found
from mailnode.ids import new_id, parse_id
from mailnode.outbound.parents import may_reply_to
from mailnode.outbound.render import written_address
from mailnode.outbound.seal import check_composition, may_not_send, no_such_parent
from mailnode.retention.holds import refuse_if_held
from mailnode.schema.mail_messages import messages
from mailnode.schema.outbound import drafts

_FIELDS = ("to", "cc", "bcc", "subject", "body")


def draft_json(r: Any) -> dict[str, Any]:
    """The API shape of a draft."""
    return {"id": r.id, "mailbox_id": r.mailbox_id, "author_id": r.author_id,
            "in_reply_to_message_id": r.in_reply_to_message_id, "to": r.to_addresses, "cc": r.cc_addresses,
            "bcc": r.bcc_addresses, "subject": r.subject, "body": r.body, "created_at": r.created_at.isoformat(),
            "updated_at": r.updated_at.isoformat()}


def no_such_draft(draft_id: str) -> MailnodeError:
    """The 404 for a draft that is absent or not the caller's."""
    return not_found("E_NO_SUCH_DRAFT", f"No draft {draft_id}.", fix="List your drafts with GET /api/drafts.",
                     draft_id=draft_id)


def _kept(addr: NormalisedAddress) -> str:
    return written_address(addr.address, addr.display_name)


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("to", "cc", "bcc"):
        if kind in values:
            # A display name is kept as written beside its normalised address; the seal reads it again.
            out[f"{kind}_addresses"] = [_kept(parse_recipient(a, kind)) for a in values[kind] or []]
    if "subject" in values:
        out["subject"] = values["subject"] or ""
    if "body" in values:
        out["body"] = values["body"] or ""
    # An edit that names only one of the two checks that one; the other was checked when it was saved.
    check_composition(out.get("subject", ""), out.get("body", ""))
    return out


def _check_authority(conn: Connection, org_id: str, author_id: str, mailbox_id: str) -> None:
    parse_id(mailbox_id, "mbx", "mailbox_id")
    if not holds(conn, org_id, author_id, "send.propose", "mailbox", mailbox_id):
        raise may_not_send(mailbox_id)


def vet_new(conn: Connection, *, org_id: str, author_id: str, mailbox_id: str,
            in_reply_to_message_id: str | None = None, triggered_by: str | None = None,
            drafted: Mapping[str, str] | None = None, **values: Any) -> dict[str, Any]:
    """Every decision ``create`` makes before it writes, with reads only; the row it would insert.

    Raises the module's codes (``E_MAY_NOT_SEND_AS_MAILBOX``, ``E_NO_SUCH_PARENT``, ``E_DRAFT_EXISTS``,
    the composition codes). ``triggered_by`` is passed to ``parents.may_reply_to``; ``drafted`` maps a
    parent to a draft the caller knows the author has without a row (the Butler dry run's own drafts).
    The dry run calls this on a read-only connection, so it decides a ``draft`` exactly as ``create`` does.
    """
    _check_authority(conn, org_id, author_id, mailbox_id)
    if in_reply_to_message_id is not None:
        parse_id(in_reply_to_message_id, "msg", "in_reply_to_message_id")
        parent = conn.execute(select(messages.c.mailbox_id).where(messages.c.id == in_reply_to_message_id,
                                                                  messages.c.org_id == org_id)).first()
        if parent is None or not may_reply_to(conn, org_id=org_id, author_id=author_id,
                                              parent_id=in_reply_to_message_id,
                                              parent_mailbox_id=parent.mailbox_id, triggered_by=triggered_by):
            raise no_such_parent(in_reply_to_message_id)
        if drafted and in_reply_to_message_id in drafted:
            raise _exists(drafted[in_reply_to_message_id], in_reply_to_message_id)
        existing = conn.execute(select(drafts.c.id).where(drafts.c.author_id == author_id,
                                                          drafts.c.in_reply_to_message_id == in_reply_to_message_id)
                                ).first()
        if existing is not None:
            raise _exists(existing.id, in_reply_to_message_id)
    row = {"to_addresses": [], "cc_addresses": [], "bcc_addresses": [], "subject": "", "body": ""}
    row.update(_clean({k: v for k, v in values.items() if k in _FIELDS}))
    return row


def create(conn: Connection, *, org_id: str, author_id: str, at: datetime, mailbox_id: str,
           in_reply_to_message_id: str | None = None, **values: Any) -> dict[str, Any]:
    """Save a new draft (``values``: to, cc, bcc, subject, body). Raises the module's codes (``vet_new``)."""
    row = vet_new(conn, org_id=org_id, author_id=author_id, mailbox_id=mailbox_id,
                  in_reply_to_message_id=in_reply_to_message_id, **values)
    did = new_id("dft")
    try:
        with conn.begin_nested():
            conn.execute(drafts.insert().values(id=did, org_id=org_id, mailbox_id=mailbox_id, author_id=author_id,
                                                in_reply_to_message_id=in_reply_to_message_id, created_at=at,
                                                updated_at=at, **row))
    except IntegrityError as exc:
        # Two saves raced for the same parent; the unique index decided.
        raise _exists("(another)", in_reply_to_message_id or "") from exc
    audit.append(conn, org_id=org_id, at=at, action="draft.saved", actor_id=author_id, subject=did,
                 detail={"mailbox_id": mailbox_id, "in_reply_to": in_reply_to_message_id})
    return get(conn, org_id=org_id, author_id=author_id, draft_id=did)


def _exists(draft_id: str, parent: str) -> MailnodeError:
    return conflict("E_DRAFT_EXISTS", f"You already have draft {draft_id} answering {parent}.",
                    "There is one draft per author and reply parent.",
                    f"Edit it: PUT /api/drafts/{draft_id}.", draft_id=draft_id, in_reply_to_message_id=parent)


def _row(conn: Connection, org_id: str, author_id: str, draft_id: str) -> Any:
    parse_id(draft_id, "dft", "draft_id")
    row = conn.execute(select(drafts).where(drafts.c.id == draft_id, drafts.c.org_id == org_id,
                                            drafts.c.author_id == author_id)).first()
    if row is None:
        raise no_such_draft(draft_id)
    return row


def get(conn: Connection, *, org_id: str, author_id: str, draft_id: str) -> dict[str, Any]:
    """One of the author's drafts; ``E_NO_SUCH_DRAFT`` (404) for anyone else."""
    return draft_json(_row(conn, org_id, author_id, draft_id))


def row_of(conn: Connection, *, org_id: str, author_id: str, draft_id: str) -> Any:
    """The raw draft row (for sealing from it); ``E_NO_SUCH_DRAFT`` (404)."""
    return _row(conn, org_id, author_id, draft_id)


def list_(conn: Connection, *, org_id: str, author_id: str, limit: int, cursor: str | None) -> list[dict[str, Any]]:
    """The author's drafts in id order after ``cursor``."""
    q = select(drafts).where(drafts.c.org_id == org_id, drafts.c.author_id == author_id)
    if cursor:
        q = q.where(drafts.c.id > cursor)
    return [draft_json(r) for r in conn.execute(q.order_by(drafts.c.id).limit(limit)).all()]


def edit(conn: Connection, *, org_id: str, author_id: str, at: datetime, draft_id: str,
         **values: Any) -> dict[str, Any]:
    """Replace the given fields (to, cc, bcc, subject, body); the author must still hold ``send.propose``."""
    row = _row(conn, org_id, author_id, draft_id)
    _check_authority(conn, org_id, author_id, row.mailbox_id)
    clean = _clean({k: v for k, v in values.items() if k in _FIELDS})
    conn.execute(update(drafts).where(drafts.c.id == draft_id).values(updated_at=at, **clean))
    return get(conn, org_id=org_id, author_id=author_id, draft_id=draft_id)


def remove(conn: Connection, *, org_id: str, author_id: str, at: datetime, draft_id: str) -> None:
    """Delete one of the author's drafts (audited ``draft.deleted``).

    A legal hold covering the draft's mailbox at its creation time refuses ``E_LEGAL_HOLD`` (409) and
    deletes nothing; run it inside ``retention.holds.deleting`` so the refusal is audited ``hold.blocked``.
    """
    row = _row(conn, org_id, author_id, draft_id)
    refuse_if_held(conn, org_id=org_id, actor_id=author_id, mailbox_id=row.mailbox_id, at=row.created_at,
                   subject=draft_id, act="draft.delete")
    conn.execute(delete(drafts).where(drafts.c.id == draft_id))
    audit.append(conn, org_id=org_id, at=at, action="draft.deleted", actor_id=author_id, subject=draft_id)


def for_parent(conn: Connection, *, org_id: str, author_id: str, in_reply_to_message_id: str) -> dict[str, Any] | None:
    """The author's draft answering ``in_reply_to_message_id`` (there is at most one), or None. One statement."""
    row = conn.execute(select(drafts).where(drafts.c.org_id == org_id, drafts.c.author_id == author_id,
                                            drafts.c.in_reply_to_message_id == in_reply_to_message_id)).first()
    return draft_json(row) if row is not None else None
