"""``mailnode butler``: check a Butler source offline and print the document's JSON Schema.

Issue 6 "CLI". ``butler_app`` is a Typer app the main CLI mounts as ``mailnode butler``. It imports
neither DBOS nor the database, so ``check`` works on a machine with no node. The API commands
(``create NAME FILE``, ``draft ID FILE``, ``publish ID``, ``list``) call a running node's HTTP API
(``--url``, default ``MAILNODE_URL`` or ``http://127.0.0.1:8025``; ``--token``, default
``MAILNODE_TOKEN``) and print a refusal in the four-part form (code, what, why, fix) with any checker
findings after it, exiting 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn
from urllib.parse import urlencode

import typer

from mailnode import budgets
from mailnode.butler.ast import json_schema
from mailnode.butler.check import Finding
from mailnode.butler.check import check as check_source
from mailnode.config import Settings
from mailnode.errors import MailnodeError

butler_app = typer.Typer(help="Write and check Butlers: small deterministic programs that answer or triage mail.",
                         no_args_is_help=True)

#: Exit codes of ``check``: clean, findings. (Typer itself exits 2 on a usage error or a missing file.)
EXIT_CLEAN = 0
EXIT_FINDINGS = 1


@butler_app.command("check")
def check_command(
    file: Annotated[Path, typer.Argument(
        exists=True, dir_okay=False, readable=True,
        help="A Butler source (JSON), read as bytes exactly as it would be submitted.")],
) -> None:
    """Check a Butler source offline and print every finding (exit 0 clean, 1 with findings)."""
    # The same pot the node prices against: the setting, read from the environment as the server reads it.
    result = check_source(file.read_bytes(), pot=Settings().butler_run_pot)
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


# --- the API commands: create, draft, publish, list --------------------------------------------------
# They speak HTTP to a running node (``mailnode serve``) with httpx, imported inside each command so
# that ``check`` and ``schema`` stay free of the network client as well as of the database.

#: The node's API when neither ``--url`` nor ``MAILNODE_URL`` says otherwise (``mailnode serve``'s default).
DEFAULT_URL = "http://127.0.0.1:8025"
#: Exit code of an API command the node refused or could not be asked.
EXIT_REFUSED = 1

UrlOption = Annotated[str, typer.Option("--url", envvar="MAILNODE_URL", help="The node's HTTP API.")]
TokenOption = Annotated[str, typer.Option("--token", envvar="MAILNODE_TOKEN", show_default=False,
                                          help="An administrator's API token (mailnode token create).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the node's JSON answer.")]


def _refuse(error: MailnodeError) -> NoReturn:
    """Print ``error`` in its four-part form, then any checker findings, on stderr; exit 1."""
    typer.echo(error.render(), err=True)
    for finding in error.detail.get("findings") or []:
        typer.echo("", err=True)
        typer.echo(Finding(**finding).render(), err=True)
    raise typer.Exit(EXIT_REFUSED)


def _read_source(file: Path) -> str:
    """The file's text as it will be submitted; ``E_BUTLER_SOURCE_NOT_UTF8`` when it is not UTF-8."""
    data = file.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _refuse(MailnodeError(code="E_BUTLER_SOURCE_NOT_UTF8", what=f"{file} is not UTF-8 text: {exc.reason} "
                              f"at byte {exc.start}.",
                              why="A Butler source is JSON text, which the API carries as UTF-8.",
                              fix=f"Save {file} as UTF-8 (mailnode butler check {file} shows the same problem)."))


