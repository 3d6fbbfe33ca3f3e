"""Collision detection: who holds a conversation's case and who has a composer open on it, and what to warn.

Issue 16, "The conversation": the page says so *before you type* when someone else holds the case or is
writing in it. A composer records its presence (``touch``) on open and at every heartbeat
(``budgets.COMPOSER_PRESENCE_HEARTBEAT_SECONDS``); a presence is live for
``budgets.COMPOSER_PRESENCE_TTL_SECONDS`` after the last one, so a closed tab stops warning others by itself;
``leave`` ends it at once. ``collision`` decides the warning from plain facts (pure); ``read_collision``
reads those facts. Only people who may see the conversation (a case of it in a mailbox they see) record or
read presence; anyone else is ``E_NO_SUCH_CONVERSATION`` (404), as for an absent one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, and_, delete, select

from mailnode import budgets
from mailnode.authz import mailboxes_visible
from mailnode.ids import parse_id
from mailnode.mail.thread import no_such_conversation
from mailnode.schema.directory import users
from mailnode.schema.mail_messages import cases, composer_presence


class CollisionKind(StrEnum):
    """What the page warns about; ``NONE`` shows nothing."""

    NONE = "none"
    #: Someone else holds the open case: the composer is locked until the reader takes the case over.
    HELD_BY_OTHER = "held_by_other"
    #: Nobody else holds it, but someone else has a composer open on the conversation: warned, not locked.
    OTHERS_WRITING = "others_writing"
    #: Both of the above: locked, and the warning names the writers too.
    HELD_AND_WRITING = "held_and_writing"


@dataclass(frozen=True)
class Collision:
    """The warning the page shows above the composer.

    Attributes:
        kind: see ``CollisionKind``.
        locks_composer: True when someone else holds the case (typing over their work needs an explicit
            take-over first).
        words: the sentence shown, or "" for ``NONE``.
        holder: the holder's display name when someone else holds the case, else None.
        writers: the display names of the others writing, sorted.
    """

    kind: CollisionKind
    locks_composer: bool
    words: str
    holder: str | None
    writers: tuple[str, ...]


def _and(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def collision(*, me: str, case_state: str | None, holder_id: str | None, names: dict[str, str],
              writers: tuple[str, ...]) -> Collision:
    """Pure: the warning for ``me`` (a principal id) over the conversation's case and its live writers.

    ``case_state`` is the open case's state (``open``) or None when the conversation has no open case the
    reader sees; ``holder_id`` its assignee; ``writers`` the principal ids with a live presence (``me``
    among them is ignored); ``names`` maps ids to display names (an id without one shows as itself). A
    case state other than ``open`` or None is treated as held by someone unknown (fails closed: locked).
    """
    others = tuple(sorted({names.get(w, w) for w in writers if w != me}))
    if case_state is not None and case_state != "open":
        return Collision(CollisionKind.HELD_BY_OTHER, True,
                         f"The case is in a state mailnode does not know ({case_state!r}); do not write until "
                         "someone looks at it.", None, others)
    held = case_state == "open" and holder_id is not None and holder_id != me
    holder = names.get(holder_id, holder_id) if held and holder_id is not None else None
    if held and others:
        return Collision(CollisionKind.HELD_AND_WRITING, True,
                         f"{holder} holds this case and {_and(others)} {'is' if len(others) == 1 else 'are'} "
                         "writing in it. Take it over before you write.", holder, others)
    if held:
        return Collision(CollisionKind.HELD_BY_OTHER, True,
                         f"{holder} holds this case. Take it over before you write.", holder, others)
    if others:
        return Collision(CollisionKind.OTHERS_WRITING, False,
                         f"{_and(others)} {'is' if len(others) == 1 else 'are'} writing in this conversation "
                         "right now.", None, others)
    return Collision(CollisionKind.NONE, False, "", None, ())


def _visible_cases(conn: Connection, org_id: str, principal_id: str, conversation_id: str) -> list[Any]:
    parse_id(conversation_id, "cnv", "conversation_id")
    visible = mailboxes_visible(conn, org_id, principal_id)
    rows = conn.execute(select(cases).where(cases.c.conversation_id == conversation_id, cases.c.org_id == org_id,
                                            cases.c.mailbox_id.in_(sorted(visible)))
                        .order_by(cases.c.opened_at.desc(), cases.c.id.desc())).all()
    if not rows:
        raise no_such_conversation(conversation_id)
    return list(rows)


def touch(conn: Connection, *, org_id: str, principal_id: str, conversation_id: str, at: datetime) -> datetime:
    """Record that ``principal_id`` has a composer open on the conversation from ``at``; returns when it
    expires (``at`` + ``budgets.COMPOSER_PRESENCE_TTL_SECONDS``). ``E_NO_SUCH_CONVERSATION`` (404) when the
    caller sees no case of it."""
    _visible_cases(conn, org_id, principal_id, conversation_id)
    expires = at + timedelta(seconds=budgets.COMPOSER_PRESENCE_TTL_SECONDS)
    p = composer_presence.c
    # Delete then insert: one portable upsert on SQLite and PostgreSQL (the row is not history).
    conn.execute(delete(composer_presence).where(p.conversation_id == conversation_id, p.person_id == principal_id))
    conn.execute(composer_presence.insert().values(conversation_id=conversation_id, person_id=principal_id,
                                                   org_id=org_id, seen_at=at, expires_at=expires))
    return expires


def leave(conn: Connection, *, org_id: str, principal_id: str, conversation_id: str) -> None:
    """End ``principal_id``'s presence on the conversation (the composer closed or the message left)."""
    parse_id(conversation_id, "cnv", "conversation_id")
    p = composer_presence.c
    conn.execute(delete(composer_presence).where(p.conversation_id == conversation_id, p.person_id == principal_id,
                                                 p.org_id == org_id))


def read_collision(conn: Connection, *, org_id: str, principal_id: str, conversation_id: str,
                   at: datetime) -> Collision:
    """``collision`` for the caller over the conversation's newest visible case and its presences live at
    ``at`` (four statements). ``E_NO_SUCH_CONVERSATION`` (404) when the caller sees no case of it."""
    rows = _visible_cases(conn, org_id, principal_id, conversation_id)
    open_case = next((r for r in rows if r.state == "open"), None)
    p = composer_presence.c
    writers = tuple(str(r.person_id) for r in conn.execute(
        select(p.person_id).where(and_(p.conversation_id == conversation_id, p.org_id == org_id,
                                       p.expires_at > at))).all())
    holder_id = open_case.assignee_id if open_case is not None else None
    ids = sorted({*writers, *([holder_id] if holder_id else [])})
    names = {str(r.id): (r.name or r.email) for r in conn.execute(
        select(users.c.id, users.c.name, users.c.email).where(users.c.id.in_(ids), users.c.org_id == org_id)).all()}
    return collision(me=principal_id, case_state="open" if open_case is not None else None,
                     holder_id=holder_id, names=names, writers=writers)
