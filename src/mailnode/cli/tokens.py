"""``mailnode token``: mint API tokens."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from mailnode.cli.common import DataDir, JsonFlag, fail, org_node, out
from mailnode.errors import MailnodeError

token_app = typer.Typer(help="API tokens.", no_args_is_help=True)


@token_app.command("create")
def token_create(
    user: Annotated[str | None, typer.Option(help="User id or email (default: the first administrator).")] = None,
    label: Annotated[str, typer.Option(help="A label to recognise the token by (one printable line).")] = "cli",
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Mint a token for a user; the token is printed once."""
    from mailnode.directory.people import resolve_user
    from mailnode.directory.tokens import create_token

    try:
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            row = resolve_user(conn, org_id, user)
            tid, plaintext = create_token(conn, org_id=org_id, principal_id=row.id, at=node.clock.now(),
                                          actor_id=None, label=label)
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps({"token_id": tid, "user_id": row.id, "token": plaintext}))
    else:
        out.print(f"token for {row.email} ({row.id}): [bold]{plaintext}[/bold]   (shown once)")
