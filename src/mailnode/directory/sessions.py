"""Web sessions: a person's server-side, revocable session of the web inbox.

A session is started after the person proved who they are (an API token of theirs, or a one-time code
mailed to their verified contact address). The browser holds only a random secret in a cookie; the node
stores its SHA-256, so a copy of the table opens no session. ``resolve`` reads a session's facts in one
statement and ``decide`` (pure) says whether it is live: it ends on sign-out, after
``budgets.WEB_SESSION_IDLE_SECONDS`` without a request, ``budgets.WEB_SESSION_ABSOLUTE_SECONDS`` after
sign-in, and when the API token it was opened with (or the token that one was minted with) is revoked.
Sign-in and sign-out are audited.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from sqlalchemy import Connection, select, update

from mailnode import audit, budgets
from mailnode.directory.tokens import Principal
from mailnode.errors import not_found
from mailnode.ids import new_id
from mailnode.schema.directory import api_tokens, users, web_sessions


class SessionState(str, Enum):
    """Whether a session opens pages, and if not, why."""

    live = "live"
    unknown = "unknown"
    signed_out = "signed_out"
    idle = "idle"
    expired = "expired"
    token_revoked = "token_revoked"


@dataclass(frozen=True)
class SessionFacts:
    """What ``decide`` needs about one session row (times are aware UTC)."""

    created_at: datetime
    last_seen_at: datetime
    ended_at: datetime | None
    token_revoked_at: datetime | None


def decide(facts: SessionFacts | None, now: datetime) -> SessionState:
    """The state of a session at ``now`` (pure). ``None`` facts (no such secret) is ``unknown``."""
    if facts is None:
        return SessionState.unknown
    if facts.ended_at is not None:
        return SessionState.signed_out
    if facts.token_revoked_at is not None:
        return SessionState.token_revoked
    if now - facts.created_at >= timedelta(seconds=budgets.WEB_SESSION_ABSOLUTE_SECONDS):
        return SessionState.expired
    if now - facts.last_seen_at >= timedelta(seconds=budgets.WEB_SESSION_IDLE_SECONDS):
        return SessionState.idle
    return SessionState.live


@dataclass(frozen=True)
class Session:
    """A live session as a page sees it."""

    id: str
    principal: Principal
    csrf_token: str
    display_name: str
    last_seen_at: datetime


def digest(secret: str) -> str:
    """The SHA-256 hex digest stored for a cookie secret."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def start(conn: Connection, *, org_id: str, principal_id: str, method: str, token_id: str | None,
          at: datetime, client: str) -> tuple[str, str]:
    """Open a session for person ``principal_id`` signed in by ``method`` (``token`` or ``code``); audited as
    ``web.signed_in`` with the client address. Returns ``(session id, cookie secret)``; the secret is
    never stored and cannot be read back."""
    secret = secrets.token_urlsafe(budgets.WEB_SESSION_SECRET_BYTES)
    sid = new_id("wss")
    conn.execute(web_sessions.insert().values(
        id=sid, org_id=org_id, principal_id=principal_id, secret_sha256=digest(secret),
        csrf_token=secrets.token_urlsafe(budgets.WEB_SESSION_SECRET_BYTES), token_id=token_id, method=method,
        created_at=at, last_seen_at=at))
    audit.append(conn, org_id=org_id, at=at, action="web.signed_in", actor_id=principal_id, subject=sid,
                 detail={"method": method, "client": client})
    return sid, secret


def resolve(conn: Connection, secret: str | None, at: datetime) -> tuple[SessionState, Session | None]:
    """The state of the session whose cookie secret is ``secret`` at ``at``, and the session when live (one
    statement). Does not write: ``touch`` records the request."""
    if not secret:
        return SessionState.unknown, None
    parent = api_tokens.alias("parent")
    row = conn.execute(
        select(web_sessions, api_tokens.c.revoked_at.label("token_revoked_at"),
               parent.c.revoked_at.label("parent_revoked_at"), users.c.name, users.c.email)
        .outerjoin(api_tokens, api_tokens.c.id == web_sessions.c.token_id)
        .outerjoin(parent, parent.c.id == api_tokens.c.parent_token_id)
        .outerjoin(users, users.c.id == web_sessions.c.principal_id)
        .where(web_sessions.c.secret_sha256 == digest(secret))).first()
    # A token whose parent is revoked no longer authenticates (``tokens.authenticate``); its sessions end too.
    facts = None if row is None else SessionFacts(created_at=row.created_at, last_seen_at=row.last_seen_at,
                                                  ended_at=row.ended_at,
                                                  token_revoked_at=row.token_revoked_at or row.parent_revoked_at)
    state = decide(facts, at)
    if state is not SessionState.live or row is None:
        return state, None
    return state, Session(id=row.id, principal=Principal(org_id=row.org_id, principal_id=row.principal_id,
                                                         token_id=row.token_id or ""),
                          csrf_token=row.csrf_token, display_name=row.name or row.email or row.principal_id,
                          last_seen_at=row.last_seen_at)


def needs_touch(session: Session, at: datetime) -> bool:
    """Whether a request at ``at`` should record itself on ``session`` (pure): the last record is
    ``budgets.WEB_SESSION_TOUCH_SECONDS`` old or more. The idle lifetime counts from the last record."""
    return at - session.last_seen_at >= timedelta(seconds=budgets.WEB_SESSION_TOUCH_SECONDS)


