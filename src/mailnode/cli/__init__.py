"""The ``mailnode`` command line: a thin layer over the same services the API uses.

One module per command group (``node``, ``tokens``, ``mailboxes``, ``access``, ``audit``, ``ingest``,
``doctor``, ...) and the shared helpers in ``common``; this root only mounts them, and no command module
imports it. Every command takes ``--data-dir`` (default ``MAILNODE_DATA_DIR``, else ``./.mailnode``). A
``MailnodeError`` is printed in its four-part form (code, what, why, fix) on standard error with exit
code 1 (2 for ``doctor``'s refuse verdict). Local administrative commands (``token create``,
``mailbox create``) act with the authority of whoever can read the data directory and are audited with
``actor_kind = installer``.
"""

from __future__ import annotations

import typer

from mailnode import wiring
from mailnode.cli import access, audit, doctor, ingest, mailboxes, node, tokens

app = typer.Typer(name="mailnode", help="A self-hosted mail node.", no_args_is_help=True, add_completion=False)

# Commands of the root itself, in the order ``mailnode --help`` lists them.
for _module in (node, ingest, doctor):
    app.registered_commands.extend(_module.commands.registered_commands)
app.add_typer(tokens.token_app, name="token")
app.add_typer(mailboxes.mailbox_app, name="mailbox")
app.add_typer(audit.audit_app, name="audit")
app.add_typer(access.access_app, name="access")


def _mount_domain_commands() -> None:
    """Mount the other command groups (an import error here is a defect, not a skip).

    ``butler`` and ``demo`` keep their command line beside their domain; the rest are modules of this package.
    """
    from mailnode.butler.cli import butler_app
    from mailnode.cli.apps import register as register_app
    from mailnode.cli.breakers import register as register_breakers
    from mailnode.cli.receipts import register as register_receipt
    from mailnode.cli.send import register as register_send
    from mailnode.cli.suppressions import register as register_suppressions
    from mailnode.demo.cli import register as register_demo

    app.add_typer(butler_app, name="butler")
    register_send(app)
    register_demo(app)
    register_app(app)
    register_receipt(app)
    register_breakers(app)
    register_suppressions(app)


_mount_domain_commands()


def main() -> None:
    """Console-script entry point: wire the hooks a lower layer calls into a higher one (``mailnode.wiring``;
    a command that cancels a send ends the Butler run parked on it), then run the command."""
    wiring.wire_hooks()
    app()
