"""``mailnode receipt list|redrive``: quarantined receipts on the data directory (the installer).

Like ``mailnode token create``, these act with the authority of whoever can read the data directory and are
audited with ``actor_kind = installer``; the API's ``/api/receipts`` routes are for administrators. ``redrive``
clears the quarantine; the running ``mailnode serve`` materialises the receipt at its next repair scan (within
``MATERIALISE_SCAN_INTERVAL_SECONDS``), or at its next start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

receipt_app = typer.Typer(help="Receipts whose materialisation was quarantined.", no_args_is_help=True)

DataDir = Annotated[Path | None, typer.Option("--data-dir", envvar="MAILNODE_DATA_DIR",
                                                 help="The node's data directory.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


@receipt_app.command("list")
def receipt_list(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List the quarantined receipts with their code and error."""
    from mailnode import budgets
    from mailnode.cli.common import fail, org_node
    from mailnode.errors import MailnodeError
    from mailnode.ingress import quarantine

    try:
        with org_node(data_dir) as (node, org_id), node.read() as conn:
            items = quarantine.list_quarantined(conn, org_id=org_id, principal_id=None, now=node.clock.now(),
                                                limit=budgets.LIST_LIMIT_MAX)
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps({"receipts": items}))
        return
    for r in items:
        print(f"{r['id']}  {r['envelope_to']}  received {r['received_at']}  {r['quarantine_code']}: "
              f"{r['quarantine_error']}")
    if not items:
        print("no receipt is quarantined")


@receipt_app.command("redrive")
def receipt_redrive(
    receipt_id: Annotated[str, typer.Argument(help="The receipt's id (rcpt_...), from mailnode receipt list.")],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Clear a receipt's quarantine so the node materialises it again (audited receipt.redrive)."""
    from mailnode.cli.common import fail, org_node
    from mailnode.errors import MailnodeError
    from mailnode.ingress import quarantine

    try:
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            receipt = quarantine.redrive(conn, org_id=org_id, principal_id=None, receipt_id=receipt_id,
                                         at=node.clock.now())
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps({"receipt": receipt}))
    else:
        print(f"{receipt_id} re-driven (re-drive {receipt['redrives']}): mailnode serve materialises it at its next "
              "repair scan")


def register(app: typer.Typer) -> None:
    """Mount ``mailnode receipt`` on the root command."""
    app.add_typer(receipt_app, name="receipt")
