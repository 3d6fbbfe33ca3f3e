"""Idempotency keys for sealing: one key names one send per (organisation, author), never a second one.

The one mechanism behind ``POST /api/mail`` (its body field ``idempotency_key`` or the ``Idempotency-Key``
header) and ``POST /api/sends`` (the ``Idempotency-Key`` header). A caller that did not receive its answer
repeats the request under the same key and gets the send the first request sealed (``seal_once`` returns
a ``Replay``) instead of sealing it twice; the key is stored on the manifest, unique per organisation and
author (``uq_send_manifests_idempotency``), so two requests racing on one key seal once and the loser
replays the winner. The same key with a different mail (``differing_fields``: another mailbox, class,
recipient set or their display names, subject, text, HTML part, attachments, reply parent, From display
name, Reply-To, custom headers, tags or metadata) is refused
``E_IDEMPOTENCY_KEY_REUSED`` (409, ``detail.send_id`` the first send, ``detail.differs`` the fields), so a caller is
never told that a mail it did not send was sent. ``check_key`` refuses, before anything is read or sealed, a key that is
empty, longer than ``budgets.IDEMPOTENCY_KEY_MAX_CHARS``, or holds a control character
(``E_IDEMPOTENCY_KEY_MALFORMED``, 422; PostgreSQL cannot store NUL), and a key in the node's own namespace
(``mailnode:``, the keys its notices are sealed under) ``E_IDEMPOTENCY_KEY_RESERVED`` (422).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError

from mailnode import budgets
from mailnode.audit import audit_entries
from mailnode.db import integrity
from mailnode.errors import MailnodeError, conflict, invalid
from mailnode.node import Node
from mailnode.outbound.mail_fields import check_extras
from mailnode.outbound.seal import SealRequest, validate_recipients
from mailnode.schema.outbound import send_manifests

#: The unique index that makes a key name one send per organisation and author.
KEY_INDEX = "uq_send_manifests_idempotency"

S = TypeVar("S")

#: Idempotency keys starting with this belong to the node: no caller may supply one (``POST /api/mail``
#: refuses it, 422 ``E_IDEMPOTENCY_KEY_RESERVED``), so a key the node derives cannot be taken first.
NODE_KEY_PREFIX = "mailnode:"


def check_key(key: str, where: str) -> None:
    """Refuse a key that cannot name a send; ``where`` names it for the caller (``idempotency_key``,
    ``Idempotency-Key``). Pure.

    Raises ``E_IDEMPOTENCY_KEY_MALFORMED`` (422: empty, over ``budgets.IDEMPOTENCY_KEY_MAX_CHARS``
    characters, or a control character) and ``E_IDEMPOTENCY_KEY_RESERVED`` (422: in the node's namespace).
    """
    limit = budgets.IDEMPOTENCY_KEY_MAX_CHARS
    if not key or len(key) > limit:
        raise invalid("E_IDEMPOTENCY_KEY_MALFORMED",
                      f"The {where} is {len(key)} characters long; a key is 1 to {limit} characters.",
                      "A key names one mail and is stored with it; providers bound theirs the same way.",
                      f"Send an {where} of 1 to {limit} printable characters, e.g. a UUID.",
                      observed=len(key), limit=limit, limit_name="IDEMPOTENCY_KEY_MAX_CHARS")
    bad = next((c for c in key if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise invalid("E_IDEMPOTENCY_KEY_MALFORMED",
                      f"The {where} contains the control character U+{ord(bad):04X}.",
                      "A key is printable text: it is stored and compared as text, and PostgreSQL cannot hold NUL.",
                      f"Send an {where} of printable characters, e.g. a UUID.",
                      character=f"U+{ord(bad):04X}")
    if key.startswith(NODE_KEY_PREFIX):
        raise invalid("E_IDEMPOTENCY_KEY_RESERVED",
                      f"Idempotency keys starting {NODE_KEY_PREFIX!r} belong to the node.",
                      "The node seals its own notices under keys in that namespace; a caller's mail under one "
                      "could be taken for a notice.",
                      f"Send an {where} that does not start with {NODE_KEY_PREFIX!r}, e.g. a UUID.",
                      prefix=NODE_KEY_PREFIX)


def one_key(header: str | None, body: str | None) -> str | None:
    """The key of a request that may carry it in the ``Idempotency-Key`` header and in a body field
    ``idempotency_key``: either, or both when equal; None when neither. Pure.

    Raises ``E_IDEMPOTENCY_KEY_CONFLICT`` (422) when both are given and differ.
    """
    if header is not None and body is not None and header != body:
        raise invalid("E_IDEMPOTENCY_KEY_CONFLICT",
                      "The Idempotency-Key header and the body's idempotency_key differ.",
                      "A request names one mail under one key; with two different keys the node cannot tell "
                      "which one a retry will repeat.",
                      "Send the key once (the header or the body field), or the same key in both.",
                      header=header[:80], body=body[:80])
    return header if header is not None else body


@dataclass(frozen=True)
class MailFingerprint:
    """What makes two requests under one idempotency key the same mail.

    Attributes:
        mailbox_id: the sending mailbox (``mbx_...``).
        mail_class: ``correspondence``, ``realtime`` or ``deferrable``.
        to, cc, bcc: the normalised recipients of each kind, lower-cased and sorted (order is not content).
        subject: the Subject as sent.
        text_sha256: hex SHA-256 of the UTF-8 text (the evidence store's digest of the typed body).
        in_reply_to_message_id: the message answered (``msg_...``), or None.
        names: ``(address lower-cased, display name)`` of the To and Cc recipients that have one, sorted.
        html_sha256: hex SHA-256 of the HTML part's UTF-8, or None for text only.
        attachments: ``(filename, content_type, sha256)`` of each attachment, in order.
        from_name: the From display name, or None.
        reply_to: the Reply-To addresses as written (``Name <addr>``), in order.
        headers: the custom headers ``(name, value)``, in order.
        tags: the tags, in order.
        metadata: ``(key, value)`` sorted by key.
    """

    mailbox_id: str
    mail_class: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    bcc: tuple[str, ...]
    subject: str
    text_sha256: str
    in_reply_to_message_id: str | None = None
    names: tuple[tuple[str, str], ...] = ()
    html_sha256: str | None = None
    attachments: tuple[tuple[str, str, str], ...] = ()
    from_name: str | None = None
    reply_to: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()


#: The fields ``differing_fields`` compares, in the order it names them.
FINGERPRINT_FIELDS: tuple[str, ...] = ("mailbox_id", "mail_class", "to", "cc", "bcc", "subject", "text",
                                       "in_reply_to_message_id", "display_names", "html", "attachments",
                                       "from_name", "reply_to", "headers", "tags", "metadata")


def differing_fields(stored: MailFingerprint, asked: MailFingerprint) -> tuple[str, ...]:
    """The request fields (``FINGERPRINT_FIELDS`` names) in which ``asked`` is not the mail ``stored``; () when same.

    Pure. ``text`` compares the digests.
    """
    pairs = {"mailbox_id": (stored.mailbox_id, asked.mailbox_id),
             "mail_class": (stored.mail_class, asked.mail_class),
             "to": (stored.to, asked.to), "cc": (stored.cc, asked.cc), "bcc": (stored.bcc, asked.bcc),
             "subject": (stored.subject, asked.subject),
             "text": (stored.text_sha256, asked.text_sha256),
             "in_reply_to_message_id": (stored.in_reply_to_message_id, asked.in_reply_to_message_id),
             "display_names": (stored.names, asked.names), "html": (stored.html_sha256, asked.html_sha256),
             "attachments": (stored.attachments, asked.attachments),
             "from_name": (stored.from_name, asked.from_name), "reply_to": (stored.reply_to, asked.reply_to),
             "headers": (stored.headers, asked.headers), "tags": (stored.tags, asked.tags),
             "metadata": (stored.metadata, asked.metadata)}
    return tuple(name for name in FINGERPRINT_FIELDS if pairs[name][0] != pairs[name][1])


def _sorted_lower(addresses: Any) -> tuple[str, ...]:
    return tuple(sorted(str(a).lower() for a in (addresses or ())))


def fingerprint_of(request: SealRequest) -> MailFingerprint:
    """The fingerprint of a composition, its recipients normalised as the seal normalises them (the seal's
    422s apply: ``E_ADDRESS_MALFORMED``, ``E_NO_RECIPIENTS`` ...)."""
    recipients = validate_recipients(request.to, request.cc, request.bcc)
    extras = check_extras(request.from_name, request.reply_to, request.headers, request.tags, request.metadata,
                          text_part=request.text_part, html=request.html)
    by_kind = {kind: _sorted_lower(a.address for k, a in recipients if k == kind) for kind in ("to", "cc", "bcc")}
    names = {a.key: a.display_name for k, a in recipients if k != "bcc" and a.display_name}
    return MailFingerprint(mailbox_id=request.mailbox_id, mail_class=request.mail_class, to=by_kind["to"],
                           cc=by_kind["cc"], bcc=by_kind["bcc"], subject=request.subject,
                           text_sha256=hashlib.sha256(request.body.encode("utf-8")).hexdigest(),
                           in_reply_to_message_id=request.in_reply_to_message_id,
                           names=tuple(sorted(names.items())),
                           html_sha256=(hashlib.sha256(request.html.encode("utf-8")).hexdigest()
                                        if request.html is not None else None),
                           attachments=tuple((a.filename, a.content_type, hashlib.sha256(a.data).hexdigest())
                                             for a in request.attachments),
                           from_name=request.from_name, reply_to=tuple(extras.reply_to_written()),
                           headers=extras.headers, tags=extras.tags, metadata=extras.metadata)


def fingerprint_of_send(conn: Connection, send_id: str) -> MailFingerprint:
    """The fingerprint of a sealed manifest (one read)."""
    m = send_manifests.c
    row = conn.execute(select(m.mailbox_id, m.mail_class, m.to_addresses, m.cc_addresses, m.bcc_addresses,
                              m.subject, m.body_typed_sha256, m.in_reply_to_message_id, m.display_names,
                              m.body_html_sha256, m.attachments, m.from_name, m.reply_to, m.custom_headers,
                              m.tags, m.metadata)
                       .where(m.id == send_id)).one()
    return MailFingerprint(mailbox_id=row.mailbox_id, mail_class=row.mail_class, to=_sorted_lower(row.to_addresses),
                           cc=_sorted_lower(row.cc_addresses), bcc=_sorted_lower(row.bcc_addresses),
                           subject=row.subject, text_sha256=row.body_typed_sha256,
                           in_reply_to_message_id=row.in_reply_to_message_id,
                           names=tuple(sorted((str(k), str(v)) for k, v in (row.display_names or {}).items())),
                           html_sha256=row.body_html_sha256,
                           attachments=tuple((str(a["filename"]), str(a["content_type"]), str(a["sha256"]))
                                             for a in (row.attachments or [])),
                           from_name=row.from_name, reply_to=tuple(str(a) for a in (row.reply_to or [])),
                           headers=tuple((str(n), str(v)) for n, v in (row.custom_headers or [])),
                           tags=tuple(str(t) for t in (row.tags or [])),
                           metadata=tuple(sorted((str(k), str(v)) for k, v in (row.metadata or {}).items())))


def sealed_from_draft(conn: Connection, send_id: str) -> str | None:
    """The draft a send was sealed from (``send.sealed``'s ``detail.draft_id`` in the audit trail, written in
    the seal's transaction), or None (sealed inline, or the entry's detail was truncated). One read."""
    m = send_manifests.c
    a = audit_entries.c
    row = conn.execute(select(a.detail).select_from(audit_entries.join(
        send_manifests, (m.id == a.subject) & (m.org_id == a.org_id) & (m.sealed_at == a.at)))
        .where(m.id == send_id, a.action == "send.sealed")).first()
    if row is None or row.detail is None:
        return None
    draft_id = json.loads(row.detail).get("draft_id")
    return str(draft_id) if draft_id is not None else None


def find_by_key(conn: Connection, org_id: str, author_id: str, key: str) -> str | None:
    """The send an author sealed under idempotency ``key``, or None."""
    row = conn.execute(select(send_manifests.c.id).where(
        send_manifests.c.org_id == org_id, send_manifests.c.author_id == author_id,
        send_manifests.c.idempotency_key == key)).first()
    return None if row is None else str(row.id)


def key_reused(send_id: str, key: str, differs: Sequence[str], *, where: str, read_at: str) -> MailnodeError:
    """409 ``E_IDEMPOTENCY_KEY_REUSED``: the key already names a different mail (``differs``: its fields).

    ``where`` names the key for the caller (``idempotency_key``, ``Idempotency-Key``); ``read_at`` the route
    that reads the first send (``GET /api/mail/{id}``).
    """
    return conflict("E_IDEMPOTENCY_KEY_REUSED",
                    f"The idempotency key {key[:80]!r} already names a different mail ({send_id}).",
                    "A key names one mail: a retry must repeat the first request exactly, so the node never "
                    "answers for a mail it did not send. Differs: " + ", ".join(differs) + ".",
                    f"Send this mail under a new {where}; the first is at {read_at.format(id=send_id)}.",
                    send_id=send_id, idempotency_key=key[:80], differs=list(differs))


@dataclass(frozen=True)
class Replay:
    """The answer to a request whose key already names a send: that send, sealed by an earlier request."""

    send_id: str


#: What a request asks, as ``seal_once`` needs it: the fingerprint of the mail, read only when the key
#: already names a send (a request from a draft reads its draft for it), or ``DRAFT_GONE`` with the
#: draft's id when the draft no longer exists (a seal retires the draft it seals).
Asked = Callable[[Connection], "MailFingerprint | DraftGone"]


@dataclass(frozen=True)
class DraftGone:
    """A request from draft ``draft_id`` that no longer exists; ``refusal`` is what it answers unless the
    send under its key was sealed from that very draft (then the request is a retry and replays)."""

    draft_id: str
    refusal: MailnodeError


def sealed_under(node: Node, *, org_id: str, author_id: str, key: str, asked: Asked, where: str,
                 read_at: str) -> str | None:
    """The send ``key`` already names for this author when the request is the same mail, or None when the
    key names none yet. Raises ``E_IDEMPOTENCY_KEY_REUSED`` (409) when the key names a different mail, and a
    gone draft's own refusal (``E_NO_SUCH_DRAFT``, 404) when the send was not sealed from it."""
    with node.read() as conn:
        existing = find_by_key(conn, org_id, author_id, key)
        if existing is None:
            return None
        mail = asked(conn)
        if isinstance(mail, DraftGone):
            if sealed_from_draft(conn, existing) != mail.draft_id:
                raise mail.refusal
            return existing
        differs = differing_fields(fingerprint_of_send(conn, existing), mail)
    if differs:
        raise key_reused(existing, key, differs, where=where, read_at=read_at)
    return existing


def seal_once(node: Node, *, org_id: str, author_id: str, key: str | None, asked: Asked,
              seal: Callable[[], S], where: str, read_at: str) -> S | Replay:
    """Seal with ``seal()`` unless ``key`` already names this author's send; then ``Replay`` it.

    ``key`` None seals (no idempotency asked). A request that loses a race on the key (the unique index
    ``KEY_INDEX``, and nothing else: ``db.integrity.violates``) replays the winner's send. Raises what
    ``sealed_under`` and ``seal()`` raise; nothing is sealed twice under one key.
    """
    if key is None:
        return seal()
    check_key(key, where)
    existing = sealed_under(node, org_id=org_id, author_id=author_id, key=key, asked=asked, where=where,
                            read_at=read_at)
    if existing is not None:
        return Replay(existing)
    try:
        return seal()
    except IntegrityError as exc:
        if not integrity.violates(exc, send_manifests, KEY_INDEX):
            raise
        # Two requests raced on one key: the other sealed first, so this one answers with its send.
        raced = sealed_under(node, org_id=org_id, author_id=author_id, key=key, asked=asked, where=where,
                             read_at=read_at)
        if raced is None:
            raise
        return Replay(raced)
