"""A receipt whose materialisation fails is quarantined, shown, and re-drivable (issue 14 item 1).

Real faults through the real path: the ``fault_materialise_memory_error`` setting makes materialisation raise
MemoryError; attempts that never finished (a process the kernel killed) are counted by the same committed
counter a killed attempt leaves behind. A real ``mailnode serve`` restarted after a quarantine starts cleanly
and does not parse the receipt again.
"""

from __future__ import annotations

import json
import smtplib
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from mailnode import audit, budgets
from mailnode.cli import app
from mailnode.doctor.checks import run_checks
from mailnode.ingress import quarantine, receipts, routing
from mailnode.ingress.materialise import materialise_or_quarantine
from mailnode.schema.ingress import ingress_receipts
from tests.support.served import Served, served_env

H = lambda token: {"Authorization": f"Bearer {token}"}
RAW = (b"From: someone@remote.test\r\nTo: support@example.test\r\nSubject: set aside\r\n"
       b"Message-ID: <q@remote.test>\r\n\r\nhello\r\n")


def _accept(node: Any) -> str:
    with node.read() as conn:
        route = routing.resolve(conn, "support@example.test")
    assert route is not None
    return receipts.accept(node, RAW, receipts.Envelope(mail_from="someone@remote.test", routes=(route,)))[0]


def _finding(node: Any, org_id: str) -> Any:
    return run_checks(node, org_id, ["receipts_quarantined"])[0]


def test_a_receipt_whose_materialisation_raises_is_quarantined_shown_and_redriven(
        api: Any, node: Any, installed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node.settings, "fault_materialise_memory_error", True)
    rid = _accept(node)
    assert materialise_or_quarantine(node, rid) is None
    # Not attempted again: a second call (a restart, the scan) finds it quarantined and parses nothing.
    assert materialise_or_quarantine(node, rid) is None
    with node.read() as conn:
        row = conn.execute(select(ingress_receipts).where(ingress_receipts.c.id == rid)).one()
    assert row.materialise_attempts == 1 and row.materialised_at is None
    assert node.evidence.get(row.sha256) == RAW  # the raw bytes are kept

    listed = api.get("/api/receipts?state=quarantined", headers=H(installed.token)).json()["receipts"]
    assert [(r["id"], r["quarantine_code"]) for r in listed] == [(rid, quarantine.FAILED)]
    assert listed[0]["quarantine_error"] == "Materialisation raised MemoryError: fault_materialise_memory_error is set"
    finding = _finding(node, installed.org_id)
    assert not finding.ok and finding.severity.value == "degraded"
    assert finding.data["receipts"][0]["id"] == rid and "MemoryError" in finding.detail
    assert api.get("/api/doctor", headers=H(installed.token)).json()["verdict"] == "degraded"

    monkeypatch.setattr(node.settings, "fault_materialise_memory_error", False)  # the cause is fixed
    r = api.post(f"/api/receipts/{rid}/redrive", headers=H(installed.token))
    assert r.status_code == 202, r.text
    assert r.json()["receipt"]["quarantined_at"] is None and r.json()["receipt"]["redrives"] == 1
    done = materialise_or_quarantine(node, rid)  # what the re-driven workflow (or the scan) runs
    assert done is not None and done.created
    assert api.get("/api/receipts", headers=H(installed.token)).json()["receipts"] == []
    assert _finding(node, installed.org_id).ok
    msgs = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages", headers=H(installed.token)).json()["messages"]
    assert [m["subject"] for m in msgs] == ["set aside"]
    with node.read() as conn:
        entries = conn.execute(select(audit.audit_entries)
                               .where(audit.audit_entries.c.action == "receipt.redrive")).all()
    assert [(e.subject, e.actor_id) for e in entries] == [(rid, installed.user_id)]


