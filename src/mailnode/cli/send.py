"""``mailnode send``: seal a send from the command line through the same seal the API uses.

Acts locally on the data directory (like ``mailnode mailbox create``) as a person of the organisation:
``--as`` names a user by id or address, by default the first administrator. The seal's checks all
apply (the user needs ``send.propose`` on the mailbox). The serving node's sweep hands the send over
after the hold window; this command starts no durable executor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mailnode.errors import MailnodeError

if TYPE_CHECKING:
    from mailnode.node import Node


def register(app: typer.Typer) -> None:
    """Add the ``send`` command to ``app`` (the ``mailnode`` Typer application)."""

    @app.command("send")
    def send(
        mailbox: Annotated[str, typer.Option(help="The sending mailbox's address (From).")],
        to: Annotated[list[str], typer.Option(help="A recipient address (repeatable).")],
        subject: Annotated[str, typer.Option(help="The Subject.")],
        body: Annotated[str | None, typer.Option(help="The plain-text body.")] = None,
        body_file: Annotated[Path | None, typer.Option(help="Read the body from this UTF-8 file.",
                                                          exists=True, dir_okay=False)] = None,
        cc: Annotated[list[str] | None, typer.Option(help="A Cc address (repeatable).")] = None,
        bcc: Annotated[list[str] | None, typer.Option(help="A Bcc address (repeatable).")] = None,
        as_user: Annotated[str | None, typer.Option("--as", help="User id or address (default: the first "
                                                       "administrator).")] = None,
        data_dir: Annotated[Path | None, typer.Option("--data-dir", envvar="MAILNODE_DATA_DIR",
                                                         help="The node's data directory.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> None:
        """Seal a send (exactly one of --body and --body-file); it leaves after the mailbox's hold window."""
        from mailnode.cli.common import fail, org_node, out

        try:
            if (body is None) == (body_file is None):
                raise MailnodeError(code="E_BODY_REQUIRED", what="Give exactly one of --body and --body-file.",
                                    why="The send needs one body.", fix="mailnode send ... --body 'text'",
                                    status=422)
            text = body if body is not None else Path(body_file or "").read_text(encoding="utf-8")
            with org_node(data_dir) as (node, org_id):
                sealed = seal_locally(node, org_id, mailbox=mailbox, to=to, cc=cc or [], bcc=bcc or [],
                                      subject=subject, body=text, as_user=as_user)
        except MailnodeError as exc:
            fail(exc)
            return
        if as_json:
            print(json.dumps({"send": sealed}))
        else:
            out.print(f"send {sealed['id']}  {sealed['state']}  release at {sealed['release_at']}")


def seal_locally(node: Node, org_id: str, *, mailbox: str, to: list[str], cc: list[str], bcc: list[str],
                 subject: str, body: str, as_user: str | None) -> dict[str, object]:
    """Resolve the mailbox address and the acting user, then ``seal``; returns the sealed send's JSON.

    Raises ``E_NO_SUCH_MAILBOX`` (404) for an address of no mailbox, ``E_NO_SUCH_USER`` (404), and the
    seal's codes.
    """
    from mailnode.directory.people import resolve_user
    from mailnode.errors import no_such_mailbox
    from mailnode.mail.mailboxes import mailbox_by_address
    from mailnode.outbound.seal import SealRequest, seal

    with node.read() as conn:
        hit = mailbox_by_address(conn, mailbox)
        if hit is None or hit.org_id != org_id:
            raise no_such_mailbox(mailbox)
        user = resolve_user(conn, org_id, as_user)
    sealed = seal(node, org_id=org_id, author_id=user.id, request=SealRequest(
        mailbox_id=hit.mailbox_id, to=to, cc=cc, bcc=bcc, subject=subject, body=body))
    return sealed.to_json()
