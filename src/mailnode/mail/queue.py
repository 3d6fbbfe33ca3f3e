"""A mailbox's queue as a person works it: the views with counts, one page of rows, bulk claim and close, search.

Issue 16, "The queue". The web inbox (``web.queue``) and the API (``api.queue``) both call these functions.
Decisions are ``mail.queue_rules``'; this module reads the facts and shapes them.

Who sees what: a mailbox's queue is listed to holders of metadata read (``authz.METADATA_READERS``), like
``GET /api/mailboxes/{id}/messages``; anyone else gets ``E_NO_SUCH_MAILBOX`` (404). A case row's snippet
needs ``mailbox.content.read`` and a Sent row's snippet the send-body grant of ``mail.thread``
(``send_body_grant``); a row whose content retention deleted shows none. Claim and close are
``mail.cases.claim`` / ``close`` per case, each in its own transaction so one refusal leaves the others
done; search is ``search.run.search`` limited to the mailbox.

Order and paging: a case view lists cases newest activity first, by the id of the case's latest message
(ULIDs are minted in time order); the cursor is that message id, so a case that receives a message moves
to the top and is never listed twice across pages. Sent lists sends newest sealed first; its cursor is the
send id. Statements per page: a fixed number (about ten) whatever the mailbox holds; the page itself walks
``ix_messages_mailbox`` newest first and finds each case's latest message through ``ix_messages_case``
(migration 0020), so it stops after one page in the busy views (``bench/web_queue.py``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, func, select

from mailnode import budgets
from mailnode.authz import METADATA_READERS, holds, mailboxes_visible
from mailnode.errors import MailnodeError, no_such_mailbox
from mailnode.ids import is_id
from mailnode.mail import cases as cases_mod
from mailnode.mail.mailboxes import get_mailbox_row
from mailnode.mail.queue_rules import (
    VIEW_RULES,
    CaseGroup,
    Holder,
    View,
    age_seconds,
    correspondent_of_send,
    counts,
    holder_label,
    next_cursor,
    snippet,
)
from mailnode.mail.thread import SendRelations, send_body_grant
from mailnode.retention import io as retention_io
from mailnode.schema.butler import butlers
from mailnode.schema.directory import users
from mailnode.schema.mail import mailboxes
from mailnode.schema.mail_messages import cases, messages
from mailnode.schema.outbound import send_manifests
from mailnode.schema.search import search_documents
from mailnode.search import run as search_run
from mailnode.search.query import parse_query
from mailnode.vocabulary.send_states import words_for


@dataclass(frozen=True)
class QueueMailbox:
    """A mailbox a person may open the queue of, with its two counts a switcher shows."""

    id: str
    name: str
    unassigned: int
    mine: int


@dataclass(frozen=True)
class QueueRow:
    """One row of a queue page.

    Attributes:
        kind: ``case`` (the case views) or ``send`` (Sent).
        id: the case id (``cas_``) or the send id (``snd_``).
        conversation_id: the conversation the row opens (``/conversations/{id}``); None for a send without one.
        key: the row's paging key (the case's latest message id, or the send id).
        correspondent_name / correspondent_address: who wrote the latest message, or a send's first To.
        subject: the latest message's subject (or the send's); None when it had none.
        snippet: the start of the latest text (``queue_rules.snippet``), or None when ``snippet_hidden`` says why.
        snippet_hidden: None, ``no_content_read`` (the caller may not read it) or ``content_deleted`` (retention).
        at: the latest message's ``received_at`` or the send's ``sealed_at`` (UTC); age_seconds: now - at.
        holder_id / holder: who holds the case (id, and ``you``/name/id), None when nobody does or for a send.
        state: the case's ``open``/``closed``, or the send's state; state_words: a send's state in words.
        messages: how many messages the case holds (1 for a send).
        attachments: the case's messages (or the send) carry attachments; dangerous: any is marked dangerous.
        automated: the latest message's automated reason (``ingress.classify.Reason``) or the send's
            ``Auto-Submitted`` value, None for a person's mail.
    """

    kind: Literal["case", "send"]
    id: str
    conversation_id: str | None
    key: str
    correspondent_name: str | None
    correspondent_address: str | None
    subject: str | None
    snippet: str | None
    snippet_hidden: str | None
    at: datetime
    age_seconds: int
    holder_id: str | None
    holder: str | None
    state: str
    state_words: str | None
    messages: int
    attachments: bool
    dangerous: bool
    automated: str | None

    def to_json(self) -> dict[str, Any]:
        """The API shape (``at`` as ISO 8601 UTC)."""
        out = dataclasses.asdict(self)
        out["at"] = self.at.isoformat()
        return out


@dataclass(frozen=True)
class QueuePage:
    """One page of one view of a mailbox's queue, with every view's count."""

    mailbox_id: str
    mailbox_name: str
    view: View
    counts: dict[View, int]
    rows: list[QueueRow]
    next_cursor: str | None
    #: Whether the caller may claim and close here (``send.propose`` on the mailbox): the page offers the
    #: bulk actions only then (the service refuses them per case anyway).
    may_work: bool

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        return {"mailbox_id": self.mailbox_id, "mailbox_name": self.mailbox_name, "view": self.view.value,
                "counts": {v.value: n for v, n in self.counts.items()}, "may_work": self.may_work,
                "rows": [r.to_json() for r in self.rows], "next_cursor": self.next_cursor}


def queue_mailboxes(conn: Connection, *, org_id: str, principal_id: str) -> list[QueueMailbox]:
    """The mailboxes whose queue the caller may open (metadata read), by name, with their Unassigned and Mine
    counts (three statements)."""
    visible = sorted(mailboxes_visible(conn, org_id, principal_id, METADATA_READERS))
    if not visible:
        return []
    rows = conn.execute(select(mailboxes.c.id, mailboxes.c.name)
                        .where(mailboxes.c.org_id == org_id, mailboxes.c.id.in_(visible))).all()
    c = cases.c
    grouped = conn.execute(select(c.mailbox_id, c.state, c.assignee_id, func.count().label("n"))
                           .where(c.mailbox_id.in_(visible), c.state == "open")
                           .group_by(c.mailbox_id, c.state, c.assignee_id)).all()
    by_box: dict[str, list[CaseGroup]] = {}
    for g in grouped:
        by_box.setdefault(g.mailbox_id, []).append(CaseGroup(g.state, g.assignee_id, int(g.n)))
    out = []
    for r in rows:
        n = counts(by_box.get(r.id, []), sent=0, principal_id=principal_id)
        out.append(QueueMailbox(r.id, r.name, n[View.UNASSIGNED], n[View.MINE]))
    return sorted(out, key=lambda b: (b.name.casefold(), b.id))


def _readable_mailbox(conn: Connection, org_id: str, principal_id: str, mailbox_id: str) -> Any:
    row = get_mailbox_row(conn, org_id, mailbox_id)
    if not holds(conn, org_id, principal_id, METADATA_READERS, "mailbox", mailbox_id):
        raise no_such_mailbox(mailbox_id)
    return row


def _cursor_refused(cursor: str, view: View) -> MailnodeError:
    kind = "a send id (snd_...)" if view is View.SENT else "a message id (msg_...)"
    return MailnodeError(code="E_QUEUE_CURSOR_INVALID", what=f"{cursor[:60]!r} is not a cursor of the {view} view.",
                         why=f"The {view} view pages by {kind}: the next_cursor of its previous page.",
                         fix="Pass back the next_cursor of the previous page unchanged, or none for the first page.",
                         status=422, detail={"cursor": cursor[:60], "view": view.value})


def view_counts(conn: Connection, *, mailbox_id: str, principal_id: str) -> dict[View, int]:
    """Every view's count for one mailbox (two statements: the cases grouped by state and holder, the sends)."""
    c = cases.c
    grouped = conn.execute(select(c.state, c.assignee_id, func.count().label("n"))
                           .where(c.mailbox_id == mailbox_id).group_by(c.state, c.assignee_id)).all()
    sent = conn.execute(select(func.count()).select_from(send_manifests)
                        .where(send_manifests.c.mailbox_id == mailbox_id)).scalar_one()
    return counts([CaseGroup(g.state, g.assignee_id, int(g.n)) for g in grouped], sent=int(sent),
                  principal_id=principal_id)