def _call(method: str, url: str, token: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """One request to the node; the JSON answer, or a four-part refusal and exit 1.

    ``E_TOKEN_MISSING`` when no token was given, ``E_NODE_UNREACHABLE`` when the node does not answer,
    the node's own code (``E_BUTLER_*``, ``E_NOT_AN_ADMINISTRATOR`` ...) when it refuses.
    """
    import httpx

    if not token:
        _refuse(MailnodeError(code="E_TOKEN_MISSING", what="No API token was given.",
                              why="Every Butler route needs an administrator's token.",
                              fix="Pass --token or set MAILNODE_TOKEN (mint one with mailnode token create)."))
    target = url.rstrip("/") + path
    try:
        response = httpx.request(method, target, json=body, headers={"Authorization": f"Bearer {token}"},
                                 timeout=budgets.BUTLER_CLI_HTTP_TIMEOUT_SECONDS)
    except httpx.HTTPError as exc:
        _refuse(MailnodeError(code="E_NODE_UNREACHABLE", what=f"{method} {target} failed: {type(exc).__name__}: {exc}",
                              why="The node did not answer at that address.",
                              fix="Start it with mailnode serve, or point --url / MAILNODE_URL at it."))
    try:
        answer = response.json()
    except ValueError:
        _refuse(MailnodeError(code="E_NODE_ANSWER_UNREADABLE",
                              what=f"{method} {target} answered {response.status_code} with no JSON.",
                              why="A mailnode API answers JSON; something else is listening there.",
                              fix="Point --url / MAILNODE_URL at the node's HTTP API."))
    if response.is_success and isinstance(answer, dict):
        return answer
    err: dict[str, Any] = answer if isinstance(answer, dict) else {}
    detail = err.get("detail")
    _refuse(MailnodeError(code=str(err.get("error") or f"E_HTTP_{response.status_code}"),
                          what=str(err.get("message") or response.text[:500]), why=str(err.get("why") or ""),
                          fix=str(err.get("fix") or ""), status=response.status_code,
                          detail=detail if isinstance(detail, dict) else {}))


def _print_butler(verb: str, butler: dict[str, Any]) -> None:
    typer.echo(f"{verb}  {butler['name']}  {butler['id']}")
    for label in ("draft", "live"):
        v = butler.get(label)
        if v:
            number = f" version {v['version']}" if v.get("version") is not None else ""
            typer.echo(f"  {label:<6}{v['id']}{number}  ast_sha256 {v['ast_sha256']}")


@butler_app.command("create")
def create_command(
    name: Annotated[str, typer.Argument(help="The Butler's name, unique in the organisation.")],
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The program (JSON).")],
    url: UrlOption = DEFAULT_URL, token: TokenOption = "", as_json: JsonOption = False,
) -> None:
    """Create a Butler whose first draft is FILE (POST /api/butlers)."""
    answer = _call("POST", url, token, "/api/butlers", {"name": name, "source": _read_source(file)})
    typer.echo(json.dumps(answer)) if as_json else _print_butler("drafted", answer["butler"])


@butler_app.command("draft")
def draft_command(
    butler_id: Annotated[str, typer.Argument(metavar="ID", help="The Butler's id (btl_...).")],
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The program (JSON).")],
    url: UrlOption = DEFAULT_URL, token: TokenOption = "", as_json: JsonOption = False,
) -> None:
    """Replace the Butler's draft with FILE (PUT /api/butlers/ID/draft)."""
    answer = _call("PUT", url, token, f"/api/butlers/{butler_id}/draft", {"source": _read_source(file)})
    typer.echo(json.dumps(answer)) if as_json else _print_butler("drafted", answer["butler"])


@butler_app.command("publish")
def publish_command(
    butler_id: Annotated[str, typer.Argument(metavar="ID", help="The Butler's id (btl_...).")],
    url: UrlOption = DEFAULT_URL, token: TokenOption = "", as_json: JsonOption = False,
) -> None:
    """Publish the Butler's draft, superseding its live version (POST /api/butlers/ID/publish)."""
    answer = _call("POST", url, token, f"/api/butlers/{butler_id}/publish")
    if as_json:
        typer.echo(json.dumps(answer))
        return
    done = answer["published"]
    replaced = f", superseding {done['superseded_version_id']}" if done["superseded_version_id"] else ""
    typer.echo(f"published  {answer['butler']['name']}  version {done['version']}  {done['version_id']}{replaced}")


@butler_app.command("list")
def list_command(url: UrlOption = DEFAULT_URL, token: TokenOption = "", as_json: JsonOption = False) -> None:
    """List the organisation's Butlers by name, with their live version and draft (GET /api/butlers)."""
    butlers: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = "" if cursor is None else "?" + urlencode({"cursor": cursor})
        page = _call("GET", url, token, f"/api/butlers{query}")
        butlers.extend(page["butlers"])
        cursor = page.get("next_cursor")
        if not cursor:
            break
    if as_json:
        typer.echo(json.dumps({"butlers": butlers}))
        return
    for b in butlers:
        live = f"version {b['live']['version']} ({b['live']['id']})" if b["live"] else "not published"
        draft = f"draft {b['draft']['id']}" if b["draft"] else "no draft"
        typer.echo(f"{b['id']}  {b['name']}  {live}  {draft}")
    typer.echo(f"{len(butlers)} Butler{'s' if len(butlers) != 1 else ''}")


# --- operating Butlers: runs, inspect, replay, simulate, pauses, resume, disable, enable -------------------
# Thin commands over the same routes (issue 17 item 13): every decision is the node's; these print it.

RunIdArgument = Annotated[str, typer.Argument(metavar="RUN_ID", help="The run's id (<btv_...>-<msg_...|brp_...>).")]
ButlerIdArgument = Annotated[str, typer.Argument(metavar="ID", help="The Butler's id (btl_...).")]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why (recorded in the audit trail).")]


def _run_line(run: dict[str, Any]) -> str:
    """One run as a line: id, state, reason, counts, when."""
    reason = f"/{run['outcome_reason']}" if run.get("outcome_reason") else ""
    return (f"{run['id']}  {run['state']}{reason}  nodes {run['nodes_executed']}  effects {run['effects']}  "
            f"refusals {run['refusals']}  started {run['started_at']}")


def _why_lines(run: dict[str, Any]) -> list[str]:
    """A run's ``outcome_detail`` as the four-part form plus where it happened (empty when there is none)."""
    detail = run.get("outcome_detail") or {}
    if not detail:
        return []
    where = [f"node {detail['node']}"] if detail.get("node") else []
    if detail.get("expression"):
        where.append(f"expression {detail['expression']}")
    lines = [f"  {detail.get('code') or run.get('outcome_reason')}  {detail.get('what') or ''}".rstrip()]
    if where:
        lines.append("  at   " + ", ".join(where))
    for key in ("why", "fix"):
        if detail.get(key):
            lines.append(f"  {key}  {detail[key]}")
    lines.extend(f"  finding  {f}" for f in detail.get("findings") or [])
    return lines


@butler_app.command("runs")
def runs_command(
    butler_id: Annotated[str, typer.Option("--butler", help="Only this Butler's runs (btl_...).")] = "",
    limit: Annotated[int, typer.Option("--limit", min=1, max=budgets.LIST_LIMIT_MAX, help="How many runs.")] = 50,
    url: UrlOption = DEFAULT_URL, token: TokenOption = "", as_json: JsonOption = False,
) -> None:
    """List runs newest first, with their state, reason and counts (GET /api/butler-runs)."""
    query = {"limit": limit, **({"butler_id": butler_id} if butler_id else {})}
    answer = _call("GET", url, token, f"/api/butler-runs?{urlencode(query)}")
    if as_json:
        typer.echo(json.dumps(answer))
        return
    for run in answer["butler_runs"]:
        typer.echo(_run_line(run))
    count = len(answer["butler_runs"])
    typer.echo(f"{count} run{'s' if count != 1 else ''}")


@butler_app.command("run")
def run_command(run_id: RunIdArgument, url: UrlOption = DEFAULT_URL, token: TokenOption = "",
                as_json: JsonOption = False) -> None:
    """One run: its state, why it ended, and its effect rows in order (GET /api/butler-runs/RUN_ID)."""
    answer = _call("GET", url, token, f"/api/butler-runs/{run_id}")
    if as_json:
        typer.echo(json.dumps(answer))
        return
    run = answer["butler_run"]
    typer.echo(_run_line(run))
    for line in _why_lines(run):
        typer.echo(line)
    for e in run["effect_rows"]:
        reason = f"/{e['reason']}" if e.get("reason") else ""
        typer.echo(f"  #{e['seq']}  {e['step']}  {e['node_type']}  {e['outcome']}{reason}  "
                   f"{e['subject'] or ''}".rstrip())


@butler_app.command("inspect")
def inspect_command(run_id: RunIdArgument, url: UrlOption = DEFAULT_URL, token: TokenOption = "",
                    as_json: JsonOption = False) -> None:
    """Inspect a run: its program, trigger facts (redacted unless you may read them), effects and sends, replays
    and what a record cannot tell (GET /api/butler-runs/RUN_ID/inspect; writes nothing)."""
    answer = _call("GET", url, token, f"/api/butler-runs/{run_id}/inspect")
    if as_json:
        typer.echo(json.dumps(answer))
        return
    seen = answer["inspection"]
    run = seen["run"]
    typer.echo(f"{run.get('butler_name', '')}  {_run_line(run)}")
    for line in _why_lines(run):
        typer.echo(line)
    program = seen["program"]
    typer.echo(f"  program  {program['version_id']} ({program['state']}), "
               f"{'checks' if program['checks'] else 'does not check'}, {len(program['nodes'])} nodes")
    typer.echo("  facts    " + json.dumps(seen["trigger_facts"], sort_keys=True))
    if seen.get("trigger_facts_redacted"):
        redacted = seen["trigger_facts_redacted"]
        typer.echo(f"  redacted {', '.join(redacted['keys'])}: {redacted['why']}")
    for e in seen["effects"]:
        send = e.get("send") or {}
        state = f"  send {send['state']}" if send else ""
        typer.echo(f"  #{e['seq']}  {e['step']}  {e['node_type']}  {e['outcome']}  {e['subject'] or ''}{state}")
    re_run = seen["re_run"]
    typer.echo(f"  re-run   {'available' if re_run['available'] else 'not available: ' + str(re_run['why'])}")
    typer.echo(f"  note     {seen['not_recorded']}")


@butler_app.command("replay")
def replay_command(run_id: RunIdArgument, url: UrlOption = DEFAULT_URL, token: TokenOption = "",
                   as_json: JsonOption = False) -> None:
    """Re-run a run over its recorded facts with the Butler's live version, every judgement asked again
    (POST /api/butler-runs/RUN_ID/replay, mode re-run)."""
    answer = _call("POST", url, token, f"/api/butler-runs/{run_id}/replay", {"mode": "re-run"})
    if as_json:
        typer.echo(json.dumps(answer))
        return
    done = answer["replay"]
    typer.echo(f"re-run  {done['run_id']}  of {done['replay_of']}  (follow it: mailnode butler run {done['run_id']})")


@butler_app.command("simulate")
def simulate_command(
    butler_id: ButlerIdArgument,
    run_id: Annotated[str, typer.Option("--run", help="The run whose recorded facts the dry run walks over.")],
    url: UrlOption = DEFAULT_URL, token: TokenOption = "",
) -> None:
    """Dry-run the Butler's draft (or live version) over a run's recorded facts; writes nothing
    (POST /api/butlers/ID/simulate). Prints the node's JSON answer."""
    answer = _call("POST", url, token, f"/api/butlers/{butler_id}/simulate", {"run_id": run_id})
    typer.echo(json.dumps(answer, indent=2, sort_keys=True))


@butler_app.command("pauses")
def pauses_command(
    in_force: Annotated[bool, typer.Option("--in-force", help="Only pauses still in force.")] = False,
    url: UrlOption = DEFAULT_URL, token: TokenOption = "", as_json: JsonOption = False,
) -> None:
    """List the pauses the node placed on Butlers, newest first (GET /api/butler-pauses)."""
    query = "?in_force=true" if in_force else ""
    answer = _call("GET", url, token, f"/api/butler-pauses{query}")
    if as_json:
        typer.echo(json.dumps(answer))
        return
    for p in answer["butler_pauses"]:
        state = f"resumed {p['resumed_at']}" if p.get("resumed_at") else "in force"
        typer.echo(f"{p['id']}  {p['butler_name']} ({p['butler_id']})  {p['reason']}  placed {p['placed_at']}  {state}")
    count = len(answer["butler_pauses"])
    typer.echo(f"{count} pause{'s' if count != 1 else ''}")


@butler_app.command("resume")
def resume_command(
    pause_id: Annotated[str, typer.Argument(metavar="PAUSE_ID", help="The pause's id (bpz_...).")],
    reason: ReasonOption = "", url: UrlOption = DEFAULT_URL, token: TokenOption = "", as_json: JsonOption = False,
) -> None:
    """Resume a pause the node placed, with a reason (POST /api/butler-pauses/PAUSE_ID/resume)."""
    answer = _call("POST", url, token, f"/api/butler-pauses/{pause_id}/resume", {"reason": reason})
    if as_json:
        typer.echo(json.dumps(answer))
        return
    p = answer["butler_pause"]
    typer.echo(f"resumed  {p['butler_name']} ({p['butler_id']})  pause {p['id']}")


@butler_app.command("disable")
def disable_command(butler_id: ButlerIdArgument, reason: ReasonOption = "", url: UrlOption = DEFAULT_URL,
                    token: TokenOption = "", as_json: JsonOption = False) -> None:
    """Disable a Butler: no new runs, runs already open finish, grants untouched (POST /api/butlers/ID/disable)."""
    answer = _call("POST", url, token, f"/api/butlers/{butler_id}/disable", {"reason": reason})
    if as_json:
        typer.echo(json.dumps(answer))
        return
    b = answer["butler"]
    typer.echo(f"disabled  {b['name']}  {b['id']}  ({b['disabled']['reason']}); "
               f"enable: mailnode butler enable {b['id']}")


@butler_app.command("enable")
def enable_command(butler_id: ButlerIdArgument, url: UrlOption = DEFAULT_URL, token: TokenOption = "",
                   as_json: JsonOption = False) -> None:
    """Enable a disabled Butler: deliveries open its runs again (POST /api/butlers/ID/enable)."""
    answer = _call("POST", url, token, f"/api/butlers/{butler_id}/enable")
    if as_json:
        typer.echo(json.dumps(answer))
        return
    b = answer["butler"]
    typer.echo(f"enabled  {b['name']}  {b['id']}")
