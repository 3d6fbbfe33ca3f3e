"""Mailboxes and their addresses: create, list, read, update (administrators create and update).

An address is ``local@domain`` on one of the organisation's domains, stored with the domain in IDNA
lower case and the local part lower-cased (mailnode routes case-insensitively, RFC 5321 §2.4 leaves
local-part case to the receiver). A mailbox's existence is disclosed only to administrators and to
holders of a relation on it; everyone else gets ``E_NO_SUCH_MAILBOX`` (404).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select, update

from mailnode import audit, budgets
from mailnode.authz import MAILBOX_RELATIONS, holds, is_admin, mailboxes_visible, require_admin
from mailnode.directory.domains import normalise_domain, org_domains
from mailnode.errors import MailnodeError, conflict, invalid, no_such_mailbox
from mailnode.ids import new_id, parse_id
from mailnode.schema.mail import mailbox_addresses, mailboxes


def normalise_address(value: str) -> str:
    """``local@domain`` lower-cased with the domain IDNA-encoded; ``E_ADDRESS_MALFORMED`` (422)."""
    text = (value or "").strip()
    local, at, domain = text.rpartition("@")
    if not at or not local or any(c in text for c in "\r\n \t<>,;\"") or len(local) > 64:
        raise invalid("E_ADDRESS_MALFORMED", f"{value!r} is not a mailbox address.",
                      "An address is local-part@domain (RFC 5321 §4.1.2), at most 64 octets before the @.",
                      "Give an address like support@example.org.", address=value)
    return f"{local.lower()}@{normalise_domain(domain)}"


def get_mailbox_row(conn: Connection, org_id: str, mailbox_id: str) -> Any:
    """The mailbox row (no authority check), or ``E_NO_SUCH_MAILBOX`` (404)."""
    parse_id(mailbox_id, "mbx", "mailbox_id")
    row = conn.execute(select(mailboxes).where(mailboxes.c.id == mailbox_id, mailboxes.c.org_id == org_id)).first()
    if row is None:
        raise no_such_mailbox(mailbox_id)
    return row


def addresses_of(conn: Connection, mailbox_id: str) -> list[str]:
    """The mailbox's addresses, oldest first."""
    rows = conn.execute(select(mailbox_addresses.c.address).where(mailbox_addresses.c.mailbox_id == mailbox_id)
                        .order_by(mailbox_addresses.c.created_at, mailbox_addresses.c.id)).all()
    return [r.address for r in rows]


def mailbox_by_address(conn: Connection, address: str) -> Any | None:
    """``(mailbox_id, org_id, address)`` for an address on this node (case-insensitive), else None."""
    try:
        addr = normalise_address(address)
    except MailnodeError:  # a malformed address simply belongs to no mailbox
        return None
    return conn.execute(
        select(mailbox_addresses.c.mailbox_id, mailbox_addresses.c.org_id, mailbox_addresses.c.address)
        .where(mailbox_addresses.c.address == addr)
    ).first()


def mailbox_json(conn: Connection, row: Any) -> dict[str, Any]:
    """The API shape of a mailbox."""
    return {
        "id": row.id,
        "name": row.name,
        "addresses": addresses_of(conn, row.id),
        "hold_window_seconds": (row.hold_window_seconds if row.hold_window_seconds is not None
                                else budgets.SEND_HOLD_WINDOW_DEFAULT_SECONDS),
        "created_at": row.created_at.isoformat(),
    }


def _check_addresses(conn: Connection, org_id: str, addresses: list[str], mailbox_id: str | None) -> list[str]:
    if not addresses:
        raise invalid("E_MAILBOX_NEEDS_AN_ADDRESS", "A mailbox needs at least one address.",
                      "Mail is routed to a mailbox by its addresses.",
                      "Send {\"name\": ..., \"addresses\": [\"support@your-domain\"]}.")
    owned = set(org_domains(conn, org_id))
    out: list[str] = []
    for a in addresses:
        addr = normalise_address(a)
        domain = addr.rpartition("@")[2]
        if domain not in owned:
            raise invalid("E_ADDRESS_NOT_ON_ORG_DOMAIN", f"{addr} is not on one of the organisation's domains.",
                          "A mailbox receives mail only for the organisation's domains.",
                          f"Add the domain first: POST /api/domains {{\"domain\": \"{domain}\"}}.",
                          address=addr, domains=sorted(owned))
        taken = conn.execute(select(mailbox_addresses.c.mailbox_id).where(mailbox_addresses.c.address == addr)).first()
        if taken is not None and taken.mailbox_id != mailbox_id:
            raise conflict("E_ADDRESS_TAKEN", f"{addr} already belongs to another mailbox.",
                           "An address routes to exactly one mailbox.", "Choose another address.", address=addr)
        if addr not in out:
            out.append(addr)
    return out


