"""``mailnode app create|list|token``: application principals on the data directory (the installer).

Like ``mailnode token create``, these act with the authority of whoever can read the data directory and
are audited with ``actor_kind = installer``; the API's ``/api/apps`` routes are for administrators. A token
is printed once, by ``create`` or ``token``, and never again (``list`` shows token ids only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app_app = typer.Typer(help="Application principals (app_...) that send transactional mail.", no_args_is_help=True)

DataDir = Annotated[Path | None, typer.Option("--data-dir", envvar="MAILNODE_DATA_DIR",
                                                 help="The node's data directory.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


@app_app.command("create")
def app_create(
    name: Annotated[str, typer.Argument(help="The application's name, unique in the organisation.")],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Create an application and print its token once (grant it send.propose with mailnode access grant)."""
    from mailnode.cli.common import fail, org_node
    from mailnode.directory.applications import create_application
    from mailnode.errors import MailnodeError

    try:
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            made = create_application(conn, org_id=org_id, actor_id=None, at=node.clock.now(), name=name,
                                      check_admin=False)
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps({"app_id": made["application"]["id"], "token": made["token"]}))
    else:
        print(f"application {made['application']['name']} ({made['application']['id']}): "
              f"{made['token']}   (shown once)")


@app_app.command("list")
def app_list(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List the applications with their token ids (a token itself is never shown again)."""
    from mailnode.cli.common import fail, org_node
    from mailnode.directory.applications import list_applications
    from mailnode.errors import MailnodeError

    try:
        with org_node(data_dir) as (node, org_id), node.read() as conn:
            apps = list_applications(conn, org_id=org_id, actor_id=None)
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps({"applications": apps}))
        return
    for a in apps:
        live = [t["id"] for t in a["tokens"] if t["revoked_at"] is None]
        print(f"{a['id']}  {a['name']}  created {a['created_at']}  tokens: {', '.join(live) or 'none live'}")


@app_app.command("token")
def app_token(
    app: Annotated[str, typer.Argument(help="The application's id (app_...) or name.")],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Mint a replacement token for an application and print it once (revoke the lost one with
    DELETE /api/tokens/{id})."""
    from mailnode.cli.common import fail, org_node
    from mailnode.directory.applications import mint_application_token
    from mailnode.errors import MailnodeError

    try:
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            made = mint_application_token(conn, org_id=org_id, actor_id=None, at=node.clock.now(), ref=app)
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps({"app_id": made["application"]["id"], "token_id": made["token_id"], "token": made["token"]}))
    else:
        print(f"token for application {made['application']['name']} ({made['application']['id']}): "
              f"{made['token']}   (shown once)")


def register(app: typer.Typer) -> None:
    """Mount ``mailnode app`` on the root command."""
    app.add_typer(app_app, name="app")
