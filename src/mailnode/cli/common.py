"""Helpers every command module shares: the consoles, the ``--data-dir`` and ``--json`` options, opening the
node of a data directory, and printing a ``MailnodeError`` in its four parts (``fail``).

No command module imports the root ``mailnode.cli``; each imports this module (issue 18).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from mailnode.errors import MailnodeError

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DataDir = Annotated[Path | None, typer.Option("--data-dir", envvar="MAILNODE_DATA_DIR",
                                              help="The node's data directory (default ./.mailnode).")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def fail(exc: MailnodeError, code: int = 1) -> None:
    """Print ``exc`` in its four parts on standard error and exit with ``code`` (1 unless told)."""
    err.print(exc.render(), markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def open_node(data_dir: Path | None, must_exist: bool = True) -> Any:
    """The ``Node`` of ``data_dir``; raises ``E_NOT_INITIALISED`` (409) when ``must_exist`` and it holds none."""
    from mailnode.config import load_settings
    from mailnode.node import Node

    settings = load_settings(data_dir)
    if must_exist and not settings.database_url and not (settings.data_dir / "mailnode.db").exists():
        raise MailnodeError(code="E_NOT_INITIALISED", what=f"No node in {settings.data_dir}.",
                            why="The data directory holds no database yet.",
                            fix=f"Run mailnode init --data-dir {settings.data_dir} --org NAME --domain DOMAIN "
                                "--admin-email EMAIL.", status=409, detail={"data_dir": str(settings.data_dir)})
    return Node.open(settings)


def org_id_of(node: Any) -> str | None:
    """The id of the node's organisation, or None before ``mailnode init``."""
    from sqlalchemy import select

    from mailnode.schema.directory import organisations

    with node.read() as conn:
        row = conn.execute(select(organisations.c.id)).first()
    return row.id if row else None


@contextmanager
def org_node(data_dir: Path | None) -> Iterator[tuple[Any, str]]:
    """The initialised node of ``data_dir`` and its organisation id; the node is closed however the block ends.

    Raises ``E_NOT_INITIALISED`` (409) for a data directory without a node or an organisation.
    """
    node = open_node(data_dir)
    try:
        yield node, require_org(node)
    finally:
        node.close()


def require_org(node: Any) -> str:
    """The id of the node's organisation; raises ``E_NOT_INITIALISED`` (409) before ``mailnode init``."""
    org_id = org_id_of(node)
    if org_id is None:
        raise MailnodeError(code="E_NOT_INITIALISED", what="The node has no organisation yet.",
                            why="mailnode init has not been run on this data directory.",
                            fix="Run mailnode init --org NAME --domain DOMAIN --admin-email EMAIL.", status=409)
    return org_id
