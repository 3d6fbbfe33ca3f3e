"""``mailnode mailbox``: create and list mailboxes."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from mailnode.cli.common import DataDir, JsonFlag, fail, org_node, out
from mailnode.errors import MailnodeError

mailbox_app = typer.Typer(help="Mailboxes.", no_args_is_help=True)


@mailbox_app.command("create")
def mailbox_create(
    name: Annotated[str, typer.Option(help="The mailbox's name.")],
    address: Annotated[list[str], typer.Option(help="An address on one of the organisation's domains (repeatable).")],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a mailbox with one or more addresses."""
    from mailnode.mail.mailboxes import create_mailbox

    try:
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            box = create_mailbox(conn, org_id=org_id, actor_id=None, at=node.clock.now(), name=name, addresses=address)
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps({"mailbox": box}))
    else:
        out.print(f"mailbox {box['id']}  {box['name']}  {', '.join(box['addresses'])}")


@mailbox_app.command("list")
def mailbox_list(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List every mailbox with its addresses and hold window."""
    from sqlalchemy import select

    from mailnode.mail.mailboxes import mailbox_json
    from mailnode.schema.mail import mailboxes

    try:
        with org_node(data_dir) as (node, org_id), node.read() as conn:
            boxes = [mailbox_json(conn, r) for r in conn.execute(
                select(mailboxes).where(mailboxes.c.org_id == org_id).order_by(mailboxes.c.id)).all()]
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps({"mailboxes": boxes}))
        return
    table = Table("id", "name", "addresses", "hold window (s)")
    for b in boxes:
        table.add_row(b["id"], b["name"], ", ".join(b["addresses"]), str(b["hold_window_seconds"]))
    out.print(table)