def test_attempts_that_never_finished_quarantine_instead_of_parsing_again(node: Any, installed: Any) -> None:
    rid = _accept(node)
    for _ in range(budgets.MATERIALISE_ATTEMPTS_MAX):
        assert quarantine.begin_attempt(node, rid) is not None  # each started, then the process died
    assert materialise_or_quarantine(node, rid) is None
    with node.read() as conn:
        row = conn.execute(select(ingress_receipts).where(ingress_receipts.c.id == rid)).one()
    assert row.quarantine_code == quarantine.ABANDONED and row.message_id is None
    assert row.quarantine_error.startswith(f"Materialisation was started {budgets.MATERIALISE_ATTEMPTS_MAX} times "
                                           "and never finished")


@pytest.mark.parametrize(("attempt", "abandon"), [(1, False), (budgets.MATERIALISE_ATTEMPTS_MAX, False),
                                                  (budgets.MATERIALISE_ATTEMPTS_MAX + 1, True)])
def test_abandoned_table(attempt: int, abandon: bool) -> None:
    assert quarantine.abandoned(attempt) is abandon


def test_only_an_administrator_sees_or_redrives_and_refusals_are_readable(
        api: Any, node: Any, installed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from mailnode.directory.tokens import create_token

    bob = api.post("/api/users", json={"email": "bob@example.test", "name": "Bob"}, headers=H(installed.token))
    with node.begin() as conn:
        _, bob_token = create_token(conn, org_id=installed.org_id, principal_id=bob.json()["user"]["id"],
                                    at=node.clock.now(), actor_id=installed.user_id, label="test")
    monkeypatch.setattr(node.settings, "fault_materialise_memory_error", True)
    rid = _accept(node)
    materialise_or_quarantine(node, rid)
    assert api.get("/api/receipts", headers=H(bob_token)).json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    assert api.post(f"/api/receipts/{rid}/redrive", headers=H(bob_token)).status_code == 403
    weird = api.get("/api/receipts?state=weird", headers=H(installed.token))
    assert weird.status_code == 422 and weird.json()["error"] == "E_STATE_UNKNOWN"
    bad_cursor = api.get("/api/receipts?cursor=msg_X", headers=H(installed.token))
    assert bad_cursor.status_code == 422 and bad_cursor.json()["detail"]["problems"][0]["field"] == "query.cursor"
    missing = api.post("/api/receipts/rcpt_NOPE/redrive", headers=H(installed.token))
    assert missing.status_code == 404 and missing.json()["error"] == "E_NO_SUCH_RECEIPT"
    monkeypatch.setattr(node.settings, "fault_materialise_memory_error", False)
    assert api.post(f"/api/receipts/{rid}/redrive", headers=H(installed.token)).status_code == 202
    again = api.post(f"/api/receipts/{rid}/redrive", headers=H(installed.token))
    assert again.status_code == 409 and again.json()["error"] == "E_RECEIPT_NOT_QUARANTINED"


def test_mailnode_receipt_list_and_redrive(node: Any, installed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node.settings, "fault_materialise_memory_error", True)
    rid = _accept(node)
    materialise_or_quarantine(node, rid)
    env = {"MAILNODE_DATABASE_URL": node.settings.database_url}
    args = ["--data-dir", str(node.settings.data_dir), "--json"]
    listed = CliRunner().invoke(app, ["receipt", "list", *args], env=env)
    assert listed.exit_code == 0, listed.output
    assert [r["id"] for r in json.loads(listed.output)["receipts"]] == [rid]
    done = CliRunner().invoke(app, ["receipt", "redrive", rid, *args], env=env)
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["receipt"]["redrives"] == 1
    again = CliRunner().invoke(app, ["receipt", "redrive", rid, *args], env=env)
    assert again.exit_code == 1 and "E_RECEIPT_NOT_QUARANTINED" in again.output
    with node.read() as conn:
        entry = conn.execute(select(audit.audit_entries).where(audit.audit_entries.c.action == "receipt.redrive")).one()
    assert entry.actor_kind == "installer"


def _wait(predicate: Any, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("timed out")


@pytest.mark.slow
def test_a_restart_after_a_quarantine_starts_cleanly_and_does_not_parse_it_again(tmp_path: Path,
                                                                                 database_url: str) -> None:
    served = Served(tmp_path / "node", served_env(database_url, MAILNODE_MATERIALISE_SCAN_INTERVAL_SECONDS="1"))
    try:
        served.start(MAILNODE_FAULT_MATERIALISE_MEMORY_ERROR="true")
        with smtplib.SMTP("127.0.0.1", served.smtp) as c:
            c.sendmail("someone@remote.test", ["support@example.test"], RAW)
        listed = _wait(lambda: served.call("GET", "/api/receipts?state=quarantined")["receipts"])
        rid = listed[0]["id"]
        assert listed[0]["materialise_attempts"] == 1
        assert served.stop() == 0
        served.start()  # the fault is gone; the quarantined receipt must still not be parsed again
        # The start-up scan ran before the node answered; a scheduled scan has begun and finished since, and so
        # has any materialisation either started.
        served.await_pass("materialise_scans")
        served.await_workflows_done("materialise-")
        after = served.call("GET", "/api/receipts?state=quarantined")["receipts"]
        assert [(r["id"], r["materialise_attempts"]) for r in after] == [(rid, 1)]
        assert served.call("GET", f"/api/mailboxes/{served.installed['mailbox_id']}/messages")["messages"] == []
        first_log, second_log = (p.read_bytes() for p in sorted(served.data_dir.glob("serve-*.log")))
        assert first_log.count(b"materialise.quarantined") == 1 and b"MemoryError" in first_log
        assert b"materialise.quarantined" not in second_log and b"Traceback" not in second_log
        redriven = served.call("POST", f"/api/receipts/{rid}/redrive")
        assert redriven["started"] is True
        msgs = _wait(lambda: served.call("GET",
                                         f"/api/mailboxes/{served.installed['mailbox_id']}/messages")["messages"])
        assert [m["subject"] for m in msgs] == ["set aside"]
        assert served.call("GET", "/api/receipts")["receipts"] == []
    finally:
        served.stop()


@pytest.mark.slow
def test_a_receipt_whose_attempts_are_killed_is_quarantined_not_parsed_at_every_start(tmp_path: Path,
                                                                                      database_url: str) -> None:
    """The crash loop of issue 14 item 1, with real processes: the node is killed (as by the kernel's
    out-of-memory killer) during each attempt; after MATERIALISE_ATTEMPTS_MAX of them the next start
    quarantines the receipt instead of parsing it again, and the node stays up."""
    served = Served(tmp_path / "node", served_env(database_url, MAILNODE_MATERIALISE_SCAN_INTERVAL_SECONDS="1"))
    try:
        served.start(MAILNODE_FAULT_MATERIALISE_DELAY_SECONDS="60")
        with smtplib.SMTP("127.0.0.1", served.smtp) as c:
            c.sendmail("someone@remote.test", ["support@example.test"], RAW)
        from mailnode.config import load_settings
        from mailnode.node import Node

        node = Node.open(load_settings(served.data_dir, database_url=served.env["MAILNODE_DATABASE_URL"]))

        def attempts() -> int:
            with node.read() as conn:
                return int(conn.execute(select(ingress_receipts.c.materialise_attempts)).scalar_one())

        try:
            for killed in range(1, budgets.MATERIALISE_ATTEMPTS_MAX + 1):
                if killed > 1:
                    served.start(MAILNODE_FAULT_MATERIALISE_DELAY_SECONDS="60")
                _wait(lambda n=killed: attempts() >= n)  # the attempt is counted, then it "parses" for a minute
                served.kill9()
            served.start(MAILNODE_FAULT_MATERIALISE_DELAY_SECONDS="60")
            listed = _wait(lambda: served.call("GET", "/api/receipts?state=quarantined")["receipts"])
            assert listed[0]["quarantine_code"] == quarantine.ABANDONED
            assert attempts() == budgets.MATERIALISE_ATTEMPTS_MAX + 1
            assert served.call("GET", "/api/health") is not None
        finally:
            node.close()
    finally:
        served.stop()
