"""``mailnode breakers limits|set-limits``: the organisation's breaker limits from the shell (the installer).

The same service as ``GET/PATCH /api/breaker-limits`` (``governance.limits``): acting with the authority of
whoever can read the data directory, audited ``breaker_limits.changed`` with ``actor_kind = installer``.
Refusals print the four-part error and exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

breakers_app = typer.Typer(help="The rate breakers' per-organisation limits.", no_args_is_help=True)

DataDir = Annotated[Path | None, typer.Option("--data-dir", envvar="MAILNODE_DATA_DIR",
                                                 help="The node's data directory.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
Limit = Annotated[int | None, typer.Option(help="Set this limit (see `mailnode breakers limits` for bounds).")]


def _print(shown: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(shown))
        return
    for item in shown["limits"]:
        mark = "set" if item["overridden"] else "default"
        print(f"{item['name']}: {item['value']} {item['unit']} ({mark}; default {item['default']} from "
              f"{item['source']}; {item['minimum']}..{item['maximum']})")


@breakers_app.command("limits")
def limits_show(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Show each breaker limit in force, its default, where the default came from and its bounds."""
    from mailnode.cli.common import fail, org_node
    from mailnode.errors import MailnodeError
    from mailnode.governance import limits

    try:
        with org_node(data_dir) as (node, org_id), node.read() as conn:
            shown = limits.read(conn, org_id=org_id, actor_id=None)
    except MailnodeError as exc:
        fail(exc)
        return
    _print(shown, as_json)


@breakers_app.command("set-limits")
def limits_set(
    volume_max_recipients: Limit = None,
    bounce_max_percent: Limit = None,
    bounce_min_observations: Limit = None,
    complaint_max_percent: Limit = None,
    complaint_min_observations: Limit = None,
    reset: Annotated[list[str] | None, typer.Option(help="Reset this limit to its default (repeatable).")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Set some limits, or reset them to their defaults; audited ``breaker_limits.changed``."""
    from mailnode.cli.common import fail, org_node
    from mailnode.errors import MailnodeError
    from mailnode.governance import limits

    given = {"volume_max_recipients": volume_max_recipients, "bounce_max_percent": bounce_max_percent,
             "bounce_min_observations": bounce_min_observations, "complaint_max_percent": complaint_max_percent,
             "complaint_min_observations": complaint_min_observations}
    changes: dict[str, object] = {k: v for k, v in given.items() if v is not None}
    for name in reset or []:
        changes[name] = None
    try:
        with org_node(data_dir) as (node, org_id), node.begin() as conn:
            shown = limits.change(conn, org_id=org_id, actor_id=None, changes=changes, now=node.clock.now())
    except MailnodeError as exc:
        fail(exc)
        return
    _print(shown, as_json)


def register(app: typer.Typer) -> None:
    """Mount ``breakers`` on the root command."""
    app.add_typer(breakers_app, name="breakers")
