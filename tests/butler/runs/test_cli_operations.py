"""Issue 17 item 13: operating Butlers from the shell against a real ``mailnode serve``: ``runs``, ``run``,
``inspect``, ``replay``, ``simulate``, ``pauses``, ``resume``, ``disable`` and ``enable`` are thin commands over
the routes; a disabled Butler opens no run (a re-run included) and keeps its grants."""

from __future__ import annotations

import smtplib
import time
from typing import Any

import pytest
from typer.testing import CliRunner

from mailnode.butler.cli import butler_app
from tests.butler.runs.conftest import MAILBOX, message, program
from tests.support.served import Served

pytestmark = pytest.mark.slow

runner = CliRunner()


def _cli(served: Served, *args: str) -> Any:
    env = {"MAILNODE_URL": f"http://127.0.0.1:{served.http}", "MAILNODE_TOKEN": served.installed["token"]}
    return runner.invoke(butler_app, list(args), env=env)


def _deliver(served: Served, subject: str) -> None:
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("customer@remote.test", [MAILBOX], message(subject=subject))


def _delivered(served: Served, subject: str) -> str:
    """Deliver a message over SMTP; its message id once it is materialised."""
    _deliver(served, subject)
    box = served.installed["mailbox_id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [m["id"] for m in served.call("GET", f"/api/mailboxes/{box}/messages")["messages"]
                 if m["subject"] == subject]
        if found:
            return str(found[0])
        time.sleep(0.2)
    raise AssertionError(f"{subject!r} was not materialised")


def _runs(served: Served) -> list[dict[str, Any]]:
    return list(served.call("GET", "/api/butler-runs")["butler_runs"])


def test_runs_are_listed_shown_inspected_replayed_and_a_disabled_butler_opens_none(served: Served) -> None:
    served.start()
    guard = program([{"id": "strict", "type": "guard", "when": "${event.dmarc.policy}", "then": None,
                      "otherwise": None}], "strict", name="strict")
    bid = served.publish(guard, "mailbox.content.read")
    _deliver(served, "first")
    run = served.run(lambda r: r["state"] == "failed")

    listed = _cli(served, "runs", "--butler", bid)
    assert listed.exit_code == 0, listed.output
    assert f"{run['id']}  failed/E_BUTLER_EXPR_UNRESOLVED" in listed.stdout and "1 run" in listed.stdout

    shown = _cli(served, "run", run["id"])
    assert shown.exit_code == 0, shown.output
    assert "at   node strict, expression ${event.dmarc.policy}" in shown.stdout
    assert "  why  " in shown.stdout and "  fix  " in shown.stdout

    inspected = _cli(served, "inspect", run["id"])
    assert inspected.exit_code == 0, inspected.output
    assert "re-run   available" in inspected.stdout and "node strict" in inspected.stdout

    simulated = _cli(served, "simulate", bid, "--run", run["id"])
    assert simulated.exit_code == 0, simulated.output
    assert '"simulation"' in simulated.stdout

    # Disabled: the grants stay, no delivery opens a run, and no re-run starts.
    off = _cli(served, "disable", bid, "--reason", "answering the wrong mailbox")
    assert off.exit_code == 0, off.output
    assert "disabled  strict" in off.stdout
    grants = served.call("GET", "/api/access", params={"subject_id": bid})["grants"]
    assert [g["relation"] for g in grants] == ["mailbox.content.read"]
    second = _delivered(served, "second")
    # Its workflow has finished, so the trigger has decided on it: no run, and the log says why.
    served.await_settled(second)
    assert len(_runs(served)) == 1
    assert f"butler.disabled butler={bid} message={second}" in served.log_text()
    refused = _cli(served, "replay", run["id"])
    assert refused.exit_code == 1 and "E_BUTLER_DISABLED" in refused.output
    no_reason = _cli(served, "disable", bid)
    assert no_reason.exit_code == 1 and "E_BUTLER_DISABLE_REASON_REQUIRED" in no_reason.output
    twice = _cli(served, "disable", bid, "--reason", "again")
    assert twice.exit_code == 1 and "E_BUTLER_ALREADY_DISABLED" in twice.output

    on = _cli(served, "enable", bid)
    assert on.exit_code == 0 and "enabled  strict" in on.stdout
    again = _cli(served, "replay", run["id"])
    assert again.exit_code == 0, again.output
    assert f"of {run['id']}" in again.stdout
    _deliver(served, "third")
    deadline = time.monotonic() + 30
    while len(_runs(served)) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_runs(served)) == 3

    pauses = _cli(served, "pauses", "--in-force")
    assert pauses.exit_code == 0 and "0 pauses" in pauses.stdout
    bogus = _cli(served, "resume", "bpz_01HZY00000000000000000000Z", "--reason", "safe")
    assert bogus.exit_code == 1 and "E_BUTLER_NO_SUCH_PAUSE" in bogus.output
