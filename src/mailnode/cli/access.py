"""``mailnode access``: grant relations as the installer."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from mailnode.cli.common import DataDir, JsonFlag, fail, org_node, out
from mailnode.errors import MailnodeError

access_app = typer.Typer(help="Relations people, teams, Butlers and applications hold.", no_args_is_help=True)


@access_app.command("grant")
def access_grant(
    subject: Annotated[str, typer.Option(help="A user's id or address, a team's id or name, or a btl_/app_ id.")],
    relation: Annotated[str, typer.Option(help="org.admin, mailbox.metadata.read, mailbox.content.read, "
                                               "send.propose or approval.decide.")],
    mailbox: Annotated[str | None, typer.Option(help="The mailbox's id or one of its addresses "
                                                     "(not for org.admin).")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Grant a relation as the installer at the data directory (the API's POST /api/access, for administrators)."""
    from sqlalchemy import func, select

    from mailnode import authz
    from mailnode.mail.mailboxes import mailbox_by_address
    from mailnode.schema.directory import teams, users

    try:
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            subject_id = subject
            if "@" in subject:
                row = conn.execute(select(users.c.id).where(users.c.org_id == org_id,
                                                            func.lower(users.c.email) == subject.lower())).first()
                subject_id = row.id if row else subject
            elif not subject.startswith(("usr_", "tm_", "btl_", "app_")):
                row = conn.execute(select(teams.c.id).where(teams.c.org_id == org_id, teams.c.name == subject)).first()
                subject_id = row.id if row else subject
            object_id = org_id
            if relation != "org.admin":
                if not mailbox:
                    raise MailnodeError(code="E_MAILBOX_REQUIRED", what=f"{relation} is held on a mailbox.",
                                        why="Every relation but org.admin names the mailbox it is held on.",
                                        fix="Add --mailbox ADDRESS (see mailnode mailbox list).", status=422)
                hit = mailbox_by_address(conn, mailbox) if "@" in mailbox else None
                object_id = hit.mailbox_id if hit else mailbox
            g = authz.grant(conn, org_id=org_id, actor_id=None, at=node.clock.now(), subject_id=subject_id,
                            relation=relation, object_id=object_id)
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps({"grant": g.to_json()}))
    else:
        out.print(f"granted {g.relation} on {g.object_id} to {g.subject_id} ({g.id})")