def read_queue(conn: Connection, *, org_id: str, principal_id: str, mailbox_id: str, view: View, now: datetime,
               limit: int = budgets.QUEUE_PAGE_ROWS, cursor: str | None = None) -> QueuePage:
    """One page of ``view`` of the mailbox's queue (see the module docstring), newest first after ``cursor``.

    ``now`` (UTC) is what ages are measured from. Raises ``E_NO_SUCH_MAILBOX`` (404: absent, or the caller
    holds no metadata read on it), ``E_ID_MALFORMED`` (422: ``mailbox_id``), ``E_QUEUE_CURSOR_INVALID``
    (422: a cursor that is not this view's kind of key).
    """
    box = _readable_mailbox(conn, org_id, principal_id, mailbox_id)
    if cursor and not is_id(cursor, "snd" if view is View.SENT else "msg"):
        raise _cursor_refused(cursor, view)
    may_read = holds(conn, org_id, principal_id, "mailbox.content.read", "mailbox", mailbox_id)
    may_work = holds(conn, org_id, principal_id, "send.propose", "mailbox", mailbox_id)
    if view is View.SENT:
        may_decide = holds(conn, org_id, principal_id, "approval.decide", "mailbox", mailbox_id)
        rows = _send_rows(conn, mailbox_id=mailbox_id, principal_id=principal_id, now=now, limit=limit,
                          cursor=cursor, relations=(may_work, may_decide, may_read))
    else:
        rows = _case_rows(conn, org_id=org_id, mailbox_id=mailbox_id, principal_id=principal_id, view=view,
                          now=now, limit=limit, cursor=cursor, may_read=may_read)
    return QueuePage(mailbox_id, box.name, view, view_counts(conn, mailbox_id=mailbox_id, principal_id=principal_id),
                     rows, next_cursor([r.key for r in rows], limit), may_work)


