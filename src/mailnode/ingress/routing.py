"""Who an envelope recipient is: a mailbox address on this node, or a VERP bounce address.

``RCPT TO`` is accepted only for an address of a mailbox on this node, or ``bounces+<recipient row
id>@<bounce domain>`` (the return path the SMTP transport writes, RFC 5321 §4.5.5 / VERP) naming an
existing recipient row. The bounce domain is the setting ``bounce_domain`` or, by default, the
organisation's first domain. Anything else is refused ``550 5.1.1`` by the listener.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from mailnode.ids import is_id
from mailnode.mail.mailboxes import mailbox_by_address
from mailnode.outbound.return_path import VERP_LOCAL_PREFIX, bounce_domain_for
from mailnode.schema.outbound import send_manifests, send_recipients


@dataclass(frozen=True)
class Route:
    """Where a delivery goes: the mailbox that files it, and the recipient row a VERP address names."""

    org_id: str
    mailbox_id: str
    address: str
    verp_recipient_id: str | None = None


def resolve(conn: Connection, address: str, bounce_domain_setting: str = "") -> Route | None:
    """The route for an envelope recipient, or None when this node takes no mail for it."""
    text = (address or "").strip().strip("<>")
    hit = mailbox_by_address(conn, text)
    if hit is not None:
        return Route(org_id=hit.org_id, mailbox_id=hit.mailbox_id, address=hit.address)
    local, _, domain = text.rpartition("@")
    if not local.lower().startswith(VERP_LOCAL_PREFIX):
        return None
    token = local[len(VERP_LOCAL_PREFIX):].upper().replace("SRP_", "srp_", 1)
    if not is_id(token, "srp"):
        return None
    row = conn.execute(
        select(send_recipients.c.id, send_recipients.c.org_id, send_manifests.c.mailbox_id)
        .join(send_manifests, send_manifests.c.id == send_recipients.c.manifest_id)
        .where(send_recipients.c.id == token)
    ).first()
    if row is None or domain.lower() != bounce_domain_for(conn, row.org_id, bounce_domain_setting):
        return None
    return Route(org_id=row.org_id, mailbox_id=row.mailbox_id, address=text.lower(), verp_recipient_id=row.id)
