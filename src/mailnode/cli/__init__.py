"""The ``mailnode`` command line: a thin layer over the same services the API uses.

Every command takes ``--data-dir`` (default ``MAILNODE_DATA_DIR``, else ``./.mailnode``). A
``MailnodeError`` is printed in its four-part form (code, what, why, fix) on standard error with exit
code 1 (2 for ``doctor``'s refuse verdict). Local administrative commands (``token create``,
``mailbox create``) act with the authority of whoever can read the data directory and are audited with
``actor_kind = installer``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from mailnode.errors import MailnodeError

app = typer.Typer(name="mailnode", help="A self-hosted mail node.", no_args_is_help=True, add_completion=False)
token_app = typer.Typer(help="API tokens.", no_args_is_help=True)
mailbox_app = typer.Typer(help="Mailboxes.", no_args_is_help=True)
audit_app = typer.Typer(help="The audit trail.", no_args_is_help=True)
access_app = typer.Typer(help="Relations people, teams, Butlers and applications hold.", no_args_is_help=True)
app.add_typer(token_app, name="token")
app.add_typer(mailbox_app, name="mailbox")
app.add_typer(audit_app, name="audit")
app.add_typer(access_app, name="access")

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DataDir = Annotated[Optional[Path], typer.Option("--data-dir", envvar="MAILNODE_DATA_DIR",
                                                 help="The node's data directory (default ./.mailnode).")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def _fail(exc: MailnodeError, code: int = 1) -> None:
    err.print(exc.render(), markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _open(data_dir: Path | None, must_exist: bool = True) -> Any:
    from mailnode.config import load_settings
    from mailnode.node import Node

    settings = load_settings(data_dir)
    if must_exist and not settings.database_url and not (settings.data_dir / "mailnode.db").exists():
        raise MailnodeError(code="E_NOT_INITIALISED", what=f"No node in {settings.data_dir}.",
                            why="The data directory holds no database yet.",
                            fix=f"Run mailnode init --data-dir {settings.data_dir} --org NAME --domain DOMAIN "
                                "--admin-email EMAIL.", status=409, detail={"data_dir": str(settings.data_dir)})
    return Node.open(settings)


def _org_id(node: Any) -> str | None:
    from sqlalchemy import select

    from mailnode.directory.tables import organisations

    with node.read() as conn:
        row = conn.execute(select(organisations.c.id)).first()
    return row.id if row else None


@contextmanager
def _org_node(data_dir: Path | None) -> Iterator[tuple[Any, str]]:
    """The initialised node of ``data_dir`` and its organisation id; the node is closed however the block ends.

    Raises ``E_NOT_INITIALISED`` (409) for a data directory without a node or an organisation.
    """
    node = _open(data_dir)
    try:
        yield node, _require_org(node)
    finally:
        node.close()


def _require_org(node: Any) -> str:
    org_id = _org_id(node)
    if org_id is None:
        raise MailnodeError(code="E_NOT_INITIALISED", what="The node has no organisation yet.",
                            why="mailnode init has not been run on this data directory.",
                            fix="Run mailnode init --org NAME --domain DOMAIN --admin-email EMAIL.", status=409)
    return org_id


@app.command()
def init(
    org: Annotated[str, typer.Option(help="The organisation's name.")],
    domain: Annotated[str, typer.Option(help="The organisation's first mail domain.")],
    admin_email: Annotated[str, typer.Option(help="The first administrator's address.")],
    mailbox: Annotated[Optional[str], typer.Option(help="The first mailbox's address (default support@DOMAIN).")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Create the organisation, first administrator, first mailbox and a token (printed once). Runs once."""
    from mailnode.directory.install import initialise

    try:
        node = _open(data_dir, must_exist=False)
        try:
            done = initialise(node, org=org, domain=domain, admin_email=admin_email, mailbox=mailbox)
        finally:
            node.close()
    except MailnodeError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps(done.to_json()))
        return
    out.print(f"[bold]Initialised[/bold] {org} in {node.settings.data_dir}")
    out.print(f"  organisation  {done.org_id}")
    out.print(f"  administrator {done.user_id} ({admin_email})")
    out.print(f"  mailbox       {done.mailbox_id} ({done.mailbox_address})")
    out.print(f"  token         [bold]{done.token}[/bold]   (shown once: keep it)")


