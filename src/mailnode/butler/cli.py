"""``mailnode butler``: check a Butler source offline and print the document's JSON Schema.

Issue 6 "CLI". ``butler_app`` is a Typer app the main CLI mounts as ``mailnode butler``. It imports
neither DBOS nor the database, so ``check`` works on a machine with no node. The API commands
(``create``, ``draft``, ``publish``, ``list``) arrive with the lifecycle.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from mailnode.butler.ast import json_schema
from mailnode.butler.check import check as check_source

butler_app = typer.Typer(help="Write and check Butlers: small deterministic programs that answer or triage mail.",
                         no_args_is_help=True)

#: Exit codes of ``check``: clean, findings. (Typer itself exits 2 on a usage error or a missing file.)
EXIT_CLEAN = 0
EXIT_FINDINGS = 1


@butler_app.command("check")
def check_command(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True,
                                         help="A Butler source (JSON), read as bytes exactly as it would be submitted.")],
) -> None:
    """Check a Butler source offline and print every finding (exit 0 clean, 1 with findings)."""
    result = check_source(file.read_bytes())
    if result.ok and result.ast is not None and result.price is not None:
        typer.echo(f"ok  {result.ast.metadata.name}: {len(result.ast.nodes)} nodes, "
                   f"priced at {result.price.total} statements")
        typer.echo(f"  ast_sha256     {result.ast_sha256}")
        typer.echo(f"  source_sha256  {result.source_sha256}")
        raise typer.Exit(EXIT_CLEAN)
    typer.echo(result.render())
    count = len(result.findings)
    typer.echo(f"\n{count} finding{'s' if count != 1 else ''} in {file}", err=True)
    raise typer.Exit(EXIT_FINDINGS)


@butler_app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of a Butler document (for editors)."""
    sys.stdout.write(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
