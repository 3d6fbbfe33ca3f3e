"""``mailnode app create``: an application principal and its token from the data directory (administrator)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

app_app = typer.Typer(help="Application principals (app_...) that send transactional mail.", no_args_is_help=True)


@app_app.command("create")
def app_create(
    name: Annotated[str, typer.Argument(help="The application's name, unique in the organisation.")],
    data_dir: Annotated[Optional[Path], typer.Option("--data-dir", envvar="MAILNODE_DATA_DIR",
                                                     help="The node's data directory.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Create an application and print its token once (grant it send.propose with mailnode access grant)."""
    from mailnode.cli import _fail, _org_node
    from mailnode.errors import MailnodeError
    from mailnode.notify.apps import create_application

    try:
        with _org_node(data_dir) as (node, org_id), node.begin() as conn:
            made = create_application(conn, org_id=org_id, actor_id=None, at=node.clock.now(), name=name,
                                      check_admin=False)
    except MailnodeError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps({"app_id": made["application"]["id"], "token": made["token"]}))
    else:
        print(f"application {made['application']['name']} ({made['application']['id']}): {made['token']}   (shown once)")


def register(app: typer.Typer) -> None:
    """Mount ``mailnode app`` on the root command."""
    app.add_typer(app_app, name="app")
