"""The collision warning (``mail.presence.collision``) as a table, and presence over a real database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from mailnode import budgets
from mailnode.mail import presence
from mailnode.mail.presence import CollisionKind, collision
from tests.outbound.db.conftest import deliver, inbound

NAMES = {"usr_me": "Me", "usr_dana": "Dana", "usr_lee": "Lee"}


@pytest.mark.parametrize(("state", "holder", "writers", "kind", "locks", "words"), [
    (None, None, (), CollisionKind.NONE, False, ""),
    ("open", None, (), CollisionKind.NONE, False, ""),
    ("open", "usr_me", ("usr_me",), CollisionKind.NONE, False, ""),
    ("open", "usr_dana", (), CollisionKind.HELD_BY_OTHER, True, "Dana holds this case. Take it over before you write."),
    ("open", "usr_dana", ("usr_me", "usr_dana"), CollisionKind.HELD_AND_WRITING, True,
     "Dana holds this case and Dana is writing in it. Take it over before you write."),
    ("open", None, ("usr_lee",), CollisionKind.OTHERS_WRITING, False,
     "Lee is writing in this conversation right now."),
    ("open", "usr_me", ("usr_lee", "usr_dana"), CollisionKind.OTHERS_WRITING, False,
     "Dana and Lee are writing in this conversation right now."),
    (None, None, ("usr_x",), CollisionKind.OTHERS_WRITING, False, "usr_x is writing in this conversation right now."),
    # Fails closed: a case state never seen locks the composer.
    ("limbo", None, (), CollisionKind.HELD_BY_OTHER, True,
     "The case is in a state mailnode does not know ('limbo'); do not write until someone looks at it."),
])
def test_what_the_page_warns_before_you_type(state: str | None, holder: str | None, writers: tuple[str, ...],
                                             kind: CollisionKind, locks: bool, words: str) -> None:
    c = collision(me="usr_me", case_state=state, holder_id=holder, names=NAMES, writers=writers)
    assert (c.kind, c.locks_composer, c.words) == (kind, locks, words)


def _conversation(listener: Any, node: Any) -> tuple[str, str]:
    from sqlalchemy import select

    from mailnode.schema.mail_messages import cases

    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    with node.read() as conn:
        row = conn.execute(select(cases.c.id, cases.c.conversation_id)).one()
    return str(row.conversation_id), str(row.id)


def _person(node: Any, installed: Any, email: str, name: str, relation: str | None) -> str:
    from mailnode.authz import grant_unchecked
    from mailnode.directory.people import create_user

    with node.begin() as conn:
        uid = create_user(conn, org_id=installed.org_id, actor_id=None, at=node.clock.now(), email=email,
                          name=name)["id"]
        if relation:
            grant_unchecked(conn, org_id=installed.org_id, at=node.clock.now(), subject_id=uid, relation=relation,
                            object_id=installed.mailbox_id, actor_id=None)
    return str(uid)


def test_a_writer_is_seen_by_a_colleague_until_the_presence_expires(node: Any, installed: Any, listener: Any,
                                                                    clock: Any) -> None:
    conv, _ = _conversation(listener, node)
    dana = _person(node, installed, "dana@example.test", "Dana", "send.propose")
    with node.begin() as conn:
        presence.touch(conn, org_id=installed.org_id, principal_id=dana, conversation_id=conv, at=clock.now())
    with node.read() as conn:
        seen = presence.read_collision(conn, org_id=installed.org_id, principal_id=installed.user_id,
                                       conversation_id=conv, at=clock.now())
    assert (seen.kind, seen.words) == (CollisionKind.OTHERS_WRITING, "Dana is writing in this conversation right now.")
    later = clock.now() + timedelta(seconds=budgets.COMPOSER_PRESENCE_TTL_SECONDS)
    with node.read() as conn:
        gone = presence.read_collision(conn, org_id=installed.org_id, principal_id=installed.user_id,
                                       conversation_id=conv, at=later)
    assert gone.kind is CollisionKind.NONE
    with node.begin() as conn:
        presence.leave(conn, org_id=installed.org_id, principal_id=dana, conversation_id=conv)
        after = presence.read_collision(conn, org_id=installed.org_id, principal_id=installed.user_id,
                                        conversation_id=conv, at=clock.now())
    assert after.kind is CollisionKind.NONE


def test_a_claim_by_someone_else_locks_the_composer(node: Any, installed: Any, listener: Any, clock: Any) -> None:
    from mailnode.mail import cases

    conv, case_id = _conversation(listener, node)
    dana = _person(node, installed, "dana@example.test", "Dana", "send.propose")
    with node.begin() as conn:
        cases.claim(conn, org_id=installed.org_id, principal_id=dana, at=clock.now(), case_id=case_id)
        seen = presence.read_collision(conn, org_id=installed.org_id, principal_id=installed.user_id,
                                       conversation_id=conv, at=clock.now())
    assert (seen.kind, seen.locks_composer, seen.holder) == (CollisionKind.HELD_BY_OTHER, True, "Dana")


def test_someone_who_cannot_see_the_conversation_neither_records_nor_reads_presence(
        node: Any, installed: Any, listener: Any, clock: Any) -> None:
    from mailnode.errors import MailnodeError

    conv, _ = _conversation(listener, node)
    stranger = _person(node, installed, "stranger@example.test", "Stranger", None)
    for act in (lambda conn: presence.touch(conn, org_id=installed.org_id, principal_id=stranger,
                                            conversation_id=conv, at=clock.now()),
                lambda conn: presence.read_collision(conn, org_id=installed.org_id, principal_id=stranger,
                                                     conversation_id=conv, at=clock.now())):
        with pytest.raises(MailnodeError) as got, node.begin() as conn:
            act(conn)
        assert got.value.code == "E_NO_SUCH_CONVERSATION"
