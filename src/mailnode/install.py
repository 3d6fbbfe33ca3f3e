"""``mailnode init``: create the organisation, its first domain, the first administrator, a mailbox and a token.

Runs once per data directory (``E_ALREADY_INITIALISED``, 409, the second time); everything is written in
one transaction, audited with ``actor_kind = installer``. The administrator is granted ``org.admin`` and
the mailbox relations on the first mailbox (spec/outbound.md Part A §11).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select

from mailnode import audit
from mailnode.authz import MAILBOX_RELATIONS, grant_unchecked
from mailnode.directory.domains import add_domain, normalise_domain
from mailnode.directory.people import create_user
from mailnode.directory.tokens import create_token
from mailnode.errors import conflict, invalid
from mailnode.ids import new_id
from mailnode.mail.mailboxes import create_mailbox
from mailnode.node import Node
from mailnode.schema.directory import organisations


@dataclass(frozen=True)
class Installed:
    """What ``init`` created; ``token`` is shown once and never stored."""

    org_id: str
    user_id: str
    token: str
    mailbox_id: str
    mailbox_address: str
    domain: str

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape."""
        return asdict(self)


def initialise(node: Node, *, org: str, domain: str, admin_email: str, mailbox: str | None = None) -> Installed:
    """Initialise an empty node. ``mailbox`` defaults to ``support@<domain>``.

    Raises ``E_ALREADY_INITIALISED`` (409), ``E_ORG_NEEDS_A_NAME`` / ``E_DOMAIN_MALFORMED`` /
    ``E_ADDRESS_MALFORMED`` / ``E_ADDRESS_NOT_ON_ORG_DOMAIN`` (422). Nothing is written on any error.
    """
    name = (org or "").strip()
    if not name:
        raise invalid("E_ORG_NEEDS_A_NAME", "The organisation needs a name.", "--org was empty.",
                      "Run mailnode init --org \"Example Ltd\" ...")
    dom = normalise_domain(domain)
    address = mailbox or f"support@{dom}"
    now = node.clock.now()
    with node.begin() as conn:
        existing = conn.execute(select(organisations.c.id, organisations.c.name)).first()
        if existing is not None:
            raise conflict("E_ALREADY_INITIALISED",
                           f"This data directory already holds the organisation {existing.name!r}.",
                           "init runs once per data directory.",
                           "Use mailnode token create for a new token, or init a different --data-dir.",
                           org_id=existing.id, data_dir=str(node.settings.data_dir))
        org_id = new_id("org")
        conn.execute(organisations.insert().values(id=org_id, name=name, created_at=now))
        audit.append(conn, org_id=org_id, at=now, action="org.created", actor_id=None, subject=org_id,
                     detail={"name": name}, actor_kind="installer")
        add_domain(conn, org_id=org_id, actor_id=None, at=now, domain=dom, check_admin=False)
        user = create_user(conn, org_id=org_id, actor_id=None, at=now, email=admin_email, name="")
        grant_unchecked(conn, org_id=org_id, at=now, subject_id=user["id"], relation="org.admin", object_id=org_id,
                        actor_id=None)
        box = create_mailbox(conn, org_id=org_id, actor_id=None, at=now, name=address.split("@")[0].title(),
                             addresses=[address])
        for relation in MAILBOX_RELATIONS:
            grant_unchecked(conn, org_id=org_id, at=now, subject_id=user["id"], relation=relation,
                            object_id=box["id"], actor_id=None)
        audit.append(conn, org_id=org_id, at=now, action="access.granted", actor_id=None, subject=user["id"],
                     detail={"relations": ["org.admin", *MAILBOX_RELATIONS], "mailbox_id": box["id"]},
                     actor_kind="installer")
        _, token = create_token(conn, org_id=org_id, principal_id=user["id"], at=now, actor_id=None, label="init")
    return Installed(org_id=org_id, user_id=user["id"], token=token, mailbox_id=box["id"],
                     mailbox_address=box["addresses"][0], domain=dom)
