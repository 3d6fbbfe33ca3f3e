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

Newest first means the order in which the node indexed the rows (``search_documents.id``): a message is
indexed when it is materialised and a send when it is sealed, so this is the order of ``received_at`` and
``sealed_at`` except for a message materialised late (a quarantined receipt re-driven), which comes first
as the newest arrival. That order lets FTS5 stream matches (``bench/search.py``: a word in 40% of 100,000
messages would otherwise sort 40,000 rows per page); the cursor is the last row's id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Integer, bindparam, column, func, literal_column, select, table

from mailnode import budgets
from mailnode.authz import mailboxes_visible
from mailnode.errors import MailnodeError
from mailnode.ids import is_id
from mailnode.schema.mail import mailboxes
from mailnode.schema.mail_messages import cases
from mailnode.schema.outbound import send_manifests
from mailnode.schema.search import search_documents
from mailnode.search.documents import WORD
from mailnode.search.query import CaseIs, Field, Phrase, SearchQuery

d = search_documents.c
_CURSOR = re.compile(r"[0-9]{1,19}")
#: The largest row id either database stores (a signed 64-bit integer).
_CURSOR_MAX = 2**63 - 1
#: SQLite's full-text table, for the join that lets FTS5 stream matches newest first (``search.tables``).
_fts = table("search_fts", column("rowid", Integer), column("search_fts"))

#: FTS5 column and tsvector weight per field (``search.index.WEIGHTS``).
_FTS_COLUMN = {Field.FROM: "sender", Field.TO: "recipients", Field.SUBJECT: "subject"}
_WEIGHT = {Field.FROM: "B", Field.TO: "C", Field.SUBJECT: "A"}


def parse_cursor(token: str) -> int | None:
    """The index row a ``next_cursor`` token names (the last result's ``search_documents.id``), or None when
    the token is not one. Pure."""
    if not _CURSOR.fullmatch(token):
        return None
    value = int(token)
    return value if 0 < value <= _CURSOR_MAX else None


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
        for m in WORD.finditer(body):
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
    by_name: dict[str, set[str]] = {}
    if any(not is_id(w, "mbx") for w in wanted):
        # Names are compared here, case-folded, not in SQL: SQLite's lower() folds ASCII only.
        rows = conn.execute(select(mailboxes.c.id, mailboxes.c.name).where(
            mailboxes.c.org_id == org_id, mailboxes.c.id.in_(sorted(readable)))).all()
        for r in rows:
            by_name.setdefault(str(r.name).casefold(), set()).add(r.id)
    out: set[str] = set()
    for w in wanted:
        found = ({w} & readable) if is_id(w, "mbx") else by_name.get(w.casefold(), set())
        if not found:
            raise _unknown_mailbox(w)
        out |= found
    return out


def search(conn: Connection, *, org_id: str, principal_id: str, query: SearchQuery, limit: int,
           cursor: int | None = None) -> tuple[list[dict[str, Any]], int | None]:
    """One page of results for ``query``, newest first, and the cursor of the next page (None when this one
    is not full): the last result's index row id; the next page holds the rows indexed before it. Each result: ``kind``
    (message | send), ``id``, ``mailbox_id``, ``conversation_id``, ``case_id``, ``subject``, ``from``, ``to`` (list),
    ``snippet``, ``date`` (ISO 8601 UTC: received or sealed), ``attachments``, ``automated`` and, for a send, its
    ``state`` now (null for a message). Raises ``E_SEARCH_MAILBOX_UNKNOWN`` (422)."""
    readable = mailboxes_visible(conn, org_id, principal_id, ("mailbox.content.read",))
    scope = _mailboxes(conn, org_id, readable, query.mailboxes) if query.mailboxes else readable
    if not scope:
        return [], None
    # Newest first is the order of the index rows (``id``); on SQLite a full-text search is driven by FTS5
    # in rowid order, so a common word stops after one page instead of sorting every match.
    order: Any = d.id
    q = select(search_documents).where(d.org_id == org_id, d.mailbox_id.in_(sorted(scope)))
    if query.phrases and conn.dialect.name == "postgresql":
        q = q.where(d.vector.op("@@")(func.to_tsquery(literal_column("'simple'::regconfig"),
                                                      tsquery(query.phrases))))
    elif query.phrases:
        q = q.select_from(_fts.join(search_documents, d.id == _fts.c.rowid)).where(
            _fts.c.search_fts.op("MATCH")(bindparam("fts", fts5_query(query.phrases))))
        order = _fts.c.rowid
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
        q = q.where(order < cursor)
    rows = conn.execute(q.order_by(order.desc()).limit(limit)).all()
    send_ids = [r.source_id for r in rows if r.kind == "send"]
    states = {r.id: r.state for r in conn.execute(select(send_manifests.c.id, send_manifests.c.state)
                                                  .where(send_manifests.c.id.in_(send_ids))).all()} if send_ids else {}
    results = [{"kind": r.kind, "id": r.source_id, "mailbox_id": r.mailbox_id, "conversation_id": r.conversation_id,
                "case_id": r.case_id, "subject": r.subject, "from": r.sender,
                "to": [line for line in r.recipients.split("\n") if line],
                "snippet": snippet(r.body, query.phrases), "date": r.at.isoformat(), "attachments": r.attachments,
                "automated": bool(r.automated), "state": states.get(r.source_id)} for r in rows]
    nxt = int(rows[-1].id) if len(rows) == limit and rows else None
    return results, nxt
