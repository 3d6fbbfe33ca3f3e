"""Running a search: the mailboxes the caller may read, one statement over the index, the page's shape.

Who sees what: a result comes only from a mailbox on which the caller holds ``mailbox.content.read``
(directly or through a team; a Butler or an application only through its own tuples), the relation the
message routes ask before showing a body: a search matches and shows body text. Another mailbox's
messages and sends are never matched, counted or named.

The statements: the readable mailboxes (1), the mailboxes ``mailbox:`` names, when it is used (1), the
page (1: the full-text match, the filters, newest first by ``at`` then ``source_id``, after the cursor),
and the live state of the page's sends (1, when there are any). The full-text match is FTS5 ``MATCH`` on
SQLite and ``@@`` over the weighted ``tsvector`` on PostgreSQL; both are given the same words
(``search.documents.words``), so both answer alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import Connection, Integer, and_, column, func, literal_column, or_, select, text

from mailnode import budgets
from mailnode.authz import mailboxes_visible
from mailnode.errors import MailnodeError
from mailnode.ids import is_id
from mailnode.mail.message_tables import cases
from mailnode.mail.tables import mailboxes
from mailnode.outbound.tables import send_manifests
from mailnode.search.documents import _WORD
from mailnode.search.query import CaseIs, Field, Phrase, SearchQuery
from mailnode.search.tables import search_documents

d = search_documents.c
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_CURSOR = re.compile(r"(\d{1,20})-([a-z]{2,4}_[0-9A-Z]{26})")

#: FTS5 column and tsvector weight per field (``search.index.WEIGHTS``).
_FTS_COLUMN = {Field.FROM: "sender", Field.TO: "recipients", Field.SUBJECT: "subject"}
_WEIGHT = {Field.FROM: "B", Field.TO: "C", Field.SUBJECT: "A"}


@dataclass(frozen=True)
class Cursor:
    """Where a page ends: the last result's ``at`` and ``source_id``."""

    at: datetime
    source_id: str

    def token(self) -> str:
        """``<microseconds since 1970 UTC>-<source id>``: what ``next_cursor`` carries."""
        return f"{(self.at - _EPOCH) // timedelta(microseconds=1)}-{self.source_id}"


def parse_cursor(token: str) -> Cursor | None:
    """The ``Cursor`` a ``next_cursor`` token names, or None when it is not one. Pure."""
    m = _CURSOR.fullmatch(token)
    if m is None or not (is_id(m.group(2), "msg") or is_id(m.group(2), "snd")):
        return None
    try:
        at = _EPOCH + timedelta(microseconds=int(m.group(1)))
    except OverflowError:
        return None
    return Cursor(at, m.group(2))


def fts5_query(phrases: Sequence[Phrase]) -> str:
    """The FTS5 ``MATCH`` text for ``phrases``: each a quoted phrase, a field's with its column filter,
    joined by AND (``"late invoice" AND sender : "alice"``). Words hold letters and digits only, so nothing
    needs escaping. Pure."""
    parts = []
    for p in phrases:
        quoted = '"' + " ".join(p.words) + '"'
        parts.append(quoted if p.field is Field.ANY else f"{_FTS_COLUMN[p.field]} : {quoted}")
    return " AND ".join(parts)


def tsquery(phrases: Sequence[Phrase]) -> str:
    """The ``to_tsquery('simple', ...)`` text for ``phrases``: adjacent words joined by ``<->``, a field's
    words carrying its weight (``'alice':B``), phrases joined by ``&``. Pure."""
    parts = []
    for p in phrases:
        weight = "" if p.field is Field.ANY else ":" + _WEIGHT[p.field]
        parts.append("(" + " <-> ".join(f"'{w}'{weight}" for w in p.words) + ")")
    return " & ".join(parts)