def _case_rows(conn: Connection, *, org_id: str, mailbox_id: str, principal_id: str, view: View, now: datetime,
               limit: int, cursor: str | None, may_read: bool) -> list[QueueRow]:
    m, c = messages.c, cases.c
    later = messages.alias("later")
    want_state, holder = VIEW_RULES[view]
    cols = [m.id, m.case_id, m.conversation_id, m.subject, m.from_name, m.from_address, m.envelope_from,
            m.received_at, m.automated, c.state, c.assignee_id]
    if may_read:
        cols.append(m.text_body)
    # The case's latest message is the one no later message of the same case follows (ix_messages_case).
    q = (select(*cols).select_from(messages.join(cases, c.id == m.case_id))
         .where(m.mailbox_id == mailbox_id, c.state == want_state,
                ~select(later.c.id).where(later.c.case_id == m.case_id, later.c.id > m.id).exists()))
    if holder is Holder.NOBODY:
        q = q.where(c.assignee_id.is_(None))
    elif holder is Holder.ME:
        q = q.where(c.assignee_id == principal_id)
    if cursor:
        q = q.where(m.id < cursor)
    found = conn.execute(q.order_by(m.id.desc()).limit(limit)).all()
    if not found:
        return []
    case_ids = [r.case_id for r in found]
    totals = {r.case_id: r for r in conn.execute(
        select(m.case_id, func.count().label("n"), func.sum(m.attachments).label("att"),
               func.sum(m.dangerous_attachments).label("danger"))
        .where(m.case_id.in_(case_ids)).group_by(m.case_id)).all()}
    purges = retention_io.purges_of(conn, [r.id for r in found]) if may_read else {}
    names = _names(conn, org_id, {r.assignee_id for r in found if r.assignee_id})
    out = []
    for r in found:
        t = totals.get(r.case_id)
        hidden = None if may_read else "no_content_read"
        if may_read and r.id in purges:
            hidden = "content_deleted"
        out.append(QueueRow(
            kind="case", id=r.case_id, conversation_id=r.conversation_id, key=r.id,
            correspondent_name=r.from_name or None, correspondent_address=r.from_address or r.envelope_from or None,
            subject=r.subject, snippet=snippet(r.text_body) if hidden is None else None, snippet_hidden=hidden,
            at=r.received_at, age_seconds=age_seconds(r.received_at, now), holder_id=r.assignee_id,
            holder=holder_label(r.assignee_id, names, principal_id), state=r.state, state_words=None,
            messages=int(t.n) if t else 1, attachments=bool(t and t.att), dangerous=bool(t and t.danger),
            automated=r.automated))
    return out