def _self_command() -> str:
    """How to run this same mailnode again: the script that is running, else ``python -m mailnode.cli``."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "mailnode":
        return str(argv0)
    return f"{sys.executable} -m mailnode.cli"


@app.command()
def quickstart(
    data_dir: DataDir = None,
    org: Annotated[str, typer.Option(help="Organisation name for a first run.")] = "Example",
    domain: Annotated[str, typer.Option(help="Mail domain for a first run.")] = "example.test",
    admin_email: Annotated[str, typer.Option(help="Administrator address for a first run.")] = "admin@example.test",
) -> None:
    """Initialise the data directory on first run (printing the token once) and say what to try next."""
    from mailnode.config import load_settings
    from mailnode.directory.install import initialise

    settings = load_settings(data_dir)
    http = settings.http
    if settings.database_url or (settings.data_dir / "mailnode.db").exists():
        out.print(f"Node already initialised in {settings.data_dir}; mint a token with: "
                  f"mailnode token create --data-dir {settings.data_dir}")
        return
    try:
        node = _open(data_dir, must_exist=False)
        done = initialise(node, org=org, domain=domain, admin_email=admin_email)
        node.close()
    except MailnodeError as exc:
        _fail(exc)
        return
    out.print(f"[bold]Initialised[/bold] {org} in {settings.data_dir}; administrator {admin_email}")
    out.print(f"token (shown once): [bold]{done.token}[/bold]")
    out.print("Next, while the node runs (docs/quickstart.md walks on from here to a released reply):")
    out.print(f"  1. open http://{http}/ in a browser and sign in with this token (the web inbox)")
    out.print(f"  2. curl -H 'Authorization: Bearer {done.token}' http://{http}/api/mailboxes")
    out.print(f"  3. open http://{http}/docs for every route")
    out.print(f"  4. {_self_command()} doctor --data-dir {settings.data_dir}")


@app.command()
def serve(
    data_dir: DataDir = None,
    http: Annotated[Optional[str], typer.Option(help="HTTP listen address HOST:PORT (default 127.0.0.1:8025).")] = None,
    smtp: Annotated[Optional[str], typer.Option(help="SMTP listen address HOST:PORT (default 127.0.0.1:2525).")] = None,
) -> None:
    """Run the API, the SMTP listener and the durable executor until interrupted (SIGINT/SIGTERM)."""
    from mailnode.config import load_settings
    from mailnode.server import run_server

    try:
        settings = load_settings(data_dir, http=http, smtp=smtp)
        run_server(settings)
    except MailnodeError as exc:
        _fail(exc)


@token_app.command("create")
def token_create(
    user: Annotated[Optional[str], typer.Option(help="User id or email (default: the first administrator).")] = None,
    label: Annotated[str, typer.Option(help="A label to recognise the token by (one printable line).")] = "cli",
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Mint a token for a user; the token is printed once."""
    from mailnode.directory.people import resolve_user
    from mailnode.directory.tokens import create_token

    try:
        with _org_node(data_dir) as (node, org_id):
            with node.begin() as conn:
                row = resolve_user(conn, org_id, user)
                tid, plaintext = create_token(conn, org_id=org_id, principal_id=row.id, at=node.clock.now(),
                                              actor_id=None, label=label)
    except MailnodeError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps({"token_id": tid, "user_id": row.id, "token": plaintext}))
    else:
        out.print(f"token for {row.email} ({row.id}): [bold]{plaintext}[/bold]   (shown once)")


@mailbox_app.command("create")
def mailbox_create(
    name: Annotated[str, typer.Option(help="The mailbox's name.")],
    address: Annotated[list[str], typer.Option(help="An address on one of the organisation's domains (repeatable).")],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a mailbox with one or more addresses."""
    from mailnode.mail.mailboxes import create_mailbox

    try:
        with _org_node(data_dir) as (node, org_id):
            with node.begin() as conn:
                box = create_mailbox(conn, org_id=org_id, actor_id=None, at=node.clock.now(), name=name, addresses=address)
    except MailnodeError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps({"mailbox": box}))
    else:
        out.print(f"mailbox {box['id']}  {box['name']}  {', '.join(box['addresses'])}")


@mailbox_app.command("list")
def mailbox_list(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List every mailbox with its addresses and hold window."""
    from sqlalchemy import select

    from mailnode.mail.mailboxes import mailbox_json
    from mailnode.mail.tables import mailboxes

    try:
        with _org_node(data_dir) as (node, org_id):
            with node.read() as conn:
                boxes = [mailbox_json(conn, r) for r in conn.execute(
                    select(mailboxes).where(mailboxes.c.org_id == org_id).order_by(mailboxes.c.id)).all()]
    except MailnodeError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps({"mailboxes": boxes}))
        return
    table = Table("id", "name", "addresses", "hold window (s)")
    for b in boxes:
        table.add_row(b["id"], b["name"], ", ".join(b["addresses"]), str(b["hold_window_seconds"]))
    out.print(table)


