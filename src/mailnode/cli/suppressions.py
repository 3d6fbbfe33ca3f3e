"""``mailnode suppressions list|add|remove|import|export``: the suppression list from the shell (the installer).

The same service as ``/api/suppressions`` (``outbound.suppression``), acting with the authority of whoever can
read the data directory: adds, removals and imports are audited with ``actor_kind = installer``. Refusals print
the four-part error and exit 1; an import is all or nothing, like the API's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from mailnode.cli.common import DataDir, JsonFlag, fail, org_node

suppressions_app = typer.Typer(help="The organisation's suppression list.", no_args_is_help=True)

Address = Annotated[str, typer.Argument(help="An email address.")]


def _line(item: dict[str, object]) -> str:
    cause = item.get("event_id") or item.get("added_by") or "installer"
    return f"{item['address']}\t{item['reason']}\t{item['created_at']}\t{cause}"


@suppressions_app.command("list")
def list_command(
    q: Annotated[str | None, typer.Option("--search", help="A part of the address (or all of it with --exact).")]
    = None,
    exact: Annotated[bool, typer.Option(help="--search names the whole address.")] = False,
    reason: Annotated[str | None, typer.Option(help="Only this reason (hard_bounce, complaint, manual, import).")]
    = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    cursor: Annotated[str | None, typer.Option(help="Continue after this id (the last one printed).")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List the suppressed addresses, newest first: address, reason, when, and the event or person behind it."""
    from mailnode import budgets
    from mailnode.errors import MailnodeError
    from mailnode.outbound import suppression

    try:
        wanted = suppression.parse_reason(reason)
        with org_node(data_dir) as (node, org_id), node.read() as conn:
            rows = suppression.list_page(conn, org_id=org_id,
                                         filters=suppression.ListFilter(q=q, exact=exact, reason=wanted),
                                         limit=max(1, min(limit, budgets.LIST_LIMIT_MAX)), cursor=cursor)
    except MailnodeError as exc:
        fail(exc)
        return
    items = [r.to_json() for r in rows]
    if as_json:
        print(json.dumps({"suppressions": items}))
        return
    for item in items:
        print(_line(item))


@suppressions_app.command("add")
def add_command(address: Address, note: Annotated[str | None, typer.Option(help="Why (kept on the row).")] = None,
                data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Put an address on the list (reason ``manual``); audited ``suppression.added``."""
    from mailnode.errors import MailnodeError
    from mailnode.outbound import suppression

    try:
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            row = suppression.add_manual(conn, org_id=org_id, actor_id=None, address=address, at=node.clock.now(),
                                         note=note)
    except MailnodeError as exc:
        fail(exc)
        return
    print(json.dumps({"suppression": row.to_json()}) if as_json else _line(row.to_json()))


@suppressions_app.command("remove")
def remove_command(address: Address,
                   reason: Annotated[str, typer.Option(help="Why it comes off the list (required; audited).")] = "",
                   data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Take an address off the list; ``--reason`` is required and audited ``suppression.removed``."""
    from mailnode.errors import MailnodeError
    from mailnode.outbound import suppression

    try:
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            row = suppression.remove(conn, org_id=org_id, actor_id=None, address=address, reason=reason,
                                     at=node.clock.now())
    except MailnodeError as exc:
        fail(exc)
        return
    print(json.dumps({"removed": row.to_json()}) if as_json else f"removed {row.address} (was {row.reason})")


@suppressions_app.command("import")
def import_command(path: Annotated[Path, typer.Argument(help="A CSV file (header row naming address), or -.")],
                   data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Add every address of a CSV file, all or nothing (a bad line is named and nothing is written)."""
    from mailnode.errors import MailnodeError, invalid
    from mailnode.outbound import suppression

    try:
        try:
            data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
        except OSError as exc:
            raise invalid("E_SUPPRESSION_IMPORT_UNREADABLE", f"{path} could not be read ({exc.strerror}).",
                          "The import reads the whole file before writing anything.",
                          "Name a readable CSV file, or - for standard input.", path=str(path)) from None
        rows = suppression.parse_csv(data)
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            result = suppression.import_rows(conn, org_id=org_id, actor_id=None, rows=rows, at=node.clock.now())
    except MailnodeError as exc:
        fail(exc)
        return
    shown = result.to_json()
    print(json.dumps(shown) if as_json else f"imported: {shown['added']} added, {shown['already']} already listed")


@suppressions_app.command("export")
def export_command(data_dir: DataDir = None) -> None:
    """Print the whole list as CSV (the columns ``GET /api/suppressions/export.csv`` writes)."""
    from mailnode.errors import MailnodeError
    from mailnode.outbound import suppression

    try:
        with org_node(data_dir) as (node, org_id), node.read() as conn:
            text = suppression.export_csv(conn, org_id=org_id)
    except MailnodeError as exc:
        fail(exc)
        return
    sys.stdout.write(text)


def register(app: typer.Typer) -> None:
    """Mount ``suppressions`` on the root command."""
    app.add_typer(suppressions_app, name="suppressions")
