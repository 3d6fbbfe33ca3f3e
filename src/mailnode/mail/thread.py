"""A conversation as its people see it: the messages received, the node's own sends and the case notes, in order.

Issue 15, "Both sides of a conversation". ``read_thread`` fetches (a fixed number of statements: the
conversation, its messages, sends, notes and cases, the caller's relations on each mailbox involved, the
approvals of its sends, the retention purges) and decides per item what the caller sees:

- a message: listed with metadata read (``authz.METADATA_READERS``) on its mailbox; its text body with
  ``mailbox.content.read``, unless retention deleted it;
- a send: listed to anyone with a relation on its mailbox (as ``GET /api/sends``), with its state, its
  author (``author_kind``: person, Butler, application, or the node for its own notices) and what it waits on
  (``waits_on``); its body (text, HTML, attachment list) by ``send_body_grant``: whoever may release, approve
  or cancel it reads exactly what will leave;
- a note: listed to anyone with a relation on the case's mailbox (the case is listed to them too).

The order is by time (a message's ``received_at``, a send's ``sealed_at``, a note's ``created_at``), then
by the id's ULID part (minted in creation order), so two items at the same instant keep one order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, select

from mailnode.authz import METADATA_READERS, holds, mailboxes_visible
from mailnode.errors import not_found
from mailnode.ids import parse_id, prefix_of
from mailnode.node import Node
from mailnode.retention import io as retention_io
from mailnode.schema.governance import approvals
from mailnode.schema.mail_messages import case_notes, cases, conversations, messages
from mailnode.schema.outbound import send_manifests


class BodyGrant(StrEnum):
    """Why a caller may read a send's body (the first that holds, in this order)."""

    #: The caller sealed it.
    AUTHOR = "author"
    #: ``send.propose`` on the mailbox: they may release it (a Butler's send, a policy hold) or cancel it.
    RELEASE_OR_CANCEL = "release_or_cancel"
    #: ``approval.decide`` on the mailbox: they may be asked to approve it.
    APPROVE = "approve"
    #: ``mailbox.content.read``: they read the mailbox's mail, and a send is the mailbox's mail too.
    CONTENT_READ = "content_read"


#: Mail classes whose body the mailbox's people read (release, approve, content read): people's
#: correspondence. Application and node mail (``realtime``, ``deferrable``) carries sign-in and verification
#: codes and one-time links, sent from a mailbox only as its envelope: its body is its author's alone, as
#: search keeps it out of the index (``search.documents.BODY_INDEXED_CLASSES``; a test keeps the two equal).
#: Any other value, known or not, is private (fails closed).
BODY_SHARED_CLASSES = frozenset({"correspondence"})


@dataclass(frozen=True)
class SendRelations:
    """The caller's standing towards one send (facts, read by ``read_thread``), and the send's mail class."""

    is_author: bool
    may_propose: bool
    may_decide: bool
    may_read_content: bool
    mail_class: str


def send_body_grant(rel: SendRelations) -> BodyGrant | None:
    """Whether (and why) the caller reads a send's body: author, then release-or-cancel (``send.propose``),
    then approve (``approval.decide``), then content read; None when none holds (metadata only). A send
    whose class is not in ``BODY_SHARED_CLASSES`` (a mailed sign-in code, say) is read by its author only:
    a colleague who reads the mailbox must not read the code that signs in as someone else. Pure."""
    if rel.is_author:
        return BodyGrant.AUTHOR
    if rel.mail_class not in BODY_SHARED_CLASSES:
        return None
    if rel.may_propose:
        return BodyGrant.RELEASE_OR_CANCEL
    if rel.may_decide:
        return BodyGrant.APPROVE
    if rel.may_read_content:
        return BodyGrant.CONTENT_READ
    return None


#: ``author_kind`` by the author id's prefix; anything else is ``unknown`` (fails closed, shown as such).
AUTHOR_KINDS: dict[str, str] = {"usr": "person", "btl": "butler", "app": "application"}


def author_kind(author_id: str, auto_submitted: str | None) -> str:
    """``person``, ``butler``, ``application``, or ``node`` for the node's own mail (``auto-generated``). Pure."""
    if auto_submitted == "auto-generated":
        return "node"
    return AUTHOR_KINDS.get(prefix_of(author_id) or "", "unknown")


@dataclass(frozen=True)
class MailboxRelations:
    """The caller's relations on one mailbox, as ``read_thread`` needs them."""

    metadata_read: bool
    content_read: bool
    propose: bool
    decide: bool


@dataclass(frozen=True)
class Thread:
    """What ``read_thread`` read and decided; the route shapes it."""

    conversation: Any
    messages: list[Any]
    sends: list[tuple[Any, BodyGrant | None]]
    notes: list[Any]
    cases: list[Any]
    relations: dict[str, MailboxRelations]
    purges: dict[str, tuple[str, datetime]]
    approvals: dict[str, str]

    def order(self) -> list[tuple[str, Any]]:
        """``(kind, row)`` for every item, by time then id (see the module docstring)."""
        items: list[tuple[datetime, str, str, Any]] = []
        items += [(m.received_at, m.id, "message", m) for m in self.messages]
        items += [(s.sealed_at, s.id, "send", (s, g)) for s, g in self.sends]
        items += [(n.created_at, n.id, "note", n) for n in self.notes]
        # Ties (one instant, or a frozen clock) go by the ids' ULID part: minted in creation order.
        items.sort(key=lambda t: (t[0], t[1].partition("_")[2]))
        return [(kind, row) for _, _, kind, row in items]


