"""API tokens: minted once, stored only as a SHA-256, revocable, sent as ``Authorization: Bearer``.

A token is ``mn_`` followed by ``budgets.TOKEN_RANDOM_BYTES`` random bytes in URL-safe base64. The
plaintext is returned once at creation and never stored. ``authenticate`` resolves a token to its
principal, live on every request; a missing, wrong or revoked token raises ``E_UNAUTHENTICATED`` (401).

A token mints nothing that outlives it: a token minted with another (``POST /api/tokens``) records it as
``parent_token_id``, revoking a token revokes every token minted from it, and a token whose parent is
revoked does not authenticate. An application never mints (``mint_own_token``): its tokens come from an
administrator (``POST /api/apps/{id}/tokens``) or the installer.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update

from mailnode import audit, budgets
from mailnode.errors import MailnodeError, invalid, limit_exceeded, not_found
from mailnode.ids import new_id, parse_id, prefix_of
from mailnode.schema.directory import api_tokens

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


#: Unicode categories that break a line although they are not control characters.
_LINE_BREAKS = frozenset({"Zl", "Zp"})


def check_label(label: str | None) -> str:
    """The label trimmed, or why it cannot label a token (pure).

    Raises ``E_TOKEN_NEEDS_A_LABEL`` (422) when it is empty after trimming, ``E_TOKEN_LABEL_MALFORMED``
    (422) for a control or format character or a line separator (a label is one line in token lists and the
    audit trail; a NUL cannot be stored in PostgreSQL text), ``E_BUDGET_EXCEEDED`` (422) naming
    ``TOKEN_LABEL_MAX_CHARS`` when longer.
    """
    clean = (label or "").strip()
    if not clean:
        raise invalid("E_TOKEN_NEEDS_A_LABEL", "The token needs a label.", "The label was empty or only spaces; "
                      "a label is how you later recognise a token to revoke (GET /api/tokens).",
                      'Name where it will be used: POST /api/tokens {"label": "laptop"} or '
                      "mailnode token create --label laptop.")
    bad = next((c for c in clean if unicodedata.category(c)[0] == "C" or unicodedata.category(c) in _LINE_BREAKS),
               None)
    if bad is not None:
        char = f"U+{ord(bad):04X}"
        raise invalid("E_TOKEN_LABEL_MALFORMED",
                      f"The token label contains {char} ({unicodedata.category(bad)}), which is not printable text.",
                      "A label is one line of printable text: it is shown in token lists and the audit trail.",
                      "Choose a label of printable characters, e.g. laptop.", character=char)
    if len(clean) > budgets.TOKEN_LABEL_MAX_CHARS:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "TOKEN_LABEL_MAX_CHARS", budgets.TOKEN_LABEL_MAX_CHARS,
                             len(clean), "Choose a shorter label.")
    return clean


def create_token(conn: Connection, *, org_id: str, principal_id: str, at: datetime, actor_id: str | None,
                 label: str, parent_token_id: str | None = None) -> tuple[str, str]:
    """Mint a token for ``principal_id``; returns ``(token_id, plaintext)``. The plaintext is never stored.

    ``parent_token_id`` is the token it was minted with (revoking that one revokes this one); None for the
    installer's and an administrator's mints for an application. The label is checked (``check_label``:
    ``E_TOKEN_NEEDS_A_LABEL``, ``E_TOKEN_LABEL_MALFORMED``, ``E_BUDGET_EXCEEDED``, all 422); nothing is
    written when it raises.
    """
    clean = check_label(label)
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(budgets.TOKEN_RANDOM_BYTES)
    tid = new_id("tok")
    conn.execute(api_tokens.insert().values(id=tid, org_id=org_id, principal_id=principal_id,
                                            token_sha256=_digest(plaintext), label=clean, created_at=at,
                                            parent_token_id=parent_token_id))
    audit.append(conn, org_id=org_id, at=at, action="token.created", actor_id=actor_id, subject=tid,
                 detail={"principal_id": principal_id, "label": clean, "parent_token_id": parent_token_id},
                 actor_kind="installer" if actor_id is None else None)
    return tid, plaintext


def mint_own_token(conn: Connection, caller: Principal, *, at: datetime, label: str) -> dict[str, Any]:
    """A new token for the caller, minted with (and revoked with) the caller's token (``POST /api/tokens``).

    Returns ``{"id", "token", "label", "parent_token_id"}``; the plaintext is in this answer only. A caller
    without a token (a web session opened with a mailed code, ``token_id`` "") mints a token with no parent,
    revoked on its own. Raises
    ``E_APPLICATION_CANNOT_MINT`` (403) for an application's token (an application's tokens come from an
    administrator), and ``check_label``'s refusals (422).
    """
    if prefix_of(caller.principal_id) == "app":
        raise MailnodeError(
            code="E_APPLICATION_CANNOT_MINT",
            what="An application cannot mint tokens.",
            why="An application's tokens come only from an administrator, so that every credential of an "
                "application is one an administrator chose to issue and can list (GET /api/apps).",
            fix="Ask an administrator: POST /api/apps/{id}/tokens (mailnode app token NAME).",
            status=403,
            detail={"principal_id": caller.principal_id},
        )
    clean = check_label(label)
    # A web session opened with a mailed code has no token (``token_id`` ""): the token then has no parent.
    parent = caller.token_id or None
    tid, plaintext = create_token(conn, org_id=caller.org_id, principal_id=caller.principal_id, at=at,
                                  actor_id=caller.principal_id, label=clean, parent_token_id=parent)
    return {"id": tid, "token": plaintext, "label": clean, "parent_token_id": parent}


def authenticate(conn: Connection, header: str | None) -> Principal:
    """Resolve an ``Authorization`` header value to a ``Principal``; ``E_UNAUTHENTICATED`` (401) otherwise."""
    if not header:
        raise unauthenticated("No Authorization header was sent.")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise unauthenticated("The Authorization header is not 'Bearer <token>'.")
    parent = api_tokens.alias("parent")
    row = conn.execute(select(api_tokens, parent.c.revoked_at.label("parent_revoked_at"))
                       .outerjoin(parent, parent.c.id == api_tokens.c.parent_token_id)
                       .where(api_tokens.c.token_sha256 == _digest(token))).first()
    if row is None:
        raise unauthenticated("The token is not known to this node.")
    if row.revoked_at is not None:
        raise unauthenticated("The token was revoked.")
    if row.parent_revoked_at is not None:
        # Revocation revokes the children too; this closes the race with a child minted meanwhile.
        raise unauthenticated("The token it was minted with was revoked, which revokes it too.")
    return Principal(org_id=row.org_id, principal_id=row.principal_id, token_id=row.id)


def revoke_token(conn: Connection, *, org_id: str, actor_id: str, at: datetime, token_id: str) -> list[str]:
    """Revoke a token and every token minted from it, at any depth: your own, or anyone's if you are an
    administrator. Returns the ids revoked now, the token first (each audited). ``E_NO_SUCH_TOKEN`` (404)."""
    from mailnode.authz import is_admin

    parse_id(token_id, "tok", "token_id")
    row = conn.execute(select(api_tokens).where(api_tokens.c.id == token_id, api_tokens.c.org_id == org_id)).first()
    if row is None or (row.principal_id != actor_id and not is_admin(conn, org_id, actor_id)):
        raise not_found("E_NO_SUCH_TOKEN", f"No token {token_id}.", fix="List your tokens with GET /api/tokens.",
                        token_id=token_id)
    revoked: list[str] = []
    frontier = [token_id]
    seen = {token_id}
    while frontier:
        rows = conn.execute(select(api_tokens.c.id, api_tokens.c.revoked_at, api_tokens.c.parent_token_id)
                            .where(api_tokens.c.org_id == org_id, api_tokens.c.id.in_(frontier))
                            .order_by(api_tokens.c.id)).all()
        for r in rows:
            if r.revoked_at is None:
                conn.execute(update(api_tokens).where(api_tokens.c.id == r.id).values(revoked_at=at))
                audit.append(conn, org_id=org_id, at=at, action="token.revoked", actor_id=actor_id, subject=r.id,
                             detail={} if r.id == token_id else {"with_parent": r.parent_token_id})
                revoked.append(r.id)
        children = conn.execute(select(api_tokens.c.id).where(api_tokens.c.org_id == org_id,
                                                              api_tokens.c.parent_token_id.in_(frontier))).all()
        frontier = [c.id for c in children if c.id not in seen]
        seen.update(frontier)
    return revoked


def list_tokens(conn: Connection, *, org_id: str, principal_id: str) -> list[dict[str, Any]]:
    """The principal's tokens (never the plaintext): ``[{"id", "label", "created_at", "revoked_at",
    "parent_token_id"}]``, ISO 8601 UTC."""
    rows = conn.execute(select(api_tokens).where(api_tokens.c.org_id == org_id,
                                                 api_tokens.c.principal_id == principal_id)
                        .order_by(api_tokens.c.id)).all()
    return [{"id": r.id, "label": r.label, "created_at": r.created_at.isoformat(),
             "revoked_at": r.revoked_at.isoformat() if r.revoked_at else None,
             "parent_token_id": r.parent_token_id} for r in rows]
