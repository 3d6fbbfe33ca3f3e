"""What the index holds for a message or a send, and the words both databases index. Pure.

A ``Document`` is built from a stored message row (``message_document``) or from a send's manifest and its
typed body (``send_document``). Text fields are NFC-normalised and capped (``budgets.SEARCH_*_MAX_CHARS``)
so a hostile message cannot make a row the databases refuse (PostgreSQL's tsvector stops at 1 MiB).

``words`` is the one tokenizer: runs of letters and digits (Unicode categories L* and N*), lower-cased.
SQLite's FTS5 ``unicode61`` tokenizer (categories ``L* N* Co``, ``remove_diacritics 0``) splits text the
same way; PostgreSQL is handed these words already split (``index_text``), so its parser never sees an
e-mail address or a host name as one token and ``alice`` finds ``alice@example.com`` on both.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mailnode import budgets

#: A word: a run of letters and digits (``[^\W_]`` is ``\w`` without the underscore).
WORD = re.compile(r"[^\W_]+")

#: Mail classes whose sends have their body indexed: people's correspondence. Application mail
#: (``realtime``, ``deferrable``) and the node's own (``system``) carry codes and one-time links a
#: mailbox's readers must not find by searching; their subject and addresses are indexed, not the body.
BODY_INDEXED_CLASSES = frozenset({"correspondence"})


@dataclass(frozen=True)
class Document:
    """One row of ``search_documents``.

    Attributes:
        source_id: ``msg_...`` or ``snd_...``; kind: ``message`` | ``send``.
        at: received (a message) or sealed (a send), aware UTC.
        subject, sender, recipients (one per line), body: the text matched and shown, already capped.
        attachments: how many; automated: classified automated (a message) or ``Auto-Submitted`` (a send).
    """

    source_id: str
    kind: str
    org_id: str
    mailbox_id: str
    conversation_id: str | None
    case_id: str | None
    at: datetime
    subject: str
    sender: str
    recipients: str
    body: str
    attachments: int
    automated: bool

    def params(self) -> dict[str, Any]:
        """The bind parameters of ``search.index``'s upsert: every column, and the indexed words per field."""
        return {"source_id": self.source_id, "kind": self.kind, "org_id": self.org_id,
                "mailbox_id": self.mailbox_id, "conversation_id": self.conversation_id, "case_id": self.case_id,
                "at": self.at, "subject": self.subject, "sender": self.sender, "recipients": self.recipients,
                "body": self.body, "attachments": self.attachments, "automated": self.automated,
                "w_subject": index_text(self.subject), "w_sender": index_text(self.sender),
                "w_recipients": index_text(self.recipients), "w_body": index_text(self.body)}


def words(text: str) -> list[str]:
    """The words of ``text``: runs of letters and digits, lower-cased, in order (``"Alice <a@b.c>"`` ->
    ``["alice", "a", "b", "c"]``). Pure."""
    return [w.lower() for w in WORD.findall(unicodedata.normalize("NFC", text))]


def index_text(text: str) -> str:
    """``words(text)`` joined by single spaces: what PostgreSQL's ``to_tsvector('simple', ...)`` is given."""
    return " ".join(words(text))


def cap(text: str | None, limit: int) -> str:
    """``text`` NFC-normalised and cut to at most ``limit`` characters ('' for None). Pure."""
    if not text:
        return ""
    # Normalising a huge text before cutting it would cost its whole length; cut with room first.
    return unicodedata.normalize("NFC", text[: limit * 2])[:limit]


def _lines(values: Iterable[str | None]) -> str:
    return cap("\n".join(v.strip() for v in values if v and v.strip()), budgets.SEARCH_ADDRESSES_MAX_CHARS)


def sender_of(name: str | None, address: str | None, envelope_from: str | None) -> str:
    """``Name <address>`` from the From header, else the envelope sender. Pure."""
    if address:
        return f"{name} <{address}>" if name else address
    return envelope_from or ""


def message_document(row: Any, *, extra_text: str | None = None) -> Document:
    """The document of a stored ``messages`` row (attribute access: ``id``, ``org_id``, ``mailbox_id``,
    ``conversation_id``, ``case_id``, ``received_at``, ``subject``, ``from_name``, ``from_address``,
    ``envelope_from``, ``envelope_to``, ``headers`` (``[[name, value], ...]``), ``text_body``,
    ``attachments``, ``automated``). Recipients are the delivered-to address and the To and Cc header values
    as received. ``extra_text``: more body text to index (text derived from the HTML part, say). Pure."""
    headers: Sequence[Any] = row.headers or []
    to_cc = [str(h[1]) for h in headers if len(h) == 2 and str(h[0]).lower() in ("to", "cc")]
    body = "\n\n".join(t for t in (row.text_body, extra_text) if t)
    return Document(
        source_id=row.id, kind="message", org_id=row.org_id, mailbox_id=row.mailbox_id,
        conversation_id=row.conversation_id, case_id=row.case_id, at=row.received_at,
        subject=cap(row.subject, budgets.SEARCH_SUBJECT_MAX_CHARS),
        sender=cap(sender_of(row.from_name, row.from_address, row.envelope_from), budgets.SEARCH_SUBJECT_MAX_CHARS),
        recipients=_lines([row.envelope_to, *to_cc]), body=cap(body, budgets.SEARCH_BODY_MAX_CHARS),
        attachments=int(row.attachments or 0), automated=row.automated is not None)


def send_document(row: Any, body: str | None, *, attachments: int = 0) -> Document:
    """The document of a ``send_manifests`` row (attribute access: ``id``, ``org_id``, ``mailbox_id``,
    ``conversation_id``, ``sealed_at``, ``subject``, ``envelope_from``, ``to_addresses``, ``cc_addresses``,
    ``bcc_addresses``, ``mail_class``, ``auto_submitted``) and its typed ``body``. The body is indexed only
    for ``BODY_INDEXED_CLASSES``. Pure."""
    indexed = body if row.mail_class in BODY_INDEXED_CLASSES else None
    return Document(
        source_id=row.id, kind="send", org_id=row.org_id, mailbox_id=row.mailbox_id,
        conversation_id=row.conversation_id, case_id=None, at=row.sealed_at,
        subject=cap(row.subject, budgets.SEARCH_SUBJECT_MAX_CHARS),
        sender=cap(row.envelope_from, budgets.SEARCH_SUBJECT_MAX_CHARS),
        recipients=_lines([*row.to_addresses, *row.cc_addresses, *row.bcc_addresses]),
        body=cap(indexed, budgets.SEARCH_BODY_MAX_CHARS), attachments=attachments,
        automated=row.auto_submitted is not None)
