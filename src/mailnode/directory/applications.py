"""Application principals (``app_...``): created by an administrator, holding a token and relations.

spec/transactional.md §6. An application is a principal like a person: it authenticates with an API token
(``directory.tokens``; shown once at creation, never again) and may send from a mailbox once granted
``send.propose`` on it (``POST /api/access``). ``authz`` gives an application only its own tuples, never a
team's. A lost token is replaced, not recovered: ``mint_application_token`` makes a new one (shown once)
and ``DELETE /api/tokens/{id}`` revokes the old.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from mailnode import audit, budgets
from mailnode.authz import is_admin
from mailnode.directory.tokens import create_token
from mailnode.errors import conflict, invalid, limit_exceeded, not_an_administrator, not_found
from mailnode.ids import new_id
from mailnode.schema.directory import api_tokens
from mailnode.schema.directory_contacts import applications

#: Line and paragraph separators (U+2028, U+2029): not control characters, but they end a line in a
#: listing or a log as surely as LF does.
_BREAKS = frozenset({"Zl", "Zp"})


def check_app_name(name: str | None) -> str:
    """The name trimmed, or why it cannot name an application (pure).

    Raises ``E_APP_NEEDS_A_NAME`` (422) for an empty name, ``E_APP_NAME_MALFORMED`` (422) for a control or
    format character or a line separator (a line break would forge lines in listings and the audit trail; a
    NUL cannot be stored in PostgreSQL text), ``E_BUDGET_EXCEEDED`` (422) naming ``APP_NAME_MAX_CHARS`` for
    a longer name.
    """
    clean = (name or "").strip()
    if not clean:
        raise invalid("E_APP_NEEDS_A_NAME", "The application needs a name.", "The name was empty.",
                      "Give a name: POST /api/apps {\"name\": \"research-pipeline\"} or "
                      "mailnode app create research-pipeline.")
    bad = next((c for c in clean if unicodedata.category(c)[0] == "C" or unicodedata.category(c) in _BREAKS), None)
    if bad is not None:
        char = f"U+{ord(bad):04X}"
        raise invalid("E_APP_NAME_MALFORMED",
                      f"The application name contains {char} ({unicodedata.category(bad)}), "
                      "which is not printable text.",
                      "A name is one line of printable text: "
                      "it is shown in listings, token labels and the audit trail.",
                      "Choose a name of printable characters, e.g. research-pipeline.", character=char)
    if len(clean) > budgets.APP_NAME_MAX_CHARS:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "APP_NAME_MAX_CHARS", budgets.APP_NAME_MAX_CHARS, len(clean),
                             "Choose a shorter name.")
    return clean


def create_application(conn: Connection, *, org_id: str, actor_id: str | None, at: datetime, name: str,
                       check_admin: bool = True) -> dict[str, Any]:
    """Create an application and its first token; returns ``{"application": {...}, "token": plaintext}``.

    ``actor_id`` None (with ``check_admin`` False) is the installer (``mailnode app create`` on the data
    directory). Raises ``E_NOT_AN_ADMINISTRATOR`` (403), the name's refusals (``check_app_name``, 422),
    ``E_APP_EXISTS`` (409); nothing is written when it raises.
    """
    if check_admin and (actor_id is None or not is_admin(conn, org_id, actor_id)):
        raise not_an_administrator("create an application")
    clean = check_app_name(name)
    existing = conn.execute(select(applications.c.id).where(applications.c.org_id == org_id,
                                                            applications.c.name == clean)).first()
    if existing is not None:
        raise conflict("E_APP_EXISTS", f"An application named {clean!r} exists ({existing.id}).",
                       "Names are unique per organisation; its token was shown once, when it was created.",
                       f"Choose another name, or replace the lost token: POST /api/apps/{existing.id}/tokens "
                       f"(mailnode app token {existing.id}).", name=clean, app_id=existing.id)
    app_id = new_id("app")
    conn.execute(applications.insert().values(id=app_id, org_id=org_id, name=clean, created_by=actor_id,
                                              created_at=at))
    audit.append(conn, org_id=org_id, at=at, action="app.created", actor_id=actor_id, subject=app_id,
                 detail={"name": clean}, actor_kind="installer" if actor_id is None else None)
    token_id, plaintext = create_token(conn, org_id=org_id, principal_id=app_id, at=at, actor_id=actor_id,
                                       label=f"app {clean}")
    return {"application": {"id": app_id, "name": clean, "created_at": at.isoformat(), "token_id": token_id},
            "token": plaintext}


def _require(conn: Connection, org_id: str, actor_id: str | None, act: str) -> None:
    if actor_id is not None and not is_admin(conn, org_id, actor_id):
        raise not_an_administrator(act)


def _tokens_json(conn: Connection, org_id: str, app_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(select(api_tokens.c.id, api_tokens.c.label, api_tokens.c.created_at, api_tokens.c.revoked_at)
                        .where(api_tokens.c.org_id == org_id, api_tokens.c.principal_id == app_id)
                        .order_by(api_tokens.c.id)).all()
    return [{"id": r.id, "label": r.label, "created_at": r.created_at.isoformat(),
             "revoked_at": r.revoked_at.isoformat() if r.revoked_at else None} for r in rows]


def list_applications(conn: Connection, *, org_id: str, actor_id: str | None) -> list[dict[str, Any]]:
    """Every application of the organisation, by name, with its tokens' ids (never a token's plaintext).

    ``[{"id", "name", "created_at", "created_by", "tokens": [{"id", "label", "created_at", "revoked_at"}]}]``
    (ISO 8601 UTC). ``actor_id`` None is the installer. Raises ``E_NOT_AN_ADMINISTRATOR`` (403).
    """
    _require(conn, org_id, actor_id, "list the applications")
    rows = conn.execute(select(applications).where(applications.c.org_id == org_id)
                        .order_by(applications.c.name, applications.c.id)).all()
    return [{"id": r.id, "name": r.name, "created_at": r.created_at.isoformat(), "created_by": r.created_by,
             "tokens": _tokens_json(conn, org_id, r.id)} for r in rows]


def find_application(conn: Connection, org_id: str, ref: str) -> Any:
    """The application row whose id, else whose name, is ``ref``; ``E_NO_SUCH_APP`` (404) otherwise."""
    clean = (ref or "").strip()
    row = None
    for column in (applications.c.id, applications.c.name):
        row = conn.execute(select(applications).where(applications.c.org_id == org_id, column == clean)).first()
        if row is not None:
            break
    if row is None:
        raise not_found("E_NO_SUCH_APP", f"No application {clean!r}.",
                        fix="List applications with GET /api/apps (mailnode app list).", app=clean[:200])
    return row


def mint_application_token(conn: Connection, *, org_id: str, actor_id: str | None, at: datetime,
                           ref: str) -> dict[str, Any]:
    """A new token for the application ``ref`` (id or name), shown once; the old ones stay until revoked.

    Returns ``{"application": {"id", "name"}, "token_id", "token"}``. ``actor_id`` None is the installer.
    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_SUCH_APP`` (404).
    """
    _require(conn, org_id, actor_id, "mint a token for an application")
    row = find_application(conn, org_id, ref)
    token_id, plaintext = create_token(conn, org_id=org_id, principal_id=row.id, at=at, actor_id=actor_id,
                                       label=f"app {row.name}")
    return {"application": {"id": row.id, "name": row.name}, "token_id": token_id, "token": plaintext}
