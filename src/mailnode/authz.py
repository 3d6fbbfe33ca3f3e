"""Relationship tuples ``(subject_id, relation, object_type, object_id)`` and the checks over them.

Relations (spec/outbound.md §8.2): ``org.admin`` on the organisation; ``mailbox.metadata.read``,
``mailbox.content.read``, ``send.propose`` and ``approval.decide`` on a mailbox. A user holds what they
hold directly or through a team; a Butler (``btl_``) or an application (``app_``) holds only its own
tuples, never team-expanded. Every check is live: one statement, re-read on every request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, delete, or_, select

from mailnode import audit
from mailnode.errors import MailnodeError, invalid, no_such_mailbox, not_an_administrator, not_found
from mailnode.ids import new_id, parse_id, prefix_of
from mailnode.schema.butler import butlers
from mailnode.schema.directory import organisations, relationship_tuples, team_members, teams, users
from mailnode.schema.directory_contacts import applications
from mailnode.schema.mail import mailboxes

ObjectType = Literal["organisation", "mailbox"]

#: Every grantable relation and the kind of object it is held on. Closed: anything else is refused.
RELATIONS: dict[str, ObjectType] = {
    "org.admin": "organisation",
    "mailbox.metadata.read": "mailbox",
    "mailbox.content.read": "mailbox",
    "send.propose": "mailbox",
    "approval.decide": "mailbox",
}

#: The relations a person needs to see a mailbox's metadata (content read implies metadata read).
METADATA_READERS = ("mailbox.metadata.read", "mailbox.content.read")
#: Any relation on a mailbox makes its existence visible to the holder.
MAILBOX_RELATIONS = tuple(r for r, t in RELATIONS.items() if t == "mailbox")


def _subject_clause(principal_id: str, org_id: str) -> Any:
    """The subjects a principal acts as: itself, and for a user its teams (one sub-select)."""
    if prefix_of(principal_id) == "usr":
        team_ids = select(team_members.c.team_id).where(
            team_members.c.org_id == org_id, team_members.c.user_id == principal_id
        )
        return or_(relationship_tuples.c.subject_id == principal_id, relationship_tuples.c.subject_id.in_(team_ids))
    return relationship_tuples.c.subject_id == principal_id


def holds(conn: Connection, org_id: str, principal_id: str, relations: tuple[str, ...] | str,
          object_type: ObjectType, object_id: str) -> bool:
    """True when the principal holds any of ``relations`` on the object (one statement)."""
    rels = (relations,) if isinstance(relations, str) else relations
    row = conn.execute(
        select(relationship_tuples.c.id)
        .where(
            relationship_tuples.c.org_id == org_id,
            relationship_tuples.c.object_type == object_type,
            relationship_tuples.c.object_id == object_id,
            relationship_tuples.c.relation.in_(rels),
            _subject_clause(principal_id, org_id),
        )
        .limit(1)
    ).first()
    return row is not None


def is_admin(conn: Connection, org_id: str, principal_id: str) -> bool:
    """The one definition of "is an administrator": ``org.admin``, directly or through a team."""
    return holds(conn, org_id, principal_id, "org.admin", "organisation", org_id)


def require_admin(conn: Connection, org_id: str, principal_id: str, act: str) -> None:
    """Raise ``E_NOT_AN_ADMINISTRATOR`` (403) unless the principal is an administrator."""
    if not is_admin(conn, org_id, principal_id):
        raise not_an_administrator(act)


def mailboxes_visible(conn: Connection, org_id: str, principal_id: str,
                      relations: tuple[str, ...] = MAILBOX_RELATIONS) -> set[str]:
    """Ids of the mailboxes on which the principal holds any of ``relations`` (one statement)."""
    rows = conn.execute(
        select(relationship_tuples.c.object_id).where(
            relationship_tuples.c.org_id == org_id,
            relationship_tuples.c.object_type == "mailbox",
            relationship_tuples.c.relation.in_(relations),
            _subject_clause(principal_id, org_id),
        )
    ).all()
    return {r.object_id for r in rows}


def sees_breakers(conn: Connection, org_id: str, principal_id: str) -> bool:
    """True for an administrator and for whoever holds any relation on some mailbox: the organisation's rate
    breakers gate every mailbox's sends, so each mailbox's people may read them (``GET /api/breakers``)."""
    return is_admin(conn, org_id, principal_id) or bool(mailboxes_visible(conn, org_id, principal_id))


def require_breakers_visible(conn: Connection, org_id: str, principal_id: str) -> None:
    """Raise ``E_BREAKERS_NOT_VISIBLE`` (403) unless ``sees_breakers``."""
    if not sees_breakers(conn, org_id, principal_id):
        raise MailnodeError(
            code="E_BREAKERS_NOT_VISIBLE",
            what="Only administrators and people with a relation on a mailbox may read the rate breakers.",
            why="The breakers read the organisation's sending volume and bounce and complaint rates; they gate "
                "every mailbox's mail, so they are shown to that mail's people, not to every token holder.",
            fix="Ask an administrator to read them, or to grant you a relation on a mailbox (POST /api/access).",
            status=403,
        )


@dataclass(frozen=True)
class Grant:
    """One tuple as the API shows it."""

    id: str
    subject_id: str
    relation: str
    object_type: str
    object_id: str
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        return {
            "id": self.id, "subject_id": self.subject_id, "relation": self.relation,
            "object_type": self.object_type, "object_id": self.object_id,
            "created_at": self.created_at.isoformat(),
        }


def _check_subject(conn: Connection, org_id: str, subject_id: str) -> None:
    table = {"usr": users, "tm": teams, "btl": butlers, "app": applications}.get(prefix_of(subject_id) or "")
    if table is None:
        raise invalid(
            "E_SUBJECT_MALFORMED",
            f"{subject_id!r} cannot hold a relation.",
            "A relation is held by a user (usr_), a team (tm_), a Butler (btl_) or an application (app_).",
            "Name the user or team id from GET /api/users or GET /api/teams.",
            subject_id=subject_id,
        )
    found = conn.execute(select(table.c.id).where(table.c.id == subject_id, table.c.org_id == org_id)).first()
    if found is None:
        raise not_found("E_NO_SUCH_SUBJECT",
                        f"No user, team, Butler or application {subject_id} in this organisation.",
                        fix="List them with GET /api/users, GET /api/teams, GET /api/butlers or GET /api/apps.",
                        subject_id=subject_id)


def grant(conn: Connection, *, org_id: str, actor_id: str | None, at: datetime, subject_id: str, relation: str,
          object_id: str) -> Grant:
    """Grant ``relation`` on ``object_id`` to ``subject_id`` (administrators only; idempotent; audited once).

    ``actor_id`` None is the installer at the data directory (``mailnode access grant``), audited with
    ``actor_kind = installer``. Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_RELATION_UNKNOWN`` (422),
    ``E_ID_MALFORMED`` (422), ``E_NO_SUCH_SUBJECT`` / ``E_NO_SUCH_MAILBOX`` (404).
    """
    if actor_id is not None:
        require_admin(conn, org_id, actor_id, "grant access")
    object_type = RELATIONS.get(relation)
    if object_type is None:
        raise invalid(
            "E_RELATION_UNKNOWN",
            f"{relation!r} is not a relation mailnode knows.",
            "Relations are a closed list.",
            "Use one of: " + ", ".join(RELATIONS) + ".",
            relation=relation,
        )
    _check_subject(conn, org_id, subject_id)
    if object_type == "organisation":
        parse_id(object_id, "org", "object_id")
        if object_id != org_id:
            raise not_found("E_NO_SUCH_ORGANISATION", f"No organisation {object_id}.", object_id=object_id)
    else:
        parse_id(object_id, "mbx", "object_id")
        if conn.execute(select(mailboxes.c.id).where(mailboxes.c.id == object_id,
                                                     mailboxes.c.org_id == org_id)).first() is None:
            raise no_such_mailbox(object_id)
    existing = conn.execute(
        select(relationship_tuples).where(
            relationship_tuples.c.org_id == org_id,
            relationship_tuples.c.subject_id == subject_id,
            relationship_tuples.c.relation == relation,
            relationship_tuples.c.object_type == object_type,
            relationship_tuples.c.object_id == object_id,
        )
    ).first()
    if existing is not None:
        return _grant_of(existing)
    tid = new_id("rt")
    conn.execute(
        relationship_tuples.insert().values(
            id=tid, org_id=org_id, subject_id=subject_id, relation=relation, object_type=object_type,
            object_id=object_id, created_by=actor_id, created_at=at,
        )
    )
    audit.append(conn, org_id=org_id, at=at, action="access.granted", actor_id=actor_id, subject=tid,
                 detail={"subject_id": subject_id, "relation": relation, "object_id": object_id},
                 actor_kind="installer" if actor_id is None else None)
    return Grant(tid, subject_id, relation, object_type, object_id, at)


def grant_unchecked(conn: Connection, *, org_id: str, at: datetime, subject_id: str, relation: str,
                    object_id: str, actor_id: str | None) -> str:
    """Insert a tuple without the administrator check (for ``mailnode init`` only); returns its id."""
    tid = new_id("rt")
    conn.execute(
        relationship_tuples.insert().values(
            id=tid, org_id=org_id, subject_id=subject_id, relation=relation,
            object_type=RELATIONS[relation], object_id=object_id, created_by=actor_id, created_at=at,
        )
    )
    return tid


def revoke(conn: Connection, *, org_id: str, actor_id: str, at: datetime, grant_id: str) -> None:
    """Delete one tuple (administrators only; audited). Raises ``E_NO_SUCH_GRANT`` (404)."""
    require_admin(conn, org_id, actor_id, "revoke access")
    parse_id(grant_id, "rt", "grant_id")
    row = conn.execute(
        select(relationship_tuples).where(relationship_tuples.c.id == grant_id, relationship_tuples.c.org_id == org_id)
    ).first()
    if row is None:
        raise not_found("E_NO_SUCH_GRANT", f"No grant {grant_id}.", fix="List grants with GET /api/access.",
                        grant_id=grant_id)
    conn.execute(delete(relationship_tuples).where(relationship_tuples.c.id == grant_id))
    audit.append(conn, org_id=org_id, at=at, action="access.revoked", actor_id=actor_id, subject=grant_id,
                 detail={"subject_id": row.subject_id, "relation": row.relation, "object_id": row.object_id})


def list_grants(conn: Connection, *, org_id: str, actor_id: str, limit: int, cursor: str | None,
                subject_id: str | None = None, object_id: str | None = None) -> list[Grant]:
    """Grants in id order after ``cursor`` (administrators only)."""
    require_admin(conn, org_id, actor_id, "list access grants")
    q = select(relationship_tuples).where(relationship_tuples.c.org_id == org_id)
    if subject_id:
        q = q.where(relationship_tuples.c.subject_id == subject_id)
    if object_id:
        q = q.where(relationship_tuples.c.object_id == object_id)
    if cursor:
        q = q.where(relationship_tuples.c.id > cursor)
    return [_grant_of(r) for r in conn.execute(q.order_by(relationship_tuples.c.id).limit(limit)).all()]


def _grant_of(r: Any) -> Grant:
    return Grant(r.id, r.subject_id, r.relation, r.object_type, r.object_id, r.created_at)


def organisation_exists(conn: Connection, org_id: str) -> bool:
    """True when the organisation exists."""
    return conn.execute(select(organisations.c.id).where(organisations.c.id == org_id)).first() is not None