def _send_rows(conn: Connection, *, mailbox_id: str, principal_id: str, now: datetime, limit: int,
               cursor: str | None, relations: tuple[bool, bool, bool]) -> list[QueueRow]:
    s = send_manifests.c
    q = select(s.id, s.conversation_id, s.author_id, s.to_addresses, s.display_names, s.subject, s.sealed_at,
               s.state, s.state_reason, s.auto_submitted, s.attachments, s.mail_class).where(s.mailbox_id == mailbox_id)
    if cursor:
        q = q.where(s.id < cursor)
    found = conn.execute(q.order_by(s.id.desc()).limit(limit)).all()
    if not found:
        return []
    may_propose, may_decide, may_read = relations
    granted = {r.id for r in found if send_body_grant(SendRelations(
        is_author=r.author_id == principal_id, may_propose=may_propose, may_decide=may_decide,
        may_read_content=may_read, mail_class=r.mail_class)) is not None}
    purges = retention_io.purges_of(conn, granted)
    bodies = {b.source_id: b.body for b in conn.execute(
        select(search_documents.c.source_id, search_documents.c.body)
        .where(search_documents.c.source_id.in_(sorted(granted - set(purges))))).all()} if granted else {}
    out = []
    for r in found:
        hidden = None if r.id in granted else "no_content_read"
        if r.id in purges:
            hidden = "content_deleted"
        name, address = correspondent_of_send(list(r.to_addresses or []), r.display_names)
        out.append(QueueRow(
            kind="send", id=r.id, conversation_id=r.conversation_id, key=r.id, correspondent_name=name,
            correspondent_address=address, subject=r.subject,
            snippet=snippet(bodies.get(r.id, "")) if hidden is None else None, snippet_hidden=hidden,
            at=r.sealed_at, age_seconds=age_seconds(r.sealed_at, now), holder_id=None, holder=None,
            state=r.state, state_words=words_for(r.state, r.state_reason), messages=1,
            attachments=bool(r.attachments), dangerous=False, automated=r.auto_submitted))
    return out


def _names(conn: Connection, org_id: str, ids: set[str]) -> dict[str, str]:
    """Display names of people (their name, else their address) and Butlers among ``ids`` (up to two statements)."""
    out: dict[str, str] = {}
    people = sorted(i for i in ids if is_id(i, "usr"))
    if people:
        for u in conn.execute(select(users.c.id, users.c.name, users.c.email)
                              .where(users.c.org_id == org_id, users.c.id.in_(people))).all():
            out[u.id] = u.name or u.email
    bots = sorted(i for i in ids if is_id(i, "btl"))
    if bots:
        for b in conn.execute(select(butlers.c.id, butlers.c.name)
                              .where(butlers.c.org_id == org_id, butlers.c.id.in_(bots))).all():
            out[b.id] = b.name
    return out


def case_subjects(conn: Connection, *, org_id: str, principal_id: str, case_ids: list[str]) -> dict[str, str]:
    """``{case_id: subject}`` of the named cases the caller may see (the subject of each case's first message;
    cases of other mailboxes, unknown ids and subject-less cases are left out). Two statements."""
    visible = mailboxes_visible(conn, org_id, principal_id)
    wanted = sorted({c for c in case_ids if is_id(c, "cas")})
    if not wanted or not visible:
        return {}
    m = messages.c
    rows = conn.execute(select(m.case_id, m.subject).where(m.case_id.in_(wanted), m.mailbox_id.in_(sorted(visible)))
                        .order_by(m.id.desc())).all()
    return {r.case_id: r.subject for r in rows if r.subject}


