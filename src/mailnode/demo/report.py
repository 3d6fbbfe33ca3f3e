"""The demo's readable report: rich tables and one ``ok`` line per checked outcome.

Pure rendering over plain data the scenario read from the API; nothing here calls the node. Every
check the scenario makes is printed as ``ok  <what was checked>`` so a reader (and CI's log) sees what
was verified, not only what was shown.
"""

from __future__ import annotations

from email import message_from_bytes
from email.policy import compat32
from typing import Any

from rich.console import Console
from rich.table import Column, Table

from mailnode.demo.messages import DemoMessage

#: Headers of the released reply the report shows, in this order.
SHOWN_HEADERS = ("From", "To", "Subject", "Date", "Message-ID", "In-Reply-To", "References", "Auto-Submitted",
                 "MIME-Version", "Content-Type")


def heading(console: Console, number: int, title: str, words: str) -> None:
    """A numbered section title and one sentence saying what it shows."""
    console.print()
    console.rule(f"[bold]{number}. {title}[/bold]", align="left")
    console.print(words)


def doing(console: Console, what: str) -> None:
    """One line saying what the demo is doing now, printed before a step that takes seconds."""
    console.print(f"[dim]…  {what}[/dim]", highlight=False)


def ok(console: Console, what: str) -> None:
    """One verified outcome."""
    console.print(f"[green]ok[/green]  {what}", highlight=False)


def organisation(console: Console, rows: list[tuple[str, str, str]]) -> None:
    """What the demo built: ``(kind, name, detail)`` rows."""
    table = Table("kind", "name", "detail", title="The organisation", title_justify="left")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _short(value: str | None, blank: str = "-") -> str:
    return value if value else blank


def messages(console: Console, items: list[tuple[DemoMessage, dict[str, Any]]]) -> None:
    """What each message became: its conversation, case, automated reason, reply refusal and parse error."""
    table = Table("file", "what it is", Column("delivered to", no_wrap=True), Column("conversation", no_wrap=True),
                  Column("case", no_wrap=True), "automated", "reply refused", "parse error",
                  title="What each message became", title_justify="left")
    for message, summary in items:
        table.add_row(message.file, message.what, summary["envelope_to"], summary["conversation_id"],
                      summary["case_id"], _short(summary["automated"]), _short(summary["reply_refusal"]),
                      _short(summary["parse_error"]))
    console.print(table)


def runs(console: Console, items: list[tuple[DemoMessage, str, dict[str, Any]]]) -> None:
    """Each Butler run over each message: its state and reason, its effects, and why it went that way."""
    table = Table("message", "Butler", "run state", "reason", "effects (node: outcome)", "why",
                  title="What each Butler run did", title_justify="left")
    for message, butler, run in items:
        effects = ", ".join(f"{e['node_id']}: {e['outcome']}" + (f" ({e['reason']})" if e["reason"] else "")
                            for e in run["effect_rows"]) or "none"
        table.add_row(message.file, butler, run["state"], _short(run["outcome_reason"]), effects,
                      _why(message, butler))
    console.print(table)


def _why(message: DemoMessage, butler: str) -> str:
    if message.reply_refusal is None:
        return "a person wrote it and it may be answered" if butler == "acknowledge" else "a person wrote it"
    if butler == "acknowledge":
        return f"reply refused: {message.reply_refusal}"
    return f"automated: {message.automated}" if message.automated else "not automated"


def proposals(console: Console, sends: list[dict[str, Any]], title: str) -> None:
    """Sends waiting for a person: id, recipients, subject, state and reason, and what releases them."""
    table = Table(Column("send", no_wrap=True), "to", "subject", "state", "reason", "what moves it", title=title,
                  title_justify="left")
    for s in sends:
        table.add_row(s["id"], ", ".join(s["to"]), _short(s.get("subject")), s["state"], _short(s.get("state_reason")),
                      f"POST /api/sends/{s['id']}/release")
    console.print(table)


def arrived(console: Console, mail_from: str, rcpt_tos: tuple[str, ...], content: bytes) -> None:
    """A transaction at the smarthost: its envelope and the headers a reader checks."""
    parsed = message_from_bytes(content, policy=compat32)
    table = Table("header", "value", title="Arrived at the smarthost", title_justify="left")
    table.add_row("(envelope) MAIL FROM", mail_from or "<>")
    table.add_row("(envelope) RCPT TO", ", ".join(rcpt_tos))
    for name in SHOWN_HEADERS:
        value = parsed.get(name)
        if value is not None:
            table.add_row(name, " ".join(str(value).split()))
    console.print(table)
    body = parsed.get_payload(decode=True)
    if isinstance(body, bytes):
        console.print(f"body: {body.decode('utf-8', 'replace').strip()}", highlight=False)


def breakers(console: Console, readings: list[dict[str, Any]]) -> None:
    """``GET /api/breakers``: each breaker's reading, never a reassuring zero."""
    table = Table("breaker", "observations", "limit", "armed", "percent", "tripped", "in words",
                  title="GET /api/breakers", title_justify="left")
    for r in readings:
        table.add_row(r["breaker"], str(r["observations"]), str(r["limit"]),
                      "yes" if r["armed"] else f"no ({r['unarmed_reason']})",
                      "null" if r["percent"] is None else f"{r['percent']}", "yes" if r["tripped"] else "no",
                      r["sentence"])
    console.print(table)


def doctor(console: Console, answer: dict[str, Any], exit_code: int) -> None:
    """``mailnode doctor --json``: every finding and the verdict with its exit code."""
    table = Table("finding", "severity", "ok", "detail", title="mailnode doctor", title_justify="left")
    for f in answer["findings"]:
        table.add_row(f["name"], f["severity"], "yes" if f["ok"] else "NO", f["detail"])
    console.print(table)
    console.print(f"verdict: [bold]{answer['verdict']}[/bold] (exit {exit_code})")
