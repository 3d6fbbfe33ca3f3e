"""Every command shown in README.md and docs/*.md names a real command and real options, so a doc can't drift.

The shell commands are taken from the fenced code blocks (lines of a block that uses ``$`` prompts only
when they carry one; heredoc bodies skipped) and from inline code spans that start with ``mailnode``.
Each ``mailnode ...`` command is resolved against the Typer application: its command path must exist and
every ``--option`` must be one of that command's options. ``make`` targets must exist in the Makefile.
The local commands of the quick start also run for real against a temporary data directory.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
import typer.main
from typer.testing import CliRunner

from mailnode.cli import app

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: Fenced blocks in these languages hold data, not commands.
DATA_LANGUAGES = {"json", "toml", "yaml", "python", "text"}


@dataclass(frozen=True)
class Shown:
    """One command as a doc shows it: where, and its words."""

    where: str
    words: tuple[str, ...]


def _fenced_lines(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        opening = re.match(r"^\s*```(\w*)\s*$", lines[i])
        if not opening:
            i += 1
            continue
        language, body = opening.group(1), []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append((i + 1, lines[i]))
            i += 1
        i += 1
        if language in DATA_LANGUAGES:
            continue
        prompted = any(text.lstrip().startswith("$ ") for _, text in body)
        heredoc_end: str | None = None
        for number, text in body:
            if heredoc_end is not None:
                if text.strip() == heredoc_end:
                    heredoc_end = None
                continue
            marker = re.search(r"<<-?\s*'?(\w+)'?", text)
            if marker:
                heredoc_end = marker.group(1)
            if prompted:
                if not text.lstrip().startswith("$ "):
                    continue
                text = text.lstrip()[2:]
            out.append((number, text))
    return out


def _words(text: str) -> tuple[str, ...]:
    """The words of one shell line, with comments, ``[optional]`` brackets and ``...`` removed."""
    text = text.split(" #", 1)[0]
    return tuple(w for w in shlex.split(text.replace("[", " ").replace("]", " ")) if w not in ("...", "|"))


def shown_commands() -> list[Shown]:
    """Every ``mailnode`` and ``make`` command the docs show."""
    found: list[Shown] = []
    for path in DOCS:
        rel = path.relative_to(REPO)
        for number, text in _fenced_lines(path):
            words = _words(text)
            # Leading VAR=value assignments and a venv path do not change the command.
            while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                words = words[1:]
            if words and words[0].endswith("/mailnode"):
                words = ("mailnode", *words[1:])
            if words and words[0] in ("mailnode", "make"):
                found.append(Shown(f"{rel}:{number}", words))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for span in re.findall(r"`(mailnode [^`]+)`", line):
                found.append(Shown(f"{rel}:{number} (inline)", _words(span)))
    return found


def _is_group(command: Any) -> bool:
    # Typer's groups are not always click.Group subclasses; a group is what lists subcommands.
    return hasattr(command, "list_commands")


def _resolve(words: tuple[str, ...]) -> tuple[Any, list[str]]:
    """The click command the words name, and the words after its path; KeyError naming a missing one."""
    command: Any = typer.main.get_command(app)
    rest = list(words[1:])
    while _is_group(command) and rest and not rest[0].startswith("-"):
        sub = command.get_command(click.Context(command), rest[0])
        if sub is None:
            raise KeyError(f"no command {rest[0]!r} under {command.name!r}")
        command, rest = sub, rest[1:]
    return command, rest


def _options(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("-"))
    return names


def _make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, flags=re.MULTILINE))


def test_the_docs_show_commands_at_all() -> None:
    shown = shown_commands()
    where = {s.where.split(":")[0] for s in shown}
    assert {"README.md", "docs/quickstart.md", "docs/operations.md"} <= where
    assert len([s for s in shown if s.words[0] == "mailnode"]) > 20


@pytest.mark.parametrize("shown", shown_commands(), ids=lambda s: f"{s.where} {' '.join(s.words)[:60]}")
def test_every_shown_command_exists_with_its_options(shown: Shown) -> None:
    if shown.words[0] == "make":
        missing = [t for t in shown.words[1:] if not t.startswith("-") and "=" not in t
                   and t not in _make_targets()]
        assert missing == [], f"{shown.where}: no make target {missing}"
        return
    try:
        command, rest = _resolve(shown.words)
    except KeyError as exc:
        pytest.fail(f"{shown.where}: {' '.join(shown.words)}: {exc}")
    assert not _is_group(command) or rest == [], f"{shown.where}: {shown.words} names a group"
    unknown = [w.split("=", 1)[0] for w in rest if w.startswith("--") and w.split("=", 1)[0] not in _options(command)]
    assert unknown == [], f"{shown.where}: {' '.join(shown.words)}: unknown options {unknown}"
    help_run = CliRunner().invoke(app, [*shown.words[1:len(shown.words) - len(rest)], "--help"])
    assert help_run.exit_code == 0, help_run.output


def test_a_misspelt_command_or_option_is_caught() -> None:
    with pytest.raises(KeyError):
        _resolve(("mailnode", "mailbox", "lsit"))
    command, rest = _resolve(("mailnode", "mailbox", "list", "--jsn"))
    assert rest == ["--jsn"] and "--jsn" not in _options(command) and "--json" in _options(command)


def test_the_quick_starts_local_commands_run_on_a_temporary_node(tmp_path: Path) -> None:
    runner = CliRunner()
    data = ["--data-dir", str(tmp_path / "node")]
    first = runner.invoke(app, ["quickstart", *data])
    assert first.exit_code == 0 and "token (shown once): mn_" in first.output, first.output
    listed = runner.invoke(app, ["mailbox", "list", "--json", *data])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.output)["mailboxes"][0]["addresses"] == ["support@example.test"]
    minted = runner.invoke(app, ["token", "create", *data])
    assert minted.exit_code == 0 and "mn_" in minted.output, minted.output
    assert runner.invoke(app, ["audit", "verify", *data]).exit_code == 0
    doctor = runner.invoke(app, ["doctor", *data])
    assert doctor.exit_code == 0 and "verdict: ok" in doctor.output, doctor.output
    check = tmp_path / "ack.json"
    quickstart = (REPO / "docs" / "quickstart.md").read_text(encoding="utf-8")
    check.write_text(quickstart.split("cat > ack.json <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0], encoding="utf-8")
    checked = runner.invoke(app, ["butler", "check", str(check)])
    assert checked.exit_code == 0 and checked.output.startswith("ok  acknowledge"), checked.output
