"""``mailnode doctor --json`` shows the governance findings of a node whose sends are governed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from mailnode.cli import app
from tests.governance.e2e.conftest import Org

FINDINGS = ("send_breakers", "domain_paused", "domain_pause_pending", "delivery_visibility", "delivery_attribution")


def test_doctor_json_shows_breakers_pauses_and_delivery_findings(org: Org, settings: Any) -> None:
    org.pause("example.test")
    org.admin_person("eve@example.test")
    pending = org.api.post("/api/domain-pauses", json={"domain": "other.test", "reason": "check"},
                           headers=org.admin.headers)
    assert pending.status_code == 201, pending.text
    org.event("bounced", manifest_id=None, source="resend")
    r = CliRunner().invoke(app, ["doctor", "--json", "--data-dir", str(settings.data_dir)],
                           env={"MAILNODE_DATABASE_URL": settings.database_url})
    rep = json.loads(r.output)
    found = {f["name"]: f for f in rep["findings"]}
    assert set(FINDINGS) <= set(found), sorted(found)
    assert not found["domain_paused"]["ok"] and "compromised account" in found["domain_paused"]["detail"]
    assert not found["domain_pause_pending"]["ok"] and "other.test" in json.dumps(found["domain_pause_pending"])
    assert not found["delivery_attribution"]["ok"]
    assert "volume" in found["send_breakers"]["detail"] and "0%" not in found["send_breakers"]["detail"]
    assert found["delivery_visibility"]["detail"]
    assert rep["verdict"] == "degraded" and r.exit_code != 0


NO_OBSERVATIONS = ("delivery_visibility", "delivery_attribution", "provider_breaker")


@pytest.mark.parametrize("transport", ["file", "smtp"])
def test_a_fresh_nodes_doctor_says_not_observed_rather_than_ok(settings: Any, transport: str) -> None:
    """Nothing handed over, no event, no provider answer: those findings are not ok, and say why."""
    env = {"MAILNODE_DATABASE_URL": settings.database_url, "MAILNODE_TRANSPORT": transport}
    init = CliRunner().invoke(app, ["init", "--org", "Acme", "--domain", "acme.test", "--admin-email",
                                    "ann@acme.test", "--json", "--data-dir", str(settings.data_dir)], env=env)
    assert init.exit_code == 0, init.output
    r = CliRunner().invoke(app, ["doctor", "--json", "--data-dir", str(settings.data_dir)], env=env)
    rep = json.loads(r.output)
    found = {f["name"]: f for f in rep["findings"]}
    for name in NO_OBSERVATIONS:
        assert (found[name]["ok"], found[name]["severity"]) == (False, "report"), (name, found[name])
        assert found[name]["detail"].startswith("not observed: "), found[name]["detail"]
        assert found[name]["data"]["observed"] is False, name
    assert "every recorded delivery event" not in json.dumps(rep)
    assert "0 attributed delivery events" not in found["delivery_visibility"]["detail"]
    # The system sender is there (the installer's mailbox): its own finding says so.
    assert found["system_sender_missing"]["ok"] and found["system_sender_paused"]["ok"]
    # A finding that has not observed anything is a report: the verdict is not made worse by it.
    assert rep["verdict"] in ("ok", "degraded") and r.exit_code in (0, 1)
    assert all(f["ok"] for f in rep["findings"] if f["severity"] == "refuse")
