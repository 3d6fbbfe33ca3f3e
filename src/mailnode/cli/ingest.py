"""``mailnode ingest``: deliver .eml files through the receipt path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from mailnode.cli.common import DataDir, JsonFlag, err, fail, open_node, out
from mailnode.errors import MailnodeError

commands = typer.Typer()  # mounted on the root by mailnode.cli


@commands.command()
def ingest(
    files: Annotated[list[Path], typer.Argument(help=".eml files to deliver.", exists=True, dir_okay=False)],
    mail_from: Annotated[str, typer.Option("--mail-from",
                                           help="Envelope sender; '<>' or '' is the null reverse path.")],
    rcpt_to: Annotated[list[str], typer.Option("--rcpt-to", help="Envelope recipient on this node (repeatable).")],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Deliver .eml files through the same receipt path as SMTP and report what each became.

    Shows a progress bar on standard error while it works (files done, files a second) and ends with a table
    and a count of what the files became (message, delivery report, automated, unreadable, refused).

    Materialises in this process (no durable executor is started, so it may run beside mailnode serve).
    """
    from mailnode.ingress import receipts, routing
    from mailnode.ingress.materialise import materialise_receipt

    try:
        node = open_node(data_dir)
        with node.read() as conn:
            routes = []
            for address in rcpt_to:
                route = routing.resolve(conn, address, node.settings.bounce_domain)
                if route is None:
                    raise MailnodeError(code="E_NO_SUCH_RECIPIENT", what=f"{address} is not an address of this node.",
                                        why="Mail is accepted only for mailbox addresses and VERP bounce addresses.",
                                        fix="List addresses with mailnode mailbox list.", status=404,
                                        detail={"address": address})
                routes.append(route)
    except MailnodeError as exc:
        fail(exc)
        return
    from contextlib import ExitStack

    from mailnode.ingress import ingest_report

    results: list[dict[str, Any]] = []
    failed = False
    bar = ExitStack()  # the progress bar, on standard error; none with --json (a script reads the output)
    advance = (lambda name: None) if as_json else bar.enter_context(ingest_report.progress(len(files), err))
    for path in files:
        raw = path.read_bytes()
        try:
            ids = receipts.accept(node, raw, receipts.Envelope(mail_from=mail_from, routes=tuple(routes),
                                                               source="ingest"))
            for rid in ids:
                done = materialise_receipt(node, rid)
                with node.read() as conn:
                    from sqlalchemy import select

                    from mailnode.schema.mail_messages import messages

                    m = conn.execute(select(messages).where(messages.c.id == done.message_id)).one()
                results.append({"file": str(path), "receipt_id": rid, "message_id": done.message_id,
                                "conversation_id": done.conversation_id, "case_id": done.case_id,
                                "automated": m.automated, "reply_refusal": m.reply_refusal,
                                "report_kind": m.report_kind, "parse_error": m.parse_error})
        except MailnodeError as exc:
            failed = True
            results.append({"file": str(path), "error": exc.code, "message": exc.what})
        advance(path.name)
    bar.close()
    node.close()
    if as_json:
        print(json.dumps({"ingested": results}))
    else:
        table = Table("file", "message", "conversation", "case", "automated", "parse error")
        for r in results:
            if "error" in r:
                table.add_row(r["file"], f"[red]{r['error']}[/red] {r['message']}", "", "", "", "")
            else:
                table.add_row(r["file"], r["message_id"], r["conversation_id"], r["case_id"], r["automated"] or "",
                              (r["parse_error"] or "")[:60])
        out.print(table)
        out.print(ingest_report.tally_line(results), highlight=False)
    if failed:
        raise typer.Exit(1)
