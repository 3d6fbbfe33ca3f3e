"""``mailnode init``, ``quickstart`` and ``serve``: create a node and run it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from mailnode.budgets import SEND_HOLD_WINDOW_DEFAULT_SECONDS
from mailnode.cli.common import DataDir, JsonFlag, fail, open_node, out
from mailnode.errors import MailnodeError

commands = typer.Typer()  # mounted on the root by mailnode.cli


@commands.command()
def init(
    org: Annotated[str, typer.Option(help="The organisation's name.")],
    domain: Annotated[str, typer.Option(help="The organisation's first mail domain.")],
    admin_email: Annotated[str, typer.Option(help="The first administrator's address.")],
    mailbox: Annotated[str | None, typer.Option(help="The first mailbox's address (default support@DOMAIN).")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Create the organisation, first administrator, first mailbox and a token (printed once). Runs once."""
    from mailnode.install import initialise

    try:
        node = open_node(data_dir, must_exist=False)
        try:
            done = initialise(node, org=org, domain=domain, admin_email=admin_email, mailbox=mailbox)
        finally:
            node.close()
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps(done.to_json()))
        return
    out.print(f"[bold]Initialised[/bold] {org} in {node.settings.data_dir}")
    out.print(f"  organisation  {done.org_id}")
    out.print(f"  administrator {done.user_id} ({admin_email})")
    out.print(f"  mailbox       {done.mailbox_id} ({done.mailbox_address})")
    out.print(f"  token         [bold]{done.token}[/bold]   (shown once: keep it)")


def _self_command() -> str:
    """How to run this same mailnode again: the script that is running, else ``python -m mailnode.cli``."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "mailnode":
        return str(argv0)
    return f"{sys.executable} -m mailnode.cli"


@commands.command()
def quickstart(
    data_dir: DataDir = None,
    org: Annotated[str, typer.Option(help="Organisation name for a first run.")] = "Example",
    domain: Annotated[str, typer.Option(help="Mail domain for a first run.")] = "example.test",
    admin_email: Annotated[str, typer.Option(help="Administrator address for a first run.")] = "admin@example.test",
) -> None:
    """Initialise the data directory on first run (printing the token once) and say what to try next."""
    from mailnode.config import load_settings
    from mailnode.install import initialise

    settings = load_settings(data_dir)
    if settings.database_url or (settings.data_dir / "mailnode.db").exists():
        out.print(f"Node already initialised in {settings.data_dir}; mint a token with: "
                  f"{_self_command()} token create --data-dir {settings.data_dir}", markup=False, highlight=False)
        return
    try:
        node = open_node(data_dir, must_exist=False)
        done = initialise(node, org=org, domain=domain, admin_email=admin_email)
        node.close()
    except MailnodeError as exc:
        fail(exc)
        return
    out.print(f"[bold]Initialised[/bold] {org} in {settings.data_dir}; administrator {admin_email}, "
              f"mailbox {done.mailbox_address}")
    out.print(f"token (shown once): [bold]{done.token}[/bold]")
    for line in quickstart_steps(http=settings.http, smtp=settings.smtp, mailbox=done.mailbox_address,
                                 token=done.token, transport=settings.transport, outbox=settings.outbox_dir,
                                 command=f"{_self_command()} doctor --data-dir {settings.data_dir}"):
        out.print(line, markup=False, highlight=False)


#: The test message ``quickstart`` tells a newcomer to send (CRLF line ends, as SMTP wants them).
QUICKSTART_MESSAGE = "From: Bob <bob@example.net>\\r\\nTo: {mailbox}\\r\\nSubject: Opening hours\\r\\n\\r\\n" \
                     "Are you open on Saturday morning?\\r\\n"


def quickstart_steps(*, http: str, smtp: str, mailbox: str, token: str, transport: str, outbox: Path,
                     command: str) -> list[str]:
    """The lines ``mailnode quickstart`` prints after the token (pure): open the web inbox at ``http``
    (HOST:PORT), mail ``mailbox`` over SMTP at ``smtp`` (HOST:PORT) with a ``curl`` line that can be pasted as
    it stands, answer it in the page, find the reply (in ``outbox`` for the ``file`` transport), then the API
    with ``token`` and ``command`` (the doctor). Mirrored by the README's quick start and docs/quickstart.md."""
    web = f"http://{http}/"
    message = QUICKSTART_MESSAGE.format(mailbox=mailbox)
    where = f"written to {outbox}/" if transport == "file" else f"handed to the {transport} transport"
    return [
        "Next, while the node runs (docs/quickstart.md walks through each step with pictures):",
        f"  1. open {web} in a browser and sign in with this token (the web inbox)",
        f"  2. mail {mailbox} over SMTP on {smtp}; it shows in the queue's Unassigned tab within seconds:",
        f"     printf '{message}' | curl -sS smtp://{smtp} --mail-from bob@example.net --mail-rcpt {mailbox} -T -",
        "  3. open it, press Claim, then Reply, write, Send: the reply is held for the mailbox's hold window",
        f"     ({SEND_HOLD_WINDOW_DEFAULT_SECONDS} s; Cancel stops it), then {where}",
        (f"  4. the API: curl -H 'Authorization: Bearer {token}' http://{http}/api/mailboxes "
         f"(every route: http://{http}/docs)"),
        f"  5. what the node thinks of itself: {command}",
    ]


@commands.command()
def serve(
    data_dir: DataDir = None,
    http: Annotated[str | None, typer.Option(help="HTTP listen address HOST:PORT (default 127.0.0.1:8025).")] = None,
    smtp: Annotated[str | None, typer.Option(help="SMTP listen address HOST:PORT (default 127.0.0.1:2525).")] = None,
) -> None:
    """Run the API, the SMTP listener and the durable executor until interrupted (SIGINT/SIGTERM)."""
    from mailnode.config import load_settings
    from mailnode.server import run_server

    try:
        settings = load_settings(data_dir, http=http, smtp=smtp)
        run_server(settings)
    except MailnodeError as exc:
        fail(exc)
