"""Users and teams of an organisation, and their membership (administrators act; audited)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select
from sqlalchemy.exc import IntegrityError

from mailnode import audit
from mailnode.authz import require_admin
from mailnode.errors import MailnodeError, conflict, invalid, not_found
from mailnode.ids import new_id, parse_id, prefix_of
from mailnode.schema.directory import team_members, teams, users


def normalise_email(value: str) -> str:
    """A person's address, trimmed, with the domain lower-cased; ``E_ADDRESS_MALFORMED`` (422) if absurd."""
    from mailnode.directory.domains import normalise_domain

    text = (value or "").strip()
    local, at, domain = text.rpartition("@")
    if not at or not local or any(c in text for c in "\r\n \t<>"):
        raise invalid("E_ADDRESS_MALFORMED", f"{value!r} is not an email address.",
                      "An address is local-part@domain with no spaces or angle brackets.",
                      "Give an address like alex@example.org.", address=value)
    return f"{local}@{normalise_domain(domain)}"


def user_json(r: Any) -> dict[str, Any]:
    """The API shape of a user row."""
    return {"id": r.id, "email": r.email, "name": r.name, "created_at": r.created_at.isoformat()}


def create_user(conn: Connection, *, org_id: str, actor_id: str | None, at: datetime, email: str,
                name: str = "") -> dict[str, Any]:
    """Create a user (administrators; ``actor_id`` None only for ``init``). ``E_USER_EXISTS`` (409)."""
    if actor_id is not None:
        require_admin(conn, org_id, actor_id, "create a user")
    addr = normalise_email(email)
    taken = conn.execute(
        select(users.c.id).where(users.c.org_id == org_id, func.lower(users.c.email) == addr.lower())
    ).first()
    if taken is not None:
        raise conflict("E_USER_EXISTS", f"A user with the address {addr} already exists.",
                       "Addresses identify people within an organisation.", "List users with GET /api/users.",
                       email=addr, user_id=taken.id)
    uid = new_id("usr")
    conn.execute(users.insert().values(id=uid, org_id=org_id, email=addr, name=name or "", created_at=at))
    audit.append(conn, org_id=org_id, at=at, action="user.created", actor_id=actor_id, subject=uid,
                 detail={"email": addr}, actor_kind="installer" if actor_id is None else None)
    row = conn.execute(select(users).where(users.c.id == uid)).one()
    return user_json(row)


def require_person(actor_id: str, act: str) -> None:
    """Refuse a principal that is not a person (``app_``, ``btl_``): ``E_NOT_A_PERSON`` (403).

    The directory names people and their addresses; an application or a Butler sends mail, it has no
    business reading who works here (and a leaked application token must not be an address book).
    """
    if prefix_of(actor_id) != "usr":
        raise MailnodeError(code="E_NOT_A_PERSON", what=f"Only a person may {act}.",
                            why=f"{actor_id} is not a person; the directory is for the organisation's people.",
                            fix="Call it with a person's token (POST /api/tokens as that person).",
                            status=403, detail={"act": act, "principal_id": actor_id})


def list_users(conn: Connection, *, org_id: str, actor_id: str, limit: int,
               cursor: str | None) -> list[dict[str, Any]]:
    """Users in id order after ``cursor``: any person of the organisation may list people; any other
    principal is refused ``E_NOT_A_PERSON`` (403)."""
    require_person(actor_id, "list the organisation's people")
    q = select(users).where(users.c.org_id == org_id)
    if cursor:
        q = q.where(users.c.id > cursor)
    return [user_json(r) for r in conn.execute(q.order_by(users.c.id).limit(limit)).all()]


def get_user(conn: Connection, org_id: str, user_id: str) -> Any:
    """The user row, or ``E_NO_SUCH_USER`` (404)."""
    parse_id(user_id, "usr", "user_id")
    row = conn.execute(select(users).where(users.c.id == user_id, users.c.org_id == org_id)).first()
    if row is None:
        raise not_found("E_NO_SUCH_USER", f"No user {user_id}.", fix="List users with GET /api/users.",
                        user_id=user_id)
    return row


def team_json(conn: Connection, r: Any) -> dict[str, Any]:
    """The API shape of a team row, with its member ids."""
    members = conn.execute(
        select(team_members.c.user_id).where(team_members.c.team_id == r.id).order_by(team_members.c.user_id)
    ).all()
    return {"id": r.id, "name": r.name, "members": [m.user_id for m in members],
            "created_at": r.created_at.isoformat()}


