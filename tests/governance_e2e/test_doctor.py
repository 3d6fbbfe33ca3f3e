"""``mailnode doctor --json`` shows the governance findings of a node whose sends are governed."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from mailnode.cli import app
from tests.governance_e2e.conftest import Org

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
