"""``mailnode butler check`` and ``schema``: exit codes, output shape, and no database import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from mailnode.butler.cli import butler_app

from .conftest import SEND_CAP, program

runner = CliRunner()


def test_check_exits_0_on_a_clean_program(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(program()))
    result = runner.invoke(butler_app, ["check", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok  smallest") and "ast_sha256" in result.output


def test_check_exits_1_and_prints_every_finding_in_four_parts(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(program({"id": "a", "type": "join", "next": "gone"}, {"id": "b", "type": "label"})))
    result = runner.invoke(butler_app, ["check", str(path)])
    assert result.exit_code == 1
    assert "E_BUTLER_NODE_RESERVED  " in result.output and "E_BUTLER_EDGE_DANGLING  " in result.output
    assert (result.output.count("\n  node  ") == result.output.count("\n  why   ")
            == result.output.count("\n  fix   ") == 2)


def test_check_exits_1_on_text_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "not.json"
    path.write_bytes(b"name: yaml")
    result = runner.invoke(butler_app, ["check", str(path)])
    assert result.exit_code == 1 and "E_BUTLER_SOURCE_NOT_JSON" in result.output


def test_check_exits_2_on_a_missing_file(tmp_path: Path) -> None:
    assert runner.invoke(butler_app, ["check", str(tmp_path / "absent.json")]).exit_code == 2


def test_schema_prints_the_document_schema() -> None:
    result = runner.invoke(butler_app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert "mail.send.propose" in result.output and "llm.classify" not in result.output
    assert schema["properties"]["apiVersion"]["const"] == "mailnode/v1"


def test_the_cli_imports_neither_dbos_nor_the_database() -> None:
    code = ("import sys, mailnode.butler.cli; "
            "bad = [m for m in sys.modules "
            "if m.split('.')[0] in ('dbos', 'sqlalchemy') or m.startswith('mailnode.db')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_prices_against_the_pot_the_node_is_configured_with(tmp_path: Path) -> None:
    # Issue 17 item 10: one pot. The offline check reads MAILNODE_BUTLER_RUN_POT as the node does.
    draft = {"id": "d", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "s", "body": "b", "as": "x"}
    path = tmp_path / "draft.json"
    path.write_text(json.dumps(program(draft, capabilities=[SEND_CAP])))
    assert runner.invoke(butler_app, ["check", str(path)], env={"MAILNODE_BUTLER_RUN_POT": "10000"}).exit_code == 0
    small = runner.invoke(butler_app, ["check", str(path)], env={"MAILNODE_BUTLER_RUN_POT": "9"})
    assert small.exit_code == 1 and "E_BUTLER_UNAFFORDABLE" in small.output and " is 9;" in small.output
