"""Internal notes on a case: written by the people who work it, shown in the conversation, never sent.

Issue 15, "Notes". A note needs ``send.propose`` on the case's mailbox (the relation that works a case:
claim, close, delete); a case the caller cannot see is ``E_NO_SUCH_CASE`` (404) as everywhere, one they see
but may not work ``E_MAY_NOT_WORK_CASE`` (403). Adding one is audited ``case.note_added`` with the note's id,
size and SHA-256 (not its words: the audit trail outlives content retention). A note is never a send: it has
no recipient, no manifest and never reaches a transport. Notes are deleted with their case
(``mail.cases.remove``).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from mailnode import audit, budgets
from mailnode.addresses import reject_body_fault
from mailnode.authz import holds
from mailnode.errors import MailnodeError, invalid
from mailnode.ids import new_id
from mailnode.mail.cases import get_case
from mailnode.schema.mail_messages import case_notes


def note_json(r: Any) -> dict[str, Any]:
    """The API shape of a note row."""
    return {"id": r.id, "case_id": r.case_id, "conversation_id": r.conversation_id, "mailbox_id": r.mailbox_id,
            "author_id": r.author_id, "body": r.body, "created_at": r.created_at.isoformat()}


def check_note(body: str) -> None:
    """Refuse a note body that cannot be stored. Pure.

    ``E_NOTE_EMPTY`` (422) for a body of only white space, ``E_TEXT_MALFORMED`` (422) for a NUL or lone
    surrogate, ``E_NOTE_TOO_LARGE`` (413) over ``budgets.CASE_NOTE_MAX_BYTES`` UTF-8 bytes.
    """
    if not body.strip():
        raise invalid("E_NOTE_EMPTY", "The note is empty.", "A note records something for the people on the case.",
                      "Write the note's text in body and send again.")
    reject_body_fault("body", body)
    limit = budgets.CASE_NOTE_MAX_BYTES
    observed = len(body) if len(body) > limit else len(body.encode("utf-8"))
    if observed > limit:
        raise MailnodeError(code="E_NOTE_TOO_LARGE",
                            what=f"CASE_NOTE_MAX_BYTES is {limit} bytes; this note is {observed} bytes (UTF-8).",
                            why="A note is a few paragraphs for colleagues, not a document store.",
                            fix=f"Shorten the note to at most {limit} bytes, or split it, and send again.",
                            status=413, detail={"limit_name": "CASE_NOTE_MAX_BYTES", "limit": limit,
                                                "observed": observed})


def add_note(conn: Connection, *, org_id: str, principal_id: str, at: datetime, case_id: str,
             body: str) -> dict[str, Any]:
    """Add a note to ``case_id`` as ``principal_id``; returns ``note_json`` of it. Audited ``case.note_added``.

    Raises ``check_note``'s codes, ``E_NO_SUCH_CASE`` (404) and ``E_MAY_NOT_WORK_CASE`` (403).
    """
    check_note(body)
    row = get_case(conn, org_id=org_id, principal_id=principal_id, case_id=case_id)
    if not holds(conn, org_id, principal_id, "send.propose", "mailbox", row.mailbox_id):
        raise MailnodeError(code="E_MAY_NOT_WORK_CASE", what=f"You may not work case {case_id}.",
                            why="Adding a note needs send.propose on the case's mailbox.",
                            fix="Ask an administrator for send.propose on the mailbox (POST /api/access).",
                            status=403, detail={"case_id": case_id, "mailbox_id": row.mailbox_id})
    note_id = new_id("nte")
    conn.execute(case_notes.insert().values(id=note_id, org_id=org_id, case_id=case_id,
                                            conversation_id=row.conversation_id, mailbox_id=row.mailbox_id,
                                            author_id=principal_id, body=body, created_at=at))
    audit.append(conn, org_id=org_id, at=at, action="case.note_added", actor_id=principal_id, subject=case_id,
                 detail={"note_id": note_id, "conversation_id": row.conversation_id,
                         "bytes": len(body.encode("utf-8")),
                         "sha256": hashlib.sha256(body.encode("utf-8")).hexdigest()})
    return note_json(conn.execute(select(case_notes).where(case_notes.c.id == note_id)).one())
