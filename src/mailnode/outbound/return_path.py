"""The return path the node writes on each hand-over: one VERP address per recipient row.

RFC 5321 §4.5.5 and the VERP convention: the SMTP reverse path of each recipient's hand-over is
``bounces+<recipient row id>@<bounce domain>``, so a delivery status notification names exactly one
recipient row (``ingress.routing`` accepts mail to these addresses and ``ingress.materialise`` files it
against the row). Outbound owns the address it writes; ingress, above it, reads it back.
"""

from __future__ import annotations

from sqlalchemy import Connection

from mailnode.directory.domains import org_domains

#: The local part's prefix of every VERP return path.
VERP_LOCAL_PREFIX = "bounces+"


def verp_address(recipient_id: str, bounce_domain: str) -> str:
    """The VERP return path for one recipient row: ``bounces+<srp id>@<bounce domain>``."""
    return f"{VERP_LOCAL_PREFIX}{recipient_id.lower()}@{bounce_domain}"


def bounce_domain_for(conn: Connection, org_id: str, setting: str) -> str:
    """The bounce domain in force: the setting, else the organisation's first domain."""
    if setting:
        return setting.lower()
    domains = org_domains(conn, org_id)
    return domains[0] if domains else ""