def touch(conn: Connection, session: Session, at: datetime) -> None:
    """Record a request on ``session`` at ``at`` (call when ``needs_touch``)."""
    conn.execute(update(web_sessions).where(web_sessions.c.id == session.id).values(last_seen_at=at))


def end(conn: Connection, *, org_id: str, principal_id: str, session_id: str, at: datetime) -> None:
    """Sign out the one session ``session_id`` of ``principal_id`` (audited as ``web.signed_out``)."""
    conn.execute(update(web_sessions).where(web_sessions.c.id == session_id,
                                            web_sessions.c.principal_id == principal_id,
                                            web_sessions.c.ended_at.is_(None))
                 .values(ended_at=at, ended_reason="signed_out"))
    audit.append(conn, org_id=org_id, at=at, action="web.signed_out", actor_id=principal_id, subject=session_id,
                 detail={"scope": "this_session"})


def end_everywhere(conn: Connection, *, org_id: str, principal_id: str, session_id: str, at: datetime) -> int:
    """Sign out every open session of ``principal_id``, ``session_id`` (the one asking) included; audited
    as ``web.signed_out`` with the count. Returns how many sessions ended."""
    ended = conn.execute(update(web_sessions)
                         .where(web_sessions.c.org_id == org_id, web_sessions.c.principal_id == principal_id,
                                web_sessions.c.ended_at.is_(None))
                         .values(ended_at=at, ended_reason="signed_out_everywhere")).rowcount
    audit.append(conn, org_id=org_id, at=at, action="web.signed_out", actor_id=principal_id, subject=session_id,
                 detail={"scope": "everywhere", "sessions_ended": ended})
    return int(ended)


@dataclass(frozen=True)
class OpenSession:
    """One of a person's sessions as ``/people/me`` lists it (never its secret): how it was opened
    (``token`` or ``code``), the token it was opened with (None for a code), when it started and when it
    was last used (aware UTC)."""

    id: str
    method: str
    token_id: str | None
    created_at: datetime
    last_seen_at: datetime


def list_open(conn: Connection, *, org_id: str, principal_id: str, at: datetime) -> list[OpenSession]:
    """The person's sessions that are live at ``at`` (``decide``), newest first. Sessions that ended, idled
    out, expired or lost their token are not listed: they open nothing."""
    parent = api_tokens.alias("parent")
    rows = conn.execute(
        select(web_sessions, api_tokens.c.revoked_at.label("token_revoked_at"),
               parent.c.revoked_at.label("parent_revoked_at"))
        .outerjoin(api_tokens, api_tokens.c.id == web_sessions.c.token_id)
        .outerjoin(parent, parent.c.id == api_tokens.c.parent_token_id)
        .where(web_sessions.c.org_id == org_id, web_sessions.c.principal_id == principal_id,
               web_sessions.c.ended_at.is_(None))
        .order_by(web_sessions.c.created_at.desc(), web_sessions.c.id.desc())).all()
    return [OpenSession(id=r.id, method=r.method, token_id=r.token_id, created_at=r.created_at,
                        last_seen_at=r.last_seen_at)
            for r in rows
            if decide(SessionFacts(created_at=r.created_at, last_seen_at=r.last_seen_at, ended_at=r.ended_at,
                                   token_revoked_at=r.token_revoked_at or r.parent_revoked_at), at)
            is SessionState.live]


def end_one(conn: Connection, *, org_id: str, principal_id: str, session_id: str, at: datetime) -> None:
    """End one open session of ``principal_id`` (audited as ``web.signed_out``, scope ``one_session``).

    Raises ``E_NO_SUCH_SESSION`` (404) when it is not an open session of this person (another person's
    session is not named, so an id cannot be probed)."""
    ended = conn.execute(update(web_sessions).where(web_sessions.c.id == session_id,
                                                    web_sessions.c.org_id == org_id,
                                                    web_sessions.c.principal_id == principal_id,
                                                    web_sessions.c.ended_at.is_(None))
                         .values(ended_at=at, ended_reason="signed_out")).rowcount
    if not ended:
        raise not_found("E_NO_SUCH_SESSION", f"No open session {session_id[:40]} of yours.",
                        fix="Reload /people/me: it lists your open sessions.", session_id=session_id[:40])
    audit.append(conn, org_id=org_id, at=at, action="web.signed_out", actor_id=principal_id, subject=session_id,
                 detail={"scope": "one_session"})


def end_others(conn: Connection, *, org_id: str, principal_id: str, session_id: str, at: datetime) -> int:
    """End every open session of ``principal_id`` except ``session_id`` (the one asking); audited as
    ``web.signed_out`` with scope ``others`` and the count. Returns how many sessions ended."""
    ended = conn.execute(update(web_sessions)
                         .where(web_sessions.c.org_id == org_id, web_sessions.c.principal_id == principal_id,
                                web_sessions.c.id != session_id, web_sessions.c.ended_at.is_(None))
                         .values(ended_at=at, ended_reason="signed_out_elsewhere")).rowcount
    audit.append(conn, org_id=org_id, at=at, action="web.signed_out", actor_id=principal_id, subject=session_id,
                 detail={"scope": "others", "sessions_ended": ended})
    return int(ended)
