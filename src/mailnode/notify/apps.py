"""Application principals (``app_...``): created by an administrator, holding a token and relations.

spec/transactional.md §6. An application is a principal like a person: it authenticates with an API token
(``directory.tokens``; shown once at creation) and may send from a mailbox once granted ``send.propose``
on it (``POST /api/access``). ``authz`` gives an application only its own tuples, never a team's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from mailnode import audit
from mailnode.authz import is_admin
from mailnode.directory.tokens import create_token
from mailnode.errors import conflict, invalid, not_an_administrator
from mailnode.ids import new_id
from mailnode.notify.tables import applications


def create_application(conn: Connection, *, org_id: str, actor_id: str | None, at: datetime, name: str,
                       check_admin: bool = True) -> dict[str, Any]:
    """Create an application and its first token; returns ``{"application": {...}, "token": plaintext}``.

    ``actor_id`` None (with ``check_admin`` False) is the installer (``mailnode app create`` on the data
    directory). Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_APP_NEEDS_A_NAME`` (422),
    ``E_APP_EXISTS`` (409).
    """
    if check_admin and (actor_id is None or not is_admin(conn, org_id, actor_id)):
        raise not_an_administrator("create an application")
    clean = (name or "").strip()
    if not clean:
        raise invalid("E_APP_NEEDS_A_NAME", "The application needs a name.", "name was empty.",
                      "Send POST /api/apps with a name.")
    if conn.execute(select(applications.c.id).where(applications.c.org_id == org_id,
                                                    applications.c.name == clean)).first() is not None:
        raise conflict("E_APP_EXISTS", f"An application named {clean!r} exists.", "Names are unique per organisation.",
                       "Choose another name, or mint a token for the existing one: POST /api/tokens.", name=clean)
    app_id = new_id("app")
    conn.execute(applications.insert().values(id=app_id, org_id=org_id, name=clean, created_by=actor_id,
                                              created_at=at))
    audit.append(conn, org_id=org_id, at=at, action="app.created", actor_id=actor_id, subject=app_id,
                 detail={"name": clean}, actor_kind="installer" if actor_id is None else None)
    token_id, plaintext = create_token(conn, org_id=org_id, principal_id=app_id, at=at, actor_id=actor_id,
                                       label=f"app {clean}")
    return {"application": {"id": app_id, "name": clean, "created_at": at.isoformat(), "token_id": token_id},
            "token": plaintext}