BulkAction = Literal["claim", "close"]


@dataclass(frozen=True)
class BulkOutcome:
    """What one case of a bulk action became: done (``case`` is the case's API shape) or refused (``error``
    is the refusal's four parts: ``{code, what, why, fix}``)."""

    case_id: str
    ok: bool
    case: dict[str, Any] | None
    error: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        return dataclasses.asdict(self)


def bulk(node: Any, *, org_id: str, principal_id: str, action: BulkAction, case_ids: list[str]) -> list[BulkOutcome]:
    """Claim (for the caller) or close each of ``case_ids`` through ``mail.cases``, each case in its own
    transaction, in the order given (repeats once); one outcome per case.

    A case's refusal (``E_CASE_HELD``, ``E_NOT_YOUR_CASE``, ``E_CASE_CLOSED``, ``E_NO_SUCH_CASE``,
    ``E_ID_MALFORMED`` ...) is that case's outcome and leaves the others done. Raises
    ``E_QUEUE_BULK_TOO_MANY`` (422) over ``budgets.QUEUE_BULK_MAX`` cases and ``E_QUEUE_BULK_EMPTY`` (422)
    for none, before touching any.
    """
    wanted = list(dict.fromkeys(case_ids))
    if not wanted:
        raise MailnodeError(code="E_QUEUE_BULK_EMPTY", what=f"No case was named to {action}.",
                            why="A bulk action acts on the cases ticked.", fix="Tick at least one case.",
                            status=422, detail={"action": action})
    if len(wanted) > budgets.QUEUE_BULK_MAX:
        raise MailnodeError(code="E_QUEUE_BULK_TOO_MANY",
                            what=f"QUEUE_BULK_MAX is {budgets.QUEUE_BULK_MAX}; {len(wanted)} cases were named.",
                            why="The budget QUEUE_BULK_MAX bounds one bulk action (each case is a transaction).",
                            fix=f"Act on at most {budgets.QUEUE_BULK_MAX} cases at once.", status=422,
                            detail={"limit_name": "QUEUE_BULK_MAX", "limit": budgets.QUEUE_BULK_MAX,
                                    "observed": len(wanted)})
    act = cases_mod.claim if action == "claim" else cases_mod.close
    out = []
    for case_id in wanted:
        try:
            with node.begin() as conn:
                done = act(conn, org_id=org_id, principal_id=principal_id, at=node.clock.now(), case_id=case_id)
        except MailnodeError as exc:
            # Not swallowed: the refusal is this case's outcome, shown in its row.
            out.append(BulkOutcome(case_id, False, None, {"code": exc.code, "what": exc.what, "why": exc.why,
                                                           "fix": exc.fix}))
            continue
        out.append(BulkOutcome(case_id, True, done, None))
    return out


def search_mailbox(conn: Connection, *, org_id: str, principal_id: str, mailbox_id: str, q: str,
                   limit: int = budgets.QUEUE_PAGE_ROWS,
                   cursor: int | None = None) -> tuple[list[dict[str, Any]], int | None]:
    """``search.run.search`` over this mailbox (unless ``q`` names others with ``mailbox:``): the results
    (``GET /api/search``'s shape) and the next cursor. Raises the query's ``E_SEARCH_*`` (422) and
    ``E_NO_SUCH_MAILBOX`` (404)."""
    _readable_mailbox(conn, org_id, principal_id, mailbox_id)
    query = parse_query(q)
    if not query.mailboxes:
        query = dataclasses.replace(query, mailboxes=(mailbox_id,))
    return search_run.search(conn, org_id=org_id, principal_id=principal_id, query=query, limit=limit,
                             cursor=cursor)
