"""Threading: which conversation a message joins (RFC 5322 §3.6.4 References and In-Reply-To).

A message joins the conversation of the newest message it references (References first, newest to
oldest, then In-Reply-To), whether that was an inbound message or one of this node's sends (their
Message-IDs are recorded at seal); otherwise it starts a conversation. Message-IDs are compared exactly
as written between the angle brackets, and never assumed unique (the newest recorded use wins).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, select

from mailnode.ids import new_id
from mailnode.schema.mail_messages import conversations, message_ids


def candidate_ids(references: Sequence[str], in_reply_to: Sequence[str]) -> list[str]:
    """The ids to look up, in order: References newest first, then In-Reply-To; duplicates dropped."""
    out: list[str] = []
    for mid in [*reversed(references), *in_reply_to]:
        key = mid.strip().strip("<>")
        if key and key not in out:
            out.append(key)
    return out


def find_conversation(conn: Connection, org_id: str, references: Sequence[str],
                      in_reply_to: Sequence[str]) -> str | None:
    """The conversation a message with these headers joins, or None (one statement per candidate)."""
    for key in candidate_ids(references, in_reply_to):
        row = conn.execute(
            select(message_ids.c.conversation_id)
            .where(message_ids.c.org_id == org_id, message_ids.c.rfc_message_id == key)
            .order_by(message_ids.c.id.desc()).limit(1)
        ).first()
        if row is not None:
            return str(row.conversation_id)
    return None


def start_conversation(conn: Connection, org_id: str, subject: str | None, at: datetime) -> str:
    """A new conversation; returns its id."""
    cid = new_id("cnv")
    conn.execute(conversations.insert().values(id=cid, org_id=org_id, subject=subject, created_at=at))
    return cid


def record_message_id(conn: Connection, org_id: str, rfc_message_id: str | None, conversation_id: str,
                      source_id: str, at: datetime) -> None:
    """Remember that ``rfc_message_id`` belongs to ``conversation_id`` (no-op for an absent id)."""
    key = (rfc_message_id or "").strip().strip("<>")
    if key:
        conn.execute(message_ids.insert().values(org_id=org_id, rfc_message_id=key, conversation_id=conversation_id,
                                                 source_id=source_id, created_at=at))