def snippet(body: str, phrases: Sequence[Phrase], size: int = budgets.SEARCH_SNIPPET_CHARS) -> str:
    """About ``size`` characters of ``body`` around the first word any phrase asks for (its start when none
    occurs there: the match was in the subject or an address), white space collapsed, ``…`` where cut. Pure."""
    wanted = {w for p in phrases for w in p.words}
    start = 0
    if wanted:
        for m in _WORD.finditer(body):
            if m.group(0).lower() in wanted:
                start = max(0, m.start() - size // 4)
                break
    piece = " ".join(body[start:start + size].split())
    if start > 0:
        piece = "…" + piece
    if start + size < len(body):
        piece += "…"
    return piece


def _unknown_mailbox(value: str) -> MailnodeError:
    return MailnodeError(code="E_SEARCH_MAILBOX_UNKNOWN", what=f"No mailbox you may read is {value[:100]!r}.",
                         why="mailbox: takes the id or the name of a mailbox whose content you may read.",
                         fix="Use an id or a name GET /api/mailboxes lists.", status=422,
                         detail={"token": f"mailbox:{value[:100]}"})


def _mailboxes(conn: Connection, org_id: str, readable: set[str], wanted: Sequence[str]) -> set[str]:
    """The readable mailboxes ``mailbox:`` names (ids, or names case-insensitively); any of them matches."""
    names = [w for w in wanted if not is_id(w, "mbx")]
    by_name: dict[str, set[str]] = {}
    if names:
        rows = conn.execute(select(mailboxes.c.id, mailboxes.c.name).where(
            mailboxes.c.org_id == org_id, func.lower(mailboxes.c.name).in_([n.lower() for n in names]))).all()
        for r in rows:
            if r.id in readable:
                by_name.setdefault(str(r.name).lower(), set()).add(r.id)
    out: set[str] = set()
    for w in wanted:
        found = ({w} & readable) if is_id(w, "mbx") else by_name.get(w.lower(), set())
        if not found:
            raise _unknown_mailbox(w)
        out |= found
    return out


def search(conn: Connection, *, org_id: str, principal_id: str, query: SearchQuery, limit: int,
           cursor: Cursor | None = None) -> tuple[list[dict[str, Any]], Cursor | None]:
    """One page of results for ``query``, newest first, and the cursor of the next page (None when this one
    is not full). Each result: ``kind`` (message | send), ``id``, ``mailbox_id``, ``conversation_id``,
    ``case_id``, ``subject``, ``from``, ``to`` (list), ``snippet``, ``date`` (ISO 8601 UTC: received or
    sealed), ``attachments``, ``automated`` and, for a send, its ``state`` now (null for a message).
    Raises ``E_SEARCH_MAILBOX_UNKNOWN`` (422)."""
    readable = mailboxes_visible(conn, org_id, principal_id, ("mailbox.content.read",))
    scope = _mailboxes(conn, org_id, readable, query.mailboxes) if query.mailboxes else readable
    if not scope:
        return [], None
    q = select(search_documents).where(d.org_id == org_id, d.mailbox_id.in_(sorted(scope)))
    if query.phrases:
        if conn.dialect.name == "postgresql":
            q = q.where(d.vector.op("@@")(func.to_tsquery(literal_column("'simple'::regconfig"),
                                                          tsquery(query.phrases))))
        else:
            matched = text("SELECT rowid FROM search_fts WHERE search_fts MATCH :fts").bindparams(
                fts=fts5_query(query.phrases)).columns(column("rowid", Integer))
            q = q.where(d.id.in_(matched))
    if query.case_is:
        c = cases.c
        conditions = {CaseIs.OPEN: c.state == "open", CaseIs.CLOSED: c.state == "closed",
                      CaseIs.UNASSIGNED: c.assignee_id.is_(None), CaseIs.MINE: c.assignee_id == principal_id}
        q = q.where(select(c.id).where(c.id == d.case_id, *(conditions[v] for v in sorted(query.case_is)))
                    .exists())
    if query.states:
        m = send_manifests.c
        q = q.where(select(m.id).where(m.id == d.source_id, m.state.in_(sorted(s.value for s in query.states)))
                    .exists())
    if query.automated:
        q = q.where(d.automated.is_(True))
    if query.has_attachment:
        q = q.where(d.attachments > 0)
    if query.before is not None:
        q = q.where(d.at < query.before)
    if query.after is not None:
        q = q.where(d.at >= query.after)
    if cursor is not None:
        q = q.where(or_(d.at < cursor.at, and_(d.at == cursor.at, d.source_id < cursor.source_id)))
    rows = conn.execute(q.order_by(d.at.desc(), d.source_id.desc()).limit(limit)).all()
    send_ids = [r.source_id for r in rows if r.kind == "send"]
    states = {r.id: r.state for r in conn.execute(select(send_manifests.c.id, send_manifests.c.state)
                                                  .where(send_manifests.c.id.in_(send_ids))).all()} if send_ids else {}
    results = [{"kind": r.kind, "id": r.source_id, "mailbox_id": r.mailbox_id, "conversation_id": r.conversation_id,
                "case_id": r.case_id, "subject": r.subject, "from": r.sender,
                "to": [line for line in r.recipients.split("\n") if line],
                "snippet": snippet(r.body, query.phrases), "date": r.at.isoformat(), "attachments": r.attachments,
                "automated": bool(r.automated), "state": states.get(r.source_id)} for r in rows]
    nxt = Cursor(rows[-1].at, rows[-1].source_id) if len(rows) == limit and rows else None
    return results, nxt