def grant_for(conn: Connection, *, org_id: str, principal_id: str, row: Any) -> BodyGrant | None:
    """``send_body_grant`` for one send row as ``principal_id`` (three statements: its relations)."""
    rel = _relations(conn, org_id, principal_id, [row.mailbox_id])[row.mailbox_id]
    return send_body_grant(SendRelations(is_author=row.author_id == principal_id, may_propose=rel.propose,
                                         may_decide=rel.decide, may_read_content=rel.content_read,
                                         mail_class=row.mail_class))


def body_of(node: Node, row: Any) -> dict[str, str | None]:
    """A send's body as sealed: ``{"text", "html"}`` (html None for text only) from the evidence store.

    Raises ``E_CONTENT_DELETED`` (410) once retention deleted it and ``E_EVIDENCE_MISSING`` (500) when a blob
    is gone without a purge record (``retention.io.read_content``); callers that already know of a
    purge show ``content_deleted`` instead of calling this.
    """
    text = retention_io.read_content(node, source_id=row.id, digest=row.body_typed_sha256).decode("utf-8")
    html = (retention_io.read_content(node, source_id=row.id, digest=row.body_html_sha256).decode("utf-8")
            if row.body_html_sha256 else None)
    return {"text": text, "html": html}


def no_such_conversation(conversation_id: str) -> Exception:
    """The 404 for a conversation that is absent or shows the caller nothing."""
    return not_found("E_NO_SUCH_CONVERSATION", f"No conversation {conversation_id}.",
                     conversation_id=conversation_id)


def _relations(conn: Connection, org_id: str, principal_id: str, mailbox_ids: Iterable[str]
               ) -> dict[str, MailboxRelations]:
    out: dict[str, MailboxRelations] = {}
    for mbx in sorted(set(mailbox_ids)):
        out[mbx] = MailboxRelations(
            metadata_read=holds(conn, org_id, principal_id, METADATA_READERS, "mailbox", mbx),
            content_read=holds(conn, org_id, principal_id, "mailbox.content.read", "mailbox", mbx),
            propose=holds(conn, org_id, principal_id, "send.propose", "mailbox", mbx),
            decide=holds(conn, org_id, principal_id, "approval.decide", "mailbox", mbx))
    return out


def read_thread(conn: Connection, *, org_id: str, principal_id: str, conversation_id: str) -> Thread:
    """Read conversation ``conversation_id`` as ``principal_id`` sees it. ``E_NO_SUCH_CONVERSATION`` (404) when
    it is absent or holds nothing the caller may see; ``E_REQUEST_INVALID`` (422) for a malformed id."""
    parse_id(conversation_id, "cnv", "conversation_id")
    conv = conn.execute(select(conversations).where(conversations.c.id == conversation_id,
                                                    conversations.c.org_id == org_id)).first()
    if conv is None:
        raise no_such_conversation(conversation_id)
    visible = mailboxes_visible(conn, org_id, principal_id)
    msg_rows = [r for r in conn.execute(select(messages).where(messages.c.conversation_id == conversation_id)
                                        .order_by(messages.c.received_at, messages.c.id)).all()
                if r.mailbox_id in visible]
    send_rows = [r for r in conn.execute(select(send_manifests)
                                         .where(send_manifests.c.conversation_id == conversation_id,
                                                send_manifests.c.org_id == org_id)
                                         .order_by(send_manifests.c.sealed_at, send_manifests.c.id)).all()
                 if r.mailbox_id in visible]
    note_rows = [r for r in conn.execute(select(case_notes).where(case_notes.c.conversation_id == conversation_id)
                                         .order_by(case_notes.c.created_at, case_notes.c.id)).all()
                 if r.mailbox_id in visible]
    relations = _relations(conn, org_id, principal_id,
                           [r.mailbox_id for r in msg_rows] + [r.mailbox_id for r in send_rows])
    # ``send_body_grant`` over these relations is ``grant_for`` without reading them once per send.
    msg_rows = [r for r in msg_rows if relations[r.mailbox_id].metadata_read]
    if not (msg_rows or send_rows or note_rows):
        raise no_such_conversation(conversation_id)
    sends = []
    for r in send_rows:
        rel = relations[r.mailbox_id]
        sends.append((r, send_body_grant(SendRelations(is_author=r.author_id == principal_id,
                                                       may_propose=rel.propose, may_decide=rel.decide,
                                                       may_read_content=rel.content_read,
                                                       mail_class=r.mail_class))))
    case_rows = conn.execute(select(cases).where(cases.c.conversation_id == conversation_id,
                                                 cases.c.mailbox_id.in_(sorted(visible)))
                             .order_by(cases.c.opened_at, cases.c.id)).all()
    purges = retention_io.purges_of(conn, [r.id for r in msg_rows] + [r.id for r in send_rows])
    approval_ids = {}
    if send_rows:
        a = approvals.c
        approval_ids = {r.subject_id: r.id for r in conn.execute(
            select(a.id, a.subject_id).where(a.subject_kind == "send_manifest",
                                             a.subject_id.in_([r.id for r in send_rows]))).all()}
    return Thread(conv, msg_rows, sends, note_rows, list(case_rows), relations, purges, approval_ids)
