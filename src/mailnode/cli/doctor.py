"""``mailnode doctor``: check the node and print the verdict."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from mailnode.cli.common import DataDir, JsonFlag, fail, open_node, org_id_of, out
from mailnode.errors import MailnodeError

commands = typer.Typer()  # mounted on the root by mailnode.cli


@commands.command()
def doctor(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Check the node; exit 0 ok, 1 degraded, 2 refuse. The same report is at GET /api/doctor."""
    from mailnode.doctor.checks import run_checks
    from mailnode.doctor.findings import EXIT_CODES, report

    try:
        node = open_node(data_dir)
        org_id = org_id_of(node)
        rep = report(run_checks(node, org_id))
        node.close()
    except MailnodeError as exc:
        fail(exc, 2)
        return
    if as_json:
        print(json.dumps(rep))
    else:
        table = Table("finding", "severity", "ok", "detail", "fix")
        for f in rep["findings"]:
            table.add_row(f["name"], f["severity"], "yes" if f["ok"] else "NO", f["detail"], f["fix"])
        out.print(table)
        out.print(f"verdict: [bold]{rep['verdict']}[/bold]")
    raise typer.Exit(EXIT_CODES[rep["verdict"]])
