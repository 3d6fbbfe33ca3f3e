"""API tokens: minted once, stored only as a SHA-256, revocable, sent as ``Authorization: Bearer``.

A token is ``mn_`` followed by ``budgets.TOKEN_RANDOM_BYTES`` random bytes in URL-safe base64. The
plaintext is returned once at creation and never stored. ``authenticate`` resolves a token to its
principal, live on every request; a missing, wrong or revoked token raises ``E_UNAUTHENTICATED`` (401).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update

from mailnode import audit, budgets
from mailnode.directory.tables import api_tokens
from mailnode.errors import MailnodeError, not_found
from mailnode.ids import new_id, parse_id

TOKEN_PREFIX = "mn_"


@dataclass(frozen=True)
class Principal:
    """Who is calling: the organisation and the principal id (``usr_`` or ``app_``)."""

    org_id: str
    principal_id: str
    token_id: str


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def unauthenticated(why: str) -> MailnodeError:
    """The 401 every authentication failure answers with."""
    return MailnodeError(
        code="E_UNAUTHENTICATED",
        what="The request carries no valid API token.",
        why=why,
        fix="Send Authorization: Bearer <token>; create one with mailnode token create.",
        status=401,
    )


def create_token(conn: Connection, *, org_id: str, principal_id: str, at: datetime, actor_id: str | None,
                 label: str = "") -> tuple[str, str]:
    """Mint a token for ``principal_id``; returns ``(token_id, plaintext)``. The plaintext is never stored."""
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(budgets.TOKEN_RANDOM_BYTES)
    tid = new_id("tok")
    conn.execute(api_tokens.insert().values(id=tid, org_id=org_id, principal_id=principal_id,
                                            token_sha256=_digest(plaintext), label=label, created_at=at))
    audit.append(conn, org_id=org_id, at=at, action="token.created", actor_id=actor_id, subject=tid,
                 detail={"principal_id": principal_id, "label": label},
                 actor_kind="installer" if actor_id is None else None)
    return tid, plaintext


def authenticate(conn: Connection, header: str | None) -> Principal:
    """Resolve an ``Authorization`` header value to a ``Principal``; ``E_UNAUTHENTICATED`` (401) otherwise."""
    if not header:
        raise unauthenticated("No Authorization header was sent.")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise unauthenticated("The Authorization header is not 'Bearer <token>'.")
    row = conn.execute(select(api_tokens).where(api_tokens.c.token_sha256 == _digest(token))).first()
    if row is None:
        raise unauthenticated("The token is not known to this node.")
    if row.revoked_at is not None:
        raise unauthenticated("The token was revoked.")
    return Principal(org_id=row.org_id, principal_id=row.principal_id, token_id=row.id)


def revoke_token(conn: Connection, *, org_id: str, actor_id: str, at: datetime, token_id: str) -> None:
    """Revoke a token: your own, or anyone's if you are an administrator. ``E_NO_SUCH_TOKEN`` (404)."""
    from mailnode.authz import is_admin

    parse_id(token_id, "tok", "token_id")
    row = conn.execute(select(api_tokens).where(api_tokens.c.id == token_id, api_tokens.c.org_id == org_id)).first()
    if row is None or (row.principal_id != actor_id and not is_admin(conn, org_id, actor_id)):
        raise not_found("E_NO_SUCH_TOKEN", f"No token {token_id}.", fix="List your tokens with GET /api/tokens.",
                        token_id=token_id)
    if row.revoked_at is None:
        conn.execute(update(api_tokens).where(api_tokens.c.id == token_id).values(revoked_at=at))
        audit.append(conn, org_id=org_id, at=at, action="token.revoked", actor_id=actor_id, subject=token_id)


def list_tokens(conn: Connection, *, org_id: str, principal_id: str) -> list[dict[str, Any]]:
    """The principal's tokens (never the plaintext)."""
    rows = conn.execute(select(api_tokens).where(api_tokens.c.org_id == org_id,
                                                 api_tokens.c.principal_id == principal_id)
                        .order_by(api_tokens.c.id)).all()
    return [{"id": r.id, "label": r.label, "created_at": r.created_at.isoformat(),
             "revoked_at": r.revoked_at.isoformat() if r.revoked_at else None} for r in rows]
