"""``mailnode audit``: verify the audit hash chain."""

from __future__ import annotations

import json

import typer

from mailnode.cli.common import DataDir, JsonFlag, err, fail, org_node, out
from mailnode.errors import MailnodeError

audit_app = typer.Typer(help="The audit trail.", no_args_is_help=True)


@audit_app.command("verify")
def audit_verify(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Verify the audit hash chain and record the verdict (``audit.verified``); exit 1 and name the first
    broken sequence number if it is broken."""
    from mailnode import audit

    try:
        with org_node(data_dir) as (node, org_id):
            # The walk is a read; only the record takes the write transaction (``record_verification``).
            with node.read() as conn:
                result = audit.verify(conn, org_id)
            with node.begin() as conn:
                audit.record_verification(conn, org_id, result, actor_id=None, now=node.clock.now())
    except MailnodeError as exc:
        fail(exc)
        return
    if as_json:
        print(json.dumps(result.to_json()))
    elif result.intact:
        out.print(f"audit chain intact: {result.checked} entries verified")
    else:
        err.print(f"audit chain BROKEN at seq {result.broken_seq} ({result.broken_id}): {result.reason}\n"
                  f"  {result.checked} entries before it verified", markup=False)
    if not result.intact:
        raise typer.Exit(1)