@access_app.command("grant")
def access_grant(
    subject: Annotated[str, typer.Option(help="A user's id or address, a team's id or name, or a btl_/app_ id.")],
    relation: Annotated[str, typer.Option(help="org.admin, mailbox.metadata.read, mailbox.content.read, "
                                               "send.propose or approval.decide.")],
    mailbox: Annotated[Optional[str], typer.Option(help="The mailbox's id or one of its addresses "
                                                        "(not for org.admin).")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Grant a relation as the installer at the data directory (the API's POST /api/access, for administrators)."""
    from sqlalchemy import func, select

    from mailnode import authz
    from mailnode.directory.tables import teams, users
    from mailnode.mail.mailboxes import mailbox_by_address

    try:
        with _org_node(data_dir) as (node, org_id):
            with node.begin() as conn:
                subject_id = subject
                if "@" in subject:
                    row = conn.execute(select(users.c.id).where(users.c.org_id == org_id,
                                                                func.lower(users.c.email) == subject.lower())).first()
                    subject_id = row.id if row else subject
                elif not subject.startswith(("usr_", "tm_", "btl_", "app_")):
                    row = conn.execute(select(teams.c.id).where(teams.c.org_id == org_id, teams.c.name == subject)).first()
                    subject_id = row.id if row else subject
                object_id = org_id
                if relation != "org.admin":
                    if not mailbox:
                        raise MailnodeError(code="E_MAILBOX_REQUIRED", what=f"{relation} is held on a mailbox.",
                                            why="Every relation but org.admin names the mailbox it is held on.",
                                            fix="Add --mailbox ADDRESS (see mailnode mailbox list).", status=422)
                    hit = mailbox_by_address(conn, mailbox) if "@" in mailbox else None
                    object_id = hit.mailbox_id if hit else mailbox
                g = authz.grant(conn, org_id=org_id, actor_id=None, at=node.clock.now(), subject_id=subject_id,
                                relation=relation, object_id=object_id)
    except MailnodeError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps({"grant": g.to_json()}))
    else:
        out.print(f"granted {g.relation} on {g.object_id} to {g.subject_id} ({g.id})")


@audit_app.command("verify")
def audit_verify(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Verify the audit hash chain; exit 1 and name the first broken sequence number if it is broken."""
    from mailnode import audit

    try:
        with _org_node(data_dir) as (node, org_id):
            with node.read() as conn:
                result = audit.verify(conn, org_id)
    except MailnodeError as exc:
        _fail(exc)
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


@app.command()
def ingest(
    files: Annotated[list[Path], typer.Argument(help=".eml files to deliver.", exists=True, dir_okay=False)],
    mail_from: Annotated[str, typer.Option("--mail-from", help="Envelope sender; '<>' or '' is the null reverse path.")],
    rcpt_to: Annotated[list[str], typer.Option("--rcpt-to", help="Envelope recipient on this node (repeatable).")],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Deliver .eml files through the same receipt path as SMTP and report what each became.

    Materialises in this process (no durable executor is started, so it may run beside mailnode serve).
    """
    from mailnode.ingress import receipts, routing
    from mailnode.ingress.materialise import materialise_receipt

    try:
        node = _open(data_dir)
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
        _fail(exc)
        return
    results: list[dict[str, Any]] = []
    failed = False
    for path in files:
        raw = path.read_bytes()
        try:
            ids = receipts.accept(node, raw, receipts.Envelope(mail_from=mail_from, routes=tuple(routes),
                                                               source="ingest"))
            for rid in ids:
                done = materialise_receipt(node, rid)
                with node.read() as conn:
                    from sqlalchemy import select

                    from mailnode.mail.message_tables import messages

                    m = conn.execute(select(messages).where(messages.c.id == done.message_id)).one()
                results.append({"file": str(path), "receipt_id": rid, "message_id": done.message_id,
                                "conversation_id": done.conversation_id, "case_id": done.case_id,
                                "automated": m.automated, "reply_refusal": m.reply_refusal,
                                "report_kind": m.report_kind, "parse_error": m.parse_error})
        except MailnodeError as exc:
            failed = True
            results.append({"file": str(path), "error": exc.code, "message": exc.what})
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
    if failed:
        raise typer.Exit(1)


@app.command()
def doctor(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Check the node; exit 0 ok, 1 degraded, 2 refuse. The same report is at GET /api/doctor."""
    from mailnode.doctor.checks import run_checks
    from mailnode.doctor.findings import EXIT_CODES, report

    try:
        node = _open(data_dir)
        org_id = _org_id(node)
        rep = report(run_checks(node, org_id))
        node.close()
    except MailnodeError as exc:
        _fail(exc, 2)
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


def _mount_domain_commands() -> None:
    """Mount the command groups that live with their domain (an import error here is a defect, not a skip)."""
    from mailnode.butler.cli import butler_app
    from mailnode.demo.cli import register as register_demo
    from mailnode.governance.cli import register as register_breakers
    from mailnode.ingress.cli import register as register_receipt
    from mailnode.notify.cli import register as register_app
    from mailnode.outbound.cli import register as register_send

    app.add_typer(butler_app, name="butler")
    register_send(app)
    register_demo(app)
    register_app(app)
    register_receipt(app)
    register_breakers(app)


_mount_domain_commands()


def main() -> None:
    """Console-script entry point."""
    app()

