"""The CLI: init once, tokens, mailboxes, doctor's verdict and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mailnode.cli import app
from mailnode.cli.node import quickstart_steps

runner = CliRunner()


def _run(args: list[str], settings: Any) -> Any:
    return runner.invoke(app, [*args, "--data-dir", str(settings.data_dir)],
                         env={"MAILNODE_DATABASE_URL": settings.database_url})


def test_init_runs_once_and_prints_json(settings: Any) -> None:
    first = _run(["init", "--org", "Acme", "--domain", "Acme.Test", "--admin-email", "ann@acme.test",
                  "--mailbox", "help@acme.test", "--json"], settings)
    assert first.exit_code == 0, first.output
    out = json.loads(first.output)
    assert set(out) >= {"org_id", "user_id", "token", "mailbox_id"}
    assert out["org_id"].startswith("org_") and out["token"].startswith("mn_")
    second = _run(["init", "--org", "Acme", "--domain", "acme.test", "--admin-email", "ann@acme.test"], settings)
    assert second.exit_code == 1 and "E_ALREADY_INITIALISED" in second.output and "fix" in second.output


def test_token_and_mailbox_commands(settings: Any) -> None:
    _run(["init", "--org", "Acme", "--domain", "acme.test", "--admin-email", "ann@acme.test", "--json"], settings)
    tok = _run(["token", "create", "--json"], settings)
    assert tok.exit_code == 0 and json.loads(tok.output)["token"].startswith("mn_")
    made = _run(["mailbox", "create", "--name", "Sales", "--address", "sales@acme.test", "--json"], settings)
    assert made.exit_code == 0, made.output
    listed = json.loads(_run(["mailbox", "list", "--json"], settings).output)["mailboxes"]
    assert sorted(a for b in listed for a in b["addresses"]) == ["sales@acme.test", "support@acme.test"]
    refused = _run(["mailbox", "create", "--name", "X", "--address", "x@other.test"], settings)
    assert refused.exit_code == 1 and "E_ADDRESS_NOT_ON_ORG_DOMAIN" in refused.output


def test_commands_before_init_say_how_to_init(tmp_path: Path) -> None:
    r = runner.invoke(app, ["mailbox", "list", "--data-dir", str(tmp_path / "none")], env={"MAILNODE_DATABASE_URL": ""})
    assert r.exit_code == 1 and "E_NOT_INITIALISED" in r.output and "mailnode init" in r.output


def test_doctor_on_a_fresh_node_is_never_refuse(settings: Any) -> None:
    _run(["init", "--org", "Acme", "--domain", "acme.test", "--admin-email", "ann@acme.test", "--json"], settings)
    r = _run(["doctor", "--json"], settings)
    rep = json.loads(r.output)
    assert rep["verdict"] in ("ok", "degraded") and r.exit_code in (0, 1)
    names = [f["name"] for f in rep["findings"]]
    assert names[:4] == ["database_reachable", "migrations_applied", "evidence_store_writable", "audit_chain_intact"]


def test_doctor_refuses_when_the_evidence_store_is_unwritable(settings: Any) -> None:
    _run(["init", "--org", "Acme", "--domain", "acme.test", "--admin-email", "ann@acme.test", "--json"], settings)
    evidence = settings.data_dir / "evidence"
    evidence.mkdir(parents=True, exist_ok=True)
    import shutil

    shutil.rmtree(evidence)
    evidence.write_text("not a directory")
    r = _run(["doctor", "--json"], settings)
    rep = json.loads(r.output)
    assert r.exit_code == 2 and rep["verdict"] == "refuse"
    bad = [f for f in rep["findings"] if not f["ok"] and f["severity"] != "report"]
    assert [f["name"] for f in bad] == ["evidence_store_writable"] and bad[0]["fix"]


def test_access_grant_as_the_installer(settings: Any) -> None:
    out = json.loads(_run(["init", "--org", "Acme", "--domain", "acme.test", "--admin-email", "ann@acme.test",
                           "--json"], settings).output)
    r = _run(["access", "grant", "--subject", "ann@acme.test", "--relation", "approval.decide", "--mailbox",
              "support@acme.test", "--json"], settings)
    assert r.exit_code == 0, r.output
    g = json.loads(r.output)["grant"]
    assert (g["subject_id"], g["relation"], g["object_id"]) == (out["user_id"], "approval.decide", out["mailbox_id"])
    missing = _run(["access", "grant", "--subject", "ann@acme.test", "--relation", "send.propose"], settings)
    assert missing.exit_code == 1 and "E_MAILBOX_REQUIRED" in missing.output
    unknown = _run(["access", "grant", "--subject", "nobody@acme.test", "--relation", "org.admin"], settings)
    assert unknown.exit_code == 1 and "E_SUBJECT_MALFORMED" in unknown.output


@pytest.mark.parametrize(("http", "smtp", "transport", "lands"), [
    ("127.0.0.1:8025", "127.0.0.1:2525", "file", "then written to /d/outbox/"),
    ("127.0.0.1:8125", "127.0.0.1:2625", "smtp", "then handed to the smtp transport"),
    ("[::1]:8025", "[::1]:2525", "resend", "then handed to the resend transport"),
])
def test_quickstart_tells_a_newcomer_where_to_open_how_to_mail_and_where_the_reply_lands(
        http: str, smtp: str, transport: str, lands: str) -> None:
    steps = quickstart_steps(http=http, smtp=smtp, mailbox="help@acme.test", token="mn_x", transport=transport,
                             outbox=Path("/d/outbox"), command="mailnode doctor")
    text = "\n".join(steps)
    assert f"open http://{http}/ in a browser and sign in with this token" in text
    mail = [s.strip() for s in steps if s.strip().startswith("printf ")]
    assert mail == [
        ("printf 'From: Bob <bob@example.net>\\r\\nTo: help@acme.test\\r\\nSubject: Opening hours\\r\\n\\r\\n"
         f"Are you open on Saturday morning?\\r\\n' | curl -sS smtp://{smtp} --mail-from bob@example.net "
         "--mail-rcpt help@acme.test -T -")]
    assert "Claim" in text and "Cancel stops it" in text and lands in text


def test_quickstart_on_an_initialised_node_names_a_command_that_runs(settings: Any) -> None:
    _run(["init", "--org", "Acme", "--domain", "acme.test", "--admin-email", "ann@acme.test", "--json"], settings)
    again = _run(["quickstart"], settings)
    assert again.exit_code == 0 and "Node already initialised" in again.output
    assert "mailnode.cli token create --data-dir" in again.output or "/mailnode token create" in again.output