def create_mailbox(conn: Connection, *, org_id: str, actor_id: str | None, at: datetime, name: str,
                   addresses: list[str], hold_window_seconds: int | None = None) -> dict[str, Any]:
    """Create a mailbox with its addresses (administrators; ``actor_id`` None only for ``init``).

    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_MAILBOX_NEEDS_A_NAME`` / ``E_ADDRESS_MALFORMED`` /
    ``E_ADDRESS_NOT_ON_ORG_DOMAIN`` (422), ``E_ADDRESS_TAKEN`` (409).
    """
    if actor_id is not None:
        require_admin(conn, org_id, actor_id, "create a mailbox")
    clean = (name or "").strip()
    if not clean:
        raise invalid("E_MAILBOX_NEEDS_A_NAME", "A mailbox needs a name.", "The name was empty.",
                      "Send {\"name\": \"Support\", \"addresses\": [...]}.")
    _check_hold_window(hold_window_seconds)
    addrs = _check_addresses(conn, org_id, addresses, None)
    mid = new_id("mbx")
    conn.execute(mailboxes.insert().values(id=mid, org_id=org_id, name=clean, hold_window_seconds=hold_window_seconds,
                                           created_at=at))
    for a in addrs:
        conn.execute(mailbox_addresses.insert().values(id=new_id("mba"), org_id=org_id, mailbox_id=mid, address=a,
                                                       created_at=at))
    audit.append(conn, org_id=org_id, at=at, action="mailbox.created", actor_id=actor_id, subject=mid,
                 detail={"name": clean, "addresses": addrs}, actor_kind="installer" if actor_id is None else None)
    return mailbox_json(conn, conn.execute(select(mailboxes).where(mailboxes.c.id == mid)).one())


def _check_hold_window(value: int | None) -> None:
    if value is not None and not (0 <= value <= budgets.SEND_HOLD_WINDOW_MAX_SECONDS):
        raise invalid("E_HOLD_WINDOW_OUT_OF_RANGE", f"hold_window_seconds {value} is out of range.",
                      f"The hold window is 0..{budgets.SEND_HOLD_WINDOW_MAX_SECONDS} seconds "
                      "(0 = hand over immediately).",
                      "Send a value in range, or null for the default.", value=value,
                      maximum=budgets.SEND_HOLD_WINDOW_MAX_SECONDS)


def list_mailboxes(conn: Connection, *, org_id: str, principal_id: str, limit: int,
                   cursor: str | None) -> list[dict[str, Any]]:
    """Mailboxes the caller may know of (all for an administrator), in id order after ``cursor``."""
    q = select(mailboxes).where(mailboxes.c.org_id == org_id)
    if not is_admin(conn, org_id, principal_id):
        visible = mailboxes_visible(conn, org_id, principal_id)
        q = q.where(mailboxes.c.id.in_(sorted(visible)))
    if cursor:
        q = q.where(mailboxes.c.id > cursor)
    return [mailbox_json(conn, r) for r in conn.execute(q.order_by(mailboxes.c.id).limit(limit)).all()]


def get_mailbox(conn: Connection, *, org_id: str, principal_id: str, mailbox_id: str) -> dict[str, Any]:
    """One mailbox, if the caller may know of it; else ``E_NO_SUCH_MAILBOX`` (404)."""
    row = get_mailbox_row(conn, org_id, mailbox_id)
    if not (is_admin(conn, org_id, principal_id)
            or holds(conn, org_id, principal_id, MAILBOX_RELATIONS, "mailbox", mailbox_id)):
        raise no_such_mailbox(mailbox_id)
    return mailbox_json(conn, row)


_UNSET: Any = object()


def update_mailbox(conn: Connection, *, org_id: str, actor_id: str, at: datetime, mailbox_id: str,
                   name: str | None = None, addresses: list[str] | None = None,
                   hold_window_seconds: Any = _UNSET) -> dict[str, Any]:
    """Change a mailbox's name, addresses (replacing the set) or hold window (administrators; audited).

    ``hold_window_seconds`` None restores the default. Non-administrators who may not see the mailbox get
    404, those who may get ``E_NOT_AN_ADMINISTRATOR`` (403).
    """
    row = get_mailbox_row(conn, org_id, mailbox_id)
    if not is_admin(conn, org_id, actor_id):
        if holds(conn, org_id, actor_id, MAILBOX_RELATIONS, "mailbox", mailbox_id):
            require_admin(conn, org_id, actor_id, "change a mailbox")
        raise no_such_mailbox(mailbox_id)
    values: dict[str, Any] = {}
    if name is not None:
        if not name.strip():
            raise invalid("E_MAILBOX_NEEDS_A_NAME", "A mailbox needs a name.", "The name was empty.",
                          "Send a non-empty name.")
        values["name"] = name.strip()
    if hold_window_seconds is not _UNSET:
        _check_hold_window(hold_window_seconds)
        values["hold_window_seconds"] = hold_window_seconds
    if values:
        conn.execute(update(mailboxes).where(mailboxes.c.id == row.id).values(**values))
    new_addrs = None
    if addresses is not None:
        new_addrs = _check_addresses(conn, org_id, addresses, row.id)
        conn.execute(delete(mailbox_addresses).where(mailbox_addresses.c.mailbox_id == row.id,
                                                     mailbox_addresses.c.address.not_in(new_addrs)))
        have = set(addresses_of(conn, row.id))
        for a in new_addrs:
            if a not in have:
                conn.execute(mailbox_addresses.insert().values(id=new_id("mba"), org_id=org_id, mailbox_id=row.id,
                                                               address=a, created_at=at))
    detail = {k: v for k, v in values.items()}
    if new_addrs is not None:
        detail["addresses"] = new_addrs
    audit.append(conn, org_id=org_id, at=at, action="mailbox.updated", actor_id=actor_id, subject=row.id,
                 detail=detail)
    return mailbox_json(conn, conn.execute(select(mailboxes).where(mailboxes.c.id == row.id)).one())



