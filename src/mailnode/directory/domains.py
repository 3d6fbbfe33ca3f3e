"""Domain names: IDNA normalisation and the organisation's domains.

Domains are IDNA-encoded (A-labels) and lower-cased wherever they are stored or compared (spec/outbound.md
Part A §15). ``normalise_domain`` raises ``E_DOMAIN_MALFORMED`` (422).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from mailnode import audit
from mailnode.authz import require_admin
from mailnode.errors import conflict, invalid
from mailnode.ids import new_id
from mailnode.schema.directory import domains

# RFC 1035 §2.3.1 / RFC 5890: a label is 1..63 letters, digits or hyphens, not starting or ending with a hyphen.
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
#: RFC 1035 §2.3.4: a name is at most 253 characters in its text form.
DOMAIN_MAX_CHARS = 253


def normalise_domain(value: str) -> str:
    """Return ``value`` as lower-case IDNA A-labels, or raise ``E_DOMAIN_MALFORMED`` (422)."""
    raw = (value or "").strip().rstrip(".")
    try:
        ascii_name = raw.encode("idna").decode("ascii").lower() if raw else ""
    except UnicodeError:
        ascii_name = ""
    labels = ascii_name.split(".") if ascii_name else []
    if len(labels) < 2 or len(ascii_name) > DOMAIN_MAX_CHARS or not all(_LABEL.match(lab) for lab in labels):
        raise invalid(
            "E_DOMAIN_MALFORMED",
            f"{value!r} is not a domain name.",
            "A domain is two or more dot-separated labels of letters, digits and hyphens (IDNA allowed).",
            "Give a name like example.org.",
            domain=value,
        )
    return ascii_name


def add_domain(conn: Connection, *, org_id: str, actor_id: str | None, at: datetime, domain: str,
               check_admin: bool = True) -> dict[str, Any]:
    """Add a domain to the organisation (administrators). Raises ``E_DOMAIN_TAKEN`` (409)."""
    if check_admin and actor_id is not None:
        require_admin(conn, org_id, actor_id, "add a domain")
    name = normalise_domain(domain)
    if conn.execute(select(domains.c.id).where(domains.c.domain == name)).first() is not None:
        raise conflict("E_DOMAIN_TAKEN", f"The domain {name} is already on this node.",
                       "A domain belongs to one organisation.", "List domains with GET /api/domains.", domain=name)
    did = new_id("dom")
    conn.execute(domains.insert().values(id=did, org_id=org_id, domain=name, created_at=at))
    audit.append(conn, org_id=org_id, at=at, action="domain.added", actor_id=actor_id, subject=did,
                 detail={"domain": name}, actor_kind="installer" if actor_id is None else None)
    return {"id": did, "domain": name, "created_at": at.isoformat()}


def org_domains(conn: Connection, org_id: str) -> list[str]:
    """The organisation's domains, oldest first."""
    rows = conn.execute(
        select(domains.c.domain).where(domains.c.org_id == org_id).order_by(domains.c.created_at, domains.c.id)
    ).all()
    return [r.domain for r in rows]


def list_domains(conn: Connection, org_id: str) -> list[dict[str, Any]]:
    """The organisation's domains as the API shows them."""
    rows = conn.execute(select(domains).where(domains.c.org_id == org_id).order_by(domains.c.id)).all()
    return [{"id": r.id, "domain": r.domain, "created_at": r.created_at.isoformat()} for r in rows]
