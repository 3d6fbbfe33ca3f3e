"""Cases: one open case per (conversation, mailbox); claim, take and close.

A claim is one conditional update (``assignee IS NULL``); the loser is told who holds the case and since
when (``E_CASE_HELD``, 409). Taking a held case is explicit (``take=True``) and audited. Naming another
assignee needs the caller's ``send.propose`` on the mailbox and that the assignee may work it
(``send.propose``), else ``E_ASSIGNEE_MAY_NOT_WORK_IT``; the Butler runtime's ``case.assign`` calls
``claim`` with the Butler as the caller. Closing needs the caller to hold the case. Reopening a closed case
needs ``send.propose`` on its mailbox and that no newer case of the conversation is open there (a new message
opens a new case); the reopened case is held by whoever reopened it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select, update

from mailnode import audit
from mailnode.authz import holds, mailboxes_visible
from mailnode.errors import MailnodeError, conflict, not_found
from mailnode.ids import new_id, parse_id
from mailnode.schema.mail_messages import case_notes, cases


def open_case(conn: Connection, *, org_id: str, conversation_id: str, mailbox_id: str, at: datetime) -> str:
    """The open case of (conversation, mailbox), opening one when none is open; returns its id."""
    row = conn.execute(select(cases.c.id).where(cases.c.conversation_id == conversation_id,
                                                cases.c.mailbox_id == mailbox_id, cases.c.state == "open")).first()
    if row is not None:
        return str(row.id)
    cid = new_id("cas")
    conn.execute(cases.insert().values(id=cid, org_id=org_id, conversation_id=conversation_id, mailbox_id=mailbox_id,
                                       state="open", opened_at=at))
    return cid


def case_json(r: Any) -> dict[str, Any]:
    """The API shape of a case."""
    return {"id": r.id, "conversation_id": r.conversation_id, "mailbox_id": r.mailbox_id, "state": r.state,
            "assignee_id": r.assignee_id, "assigned_at": r.assigned_at.isoformat() if r.assigned_at else None,
            "opened_at": r.opened_at.isoformat(), "closed_at": r.closed_at.isoformat() if r.closed_at else None}


def _no_case(case_id: str) -> MailnodeError:
    return not_found("E_NO_SUCH_CASE", f"No case {case_id}.", fix="List cases with GET /api/cases?mailbox_id=...",
                     case_id=case_id)


def get_case(conn: Connection, *, org_id: str, principal_id: str, case_id: str) -> Any:
    """The case row, if the caller may see its mailbox (any relation on it); else ``E_NO_SUCH_CASE`` (404)."""
    parse_id(case_id, "cas", "case_id")
    row = conn.execute(select(cases).where(cases.c.id == case_id, cases.c.org_id == org_id)).first()
    if row is None or row.mailbox_id not in mailboxes_visible(conn, org_id, principal_id):
        raise _no_case(case_id)
    return row


def claim_refusal(*, state: str, holder_id: str | None, principal_id: str, assignee_id: str,
                  principal_may_work: bool, assignee_may_work: bool, take: bool) -> str | None:
    """Pure: the code ``claim`` refuses with over these facts, or None when it assigns.

    ``E_MAY_NOT_WORK_CASE``, ``E_ASSIGNEE_MAY_NOT_WORK_IT``, ``E_CASE_CLOSED``, ``E_CASE_HELD`` (an
    assignee already, and not ``take``), in that order. The Butler dry run decides a ``case.assign`` with
    this same function over the facts it reads, so it cannot disagree with the claim.
    """
    if not principal_may_work:
        return "E_MAY_NOT_WORK_CASE"
    if assignee_id != principal_id and not assignee_may_work:
        return "E_ASSIGNEE_MAY_NOT_WORK_IT"
    if state != "open":
        return "E_CASE_CLOSED"
    if holder_id is not None and not take:
        return "E_CASE_HELD"
    return None


def close_refusal(*, state: str, holder_id: str | None, principal_id: str) -> str | None:
    """Pure: the code ``close`` refuses with (``E_CASE_CLOSED``, ``E_NOT_YOUR_CASE``), or None when it closes."""
    if state != "open":
        return "E_CASE_CLOSED"
    if holder_id != principal_id:
        return "E_NOT_YOUR_CASE"
    return None


def reopen_refusal(*, state: str, may_work: bool, newer_open_case_id: str | None) -> str | None:
    """Pure: the code ``reopen`` refuses with, or None when it reopens.

    ``E_MAY_NOT_WORK_CASE`` (no ``send.propose``), ``E_CASE_OPEN`` (it is open already),
    ``E_CASE_SUPERSEDED`` (another case of the same conversation and mailbox is open: at most one is), in
    that order.
    """
    if not may_work:
        return "E_MAY_NOT_WORK_CASE"
    if state == "open":
        return "E_CASE_OPEN"
    if state != "closed":
        # A state outside the vocabulary is not reopened (fails closed): it reads as still open.
        return "E_CASE_OPEN"
    if newer_open_case_id is not None:
        return "E_CASE_SUPERSEDED"
    return None


def _held(case_id: str, holder_id: str | None, since: datetime | None) -> MailnodeError:
    return conflict("E_CASE_HELD",
                    f"Case {case_id} is held by {holder_id} since {since.isoformat() if since else '(unknown)'}.",
                    "A claim succeeds only on an unassigned case.",
                    f"POST /api/cases/{case_id}/claim with {{\"take\": true}} to take it over.",
                    case_id=case_id, assignee_id=holder_id, since=since.isoformat() if since else None)


def claim(conn: Connection, *, org_id: str, principal_id: str, at: datetime, case_id: str,
          assignee_id: str | None = None, take: bool = False) -> dict[str, Any]:
    """Assign an open case (to the caller by default) with one conditional update.

    Raises ``E_NO_SUCH_CASE`` (404), ``E_MAY_NOT_WORK_CASE`` (403: no ``send.propose``),
    ``E_ASSIGNEE_MAY_NOT_WORK_IT`` (409), ``E_CASE_CLOSED`` (409), ``E_CASE_HELD`` (409, naming the holder
    and since when; retry with ``take: true`` to take it over).
    """
    row = get_case(conn, org_id=org_id, principal_id=principal_id, case_id=case_id)
    assignee = assignee_id or principal_id
    principal_may_work = holds(conn, org_id, principal_id, "send.propose", "mailbox", row.mailbox_id)
    assignee_may_work = principal_may_work and (
        assignee == principal_id or holds(conn, org_id, assignee, "send.propose", "mailbox", row.mailbox_id))
    refusal = claim_refusal(state=row.state, holder_id=row.assignee_id, principal_id=principal_id,
                            assignee_id=assignee, principal_may_work=principal_may_work,
                            assignee_may_work=assignee_may_work, take=take)
    if refusal == "E_MAY_NOT_WORK_CASE":
        raise MailnodeError(code="E_MAY_NOT_WORK_CASE", what=f"You may not work case {case_id}.",
                            why="Claiming a case needs send.propose on its mailbox.",
                            fix="Ask an administrator for send.propose on the mailbox (POST /api/access).",
                            status=403, detail={"case_id": case_id, "mailbox_id": row.mailbox_id})
    if refusal == "E_ASSIGNEE_MAY_NOT_WORK_IT":
        raise conflict("E_ASSIGNEE_MAY_NOT_WORK_IT", f"{assignee} may not work this mailbox's cases.",
                       "An assignee needs send.propose on the case's mailbox.",
                       "Grant them send.propose (POST /api/access) or name someone who holds it.",
                       case_id=case_id, assignee_id=assignee)
    if refusal == "E_CASE_CLOSED":
        raise conflict("E_CASE_CLOSED", f"Case {case_id} is closed.", "Only open cases can be assigned.",
                       "A new message in the conversation opens a new case.", case_id=case_id)
    if refusal == "E_CASE_HELD":
        raise _held(case_id, row.assignee_id, row.assigned_at)
    # The conditional update still decides a race with another claim between the read and the write.
    q = update(cases).where(cases.c.id == case_id, cases.c.state == "open")
    q = q if take else q.where(cases.c.assignee_id.is_(None))
    result = conn.execute(q.values(assignee_id=assignee, assigned_at=at))
    if result.rowcount == 0:
        holder = conn.execute(select(cases).where(cases.c.id == case_id)).one()
        if holder.state != "open":
            raise conflict("E_CASE_CLOSED", f"Case {case_id} is closed.", "It was closed meanwhile.",
                           "Nothing to do.", case_id=case_id)
        raise _held(case_id, holder.assignee_id, holder.assigned_at)
    action = "case.claim_taken" if take and row.assignee_id and row.assignee_id != assignee else "case.claimed"
    audit.append(conn, org_id=org_id, at=at, action=action, actor_id=principal_id, subject=case_id,
                 detail={"assignee_id": assignee, "previous_assignee_id": row.assignee_id})
    return case_json(conn.execute(select(cases).where(cases.c.id == case_id)).one())


def _not_yours(case_id: str, holder_id: str | None) -> MailnodeError:
    return conflict("E_NOT_YOUR_CASE", f"Case {case_id} is not held by you.",
                    "Only the assignee closes a case.",
                    f"Claim it first: POST /api/cases/{case_id}/claim (with take: true if someone holds it).",
                    case_id=case_id, assignee_id=holder_id)


def close(conn: Connection, *, org_id: str, principal_id: str, at: datetime, case_id: str) -> dict[str, Any]:
    """Close a case the caller holds. ``E_NOT_YOUR_CASE`` (409) otherwise, ``E_CASE_CLOSED`` (409)."""
    row = get_case(conn, org_id=org_id, principal_id=principal_id, case_id=case_id)
    refusal = close_refusal(state=row.state, holder_id=row.assignee_id, principal_id=principal_id)
    if refusal == "E_CASE_CLOSED":
        raise conflict("E_CASE_CLOSED", f"Case {case_id} is already closed.", "A case closes once.",
                       "Nothing to do.", case_id=case_id)
    if refusal == "E_NOT_YOUR_CASE":
        raise _not_yours(case_id, row.assignee_id)
    # The conditional update still decides a race with a claim or close between the read and the write.
    result = conn.execute(update(cases).where(cases.c.id == case_id, cases.c.state == "open",
                                              cases.c.assignee_id == principal_id)
                          .values(state="closed", closed_at=at, closed_by=principal_id))
    if result.rowcount == 0:
        raise _not_yours(case_id, row.assignee_id)
    audit.append(conn, org_id=org_id, at=at, action="case.closed", actor_id=principal_id, subject=case_id)
    return case_json(conn.execute(select(cases).where(cases.c.id == case_id)).one())


def reopen(conn: Connection, *, org_id: str, principal_id: str, at: datetime, case_id: str) -> dict[str, Any]:
    """Reopen a closed case, held by the caller from ``at``; audited ``case.reopened``. Returns ``case_json``.

    Raises ``E_NO_SUCH_CASE`` (404), ``E_MAY_NOT_WORK_CASE`` (403: no ``send.propose`` on its mailbox),
    ``E_CASE_OPEN`` (409: it is open), ``E_CASE_SUPERSEDED`` (409: a newer case of the conversation is open
    in the mailbox, named in the error; work that one).
    """
    row = get_case(conn, org_id=org_id, principal_id=principal_id, case_id=case_id)
    may_work = holds(conn, org_id, principal_id, "send.propose", "mailbox", row.mailbox_id)
    other = conn.execute(select(cases.c.id).where(cases.c.conversation_id == row.conversation_id,
                                                  cases.c.mailbox_id == row.mailbox_id, cases.c.state == "open",
                                                  cases.c.id != case_id)).first()
    other_id = str(other.id) if other is not None else None
    refusal = reopen_refusal(state=row.state, may_work=may_work, newer_open_case_id=other_id)
    if refusal == "E_MAY_NOT_WORK_CASE":
        raise MailnodeError(code="E_MAY_NOT_WORK_CASE", what=f"You may not work case {case_id}.",
                            why="Reopening a case needs send.propose on its mailbox.",
                            fix="Ask an administrator for send.propose on the mailbox (POST /api/access).",
                            status=403, detail={"case_id": case_id, "mailbox_id": row.mailbox_id})
    if refusal == "E_CASE_OPEN":
        raise conflict("E_CASE_OPEN", f"Case {case_id} is open.", "Only a closed case can be reopened.",
                       f"Nothing to do; claim it if nobody holds it: POST /api/cases/{case_id}/claim.",
                       case_id=case_id)
    if refusal == "E_CASE_SUPERSEDED":
        raise conflict("E_CASE_SUPERSEDED", f"Case {case_id} has a newer open case, {other_id}.",
                       "A conversation has at most one open case per mailbox; a new message opened another.",
                       f"Work the open case instead: POST /api/cases/{other_id}/claim.",
                       case_id=case_id, open_case_id=other_id)
    # The conditional update decides a race with another reopen; the unique index a race with a new message.
    result = conn.execute(update(cases).where(cases.c.id == case_id, cases.c.state == "closed")
                          .values(state="open", closed_at=None, closed_by=None, assignee_id=principal_id,
                                  assigned_at=at))
    if result.rowcount == 0:
        raise conflict("E_CASE_OPEN", f"Case {case_id} is open.", "It was reopened meanwhile.", "Nothing to do.",
                       case_id=case_id)
    audit.append(conn, org_id=org_id, at=at, action="case.reopened", actor_id=principal_id, subject=case_id,
                 detail={"closed_by": row.closed_by, "closed_at": row.closed_at.isoformat() if row.closed_at
                         else None})
    return case_json(conn.execute(select(cases).where(cases.c.id == case_id)).one())


def remove(conn: Connection, *, org_id: str, principal_id: str, at: datetime, case_id: str) -> None:
    """Delete a closed case (its messages stay, unlinked; its notes are deleted); audited ``case.deleted``.

    Needs ``send.propose`` on its mailbox (``E_MAY_NOT_WORK_CASE``, 403) and a closed case
    (``E_CASE_OPEN``, 409). A legal hold covering the mailbox at the case's opening refuses ``E_LEGAL_HOLD``
    (409); run it inside ``retention.holds.deleting`` so the refusal is audited ``hold.blocked``.
    """
    from mailnode.retention.holds import refuse_if_held
    from mailnode.schema.mail_messages import messages

    row = get_case(conn, org_id=org_id, principal_id=principal_id, case_id=case_id)
    if not holds(conn, org_id, principal_id, "send.propose", "mailbox", row.mailbox_id):
        raise MailnodeError(code="E_MAY_NOT_WORK_CASE", what=f"You may not work case {case_id}.",
                            why="Deleting a case needs send.propose on its mailbox.",
                            fix="Ask an administrator for send.propose on the mailbox (POST /api/access).",
                            status=403, detail={"case_id": case_id, "mailbox_id": row.mailbox_id})
    refuse_if_held(conn, org_id=org_id, actor_id=principal_id, mailbox_id=row.mailbox_id, at=row.opened_at,
                   subject=case_id, act="case.delete")
    if row.state == "open":
        raise conflict("E_CASE_OPEN", f"Case {case_id} is open.", "Only a closed case can be deleted.",
                       f"Close it first: POST /api/cases/{case_id}/close.", case_id=case_id)
    conn.execute(update(messages).where(messages.c.case_id == case_id).values(case_id=None))
    # A case's notes are the case's own words: they go with it (mail.notes).
    conn.execute(delete(case_notes).where(case_notes.c.case_id == case_id))
    conn.execute(delete(cases).where(cases.c.id == case_id))
    audit.append(conn, org_id=org_id, at=at, action="case.deleted", actor_id=principal_id, subject=case_id)