def create_team(conn: Connection, *, org_id: str, actor_id: str, at: datetime, name: str) -> dict[str, Any]:
    """Create a team (administrators). ``E_TEAM_NAME_TAKEN`` (409), ``E_TEAM_NEEDS_A_NAME`` (422)."""
    require_admin(conn, org_id, actor_id, "create a team")
    clean = (name or "").strip()
    if not clean:
        raise invalid("E_TEAM_NEEDS_A_NAME", "A team needs a name.", "The name was empty.",
                      "Send {\"name\": \"support\"}.")
    if conn.execute(select(teams.c.id).where(teams.c.org_id == org_id, teams.c.name == clean)).first():
        raise conflict("E_TEAM_NAME_TAKEN", f"A team named {clean!r} exists.", "Team names are unique.",
                       "Choose another name, or list teams with GET /api/teams.", name=clean)
    tid = new_id("tm")
    conn.execute(teams.insert().values(id=tid, org_id=org_id, name=clean, created_by=actor_id, created_at=at))
    audit.append(conn, org_id=org_id, at=at, action="team.created", actor_id=actor_id, subject=tid,
                 detail={"name": clean})
    return team_json(conn, conn.execute(select(teams).where(teams.c.id == tid)).one())


def get_team(conn: Connection, org_id: str, team_id: str) -> Any:
    """The team row, or ``E_NO_SUCH_TEAM`` (404)."""
    parse_id(team_id, "tm", "team_id")
    row = conn.execute(select(teams).where(teams.c.id == team_id, teams.c.org_id == org_id)).first()
    if row is None:
        raise not_found("E_NO_SUCH_TEAM", f"No team {team_id}.", fix="List teams with GET /api/teams.",
                        team_id=team_id)
    return row


def list_teams(conn: Connection, *, org_id: str, actor_id: str, limit: int,
               cursor: str | None) -> list[dict[str, Any]]:
    """Teams in id order after ``cursor``, with members; people only (``E_NOT_A_PERSON``, 403)."""
    require_person(actor_id, "list the organisation's teams")
    q = select(teams).where(teams.c.org_id == org_id)
    if cursor:
        q = q.where(teams.c.id > cursor)
    return [team_json(conn, r) for r in conn.execute(q.order_by(teams.c.id).limit(limit)).all()]


def add_member(conn: Connection, *, org_id: str, actor_id: str, at: datetime, team_id: str,
               user_id: str) -> dict[str, Any]:
    """Add a person to a team (administrators; idempotent). Only users can be members (``E_NOT_A_PERSON``)."""
    require_admin(conn, org_id, actor_id, "change a team")
    team = get_team(conn, org_id, team_id)
    if not str(user_id).startswith("usr_"):
        raise invalid("E_NOT_A_PERSON", f"{user_id!r} is not a person.", "Only users can be team members.",
                      "Name a user id from GET /api/users.", user_id=user_id)
    get_user(conn, org_id, user_id)
    try:
        with conn.begin_nested():
            conn.execute(team_members.insert().values(id=new_id("tmm"), org_id=org_id, team_id=team.id,
                                                      user_id=user_id, created_at=at))
    except IntegrityError:
        return team_json(conn, team)
    audit.append(conn, org_id=org_id, at=at, action="team.member_added", actor_id=actor_id, subject=team.id,
                 detail={"user_id": user_id})
    return team_json(conn, team)


def remove_member(conn: Connection, *, org_id: str, actor_id: str, at: datetime, team_id: str,
                  user_id: str) -> dict[str, Any]:
    """Remove a person from a team (administrators). ``E_NOT_A_MEMBER`` (404) when they were not in it."""
    require_admin(conn, org_id, actor_id, "change a team")
    team = get_team(conn, org_id, team_id)
    result = conn.execute(
        delete(team_members).where(team_members.c.team_id == team.id, team_members.c.user_id == user_id)
    )
    if result.rowcount == 0:
        raise not_found("E_NOT_A_MEMBER", f"{user_id} is not a member of team {team_id}.",
                        fix="List members with GET /api/teams.", team_id=team_id, user_id=user_id)
    audit.append(conn, org_id=org_id, at=at, action="team.member_removed", actor_id=actor_id, subject=team.id,
                 detail={"user_id": user_id})
    return team_json(conn, team)


def resolve_user(conn: Connection, org_id: str, user: str | None) -> Any:
    """The user row named by id or address (case-insensitive), or with ``user`` None the first administrator
    (the oldest user holding ``org.admin`` directly): how the local CLI picks who acts.

    Raises ``E_NO_SUCH_USER`` (404).
    """
    from mailnode.schema.directory import relationship_tuples

    q = select(users).where(users.c.org_id == org_id)
    if user:
        q = q.where((users.c.id == user) | (func.lower(users.c.email) == user.lower()))
    else:
        q = (q.join(relationship_tuples, relationship_tuples.c.subject_id == users.c.id)
             .where(relationship_tuples.c.org_id == org_id, relationship_tuples.c.relation == "org.admin")
             .order_by(users.c.id))
    row = conn.execute(q.limit(1)).first()
    if row is None:
        raise not_found("E_NO_SUCH_USER", f"No user {user!r}." if user else "No administrator to act as.",
                        fix="List users with GET /api/users, or name one with --user.", user=user)
    return row
