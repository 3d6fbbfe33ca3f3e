"""Policy lifecycle through the API, and the doctor's governance findings."""

from __future__ import annotations

from typing import Any

import pytest

from mailnode.config import Settings
from mailnode.doctor.checks import CHECKS, run_checks
from mailnode.doctor.governance_checks import GOVERNANCE_CHECKS, attribution_finding, visibility_finding
from tests.governance.conftest import World


def test_policy_lifecycle(api: Any, world: World) -> None:
    h = world.admin.headers
    created = api.post("/api/policies", json={"name": "Hold Butler mail", "outcome": "hold",
                                              "conditions": {"actor_kind": "butler"}}, headers=h)
    assert created.status_code == 201, created.text
    pid = created.json()["policy"]["id"]
    assert api.post("/api/policies", json={"name": "Hold Butler mail", "outcome": "deny"},
                    headers=h).json()["error"] == "E_POLICY_NAME_TAKEN"
    first = api.post(f"/api/policies/{pid}/publish", headers=h).json()["policy"]
    assert [(v["version"], v["state"]) for v in first["versions"]] == [(1, "published")]
    assert api.post(f"/api/policies/{pid}/publish", headers=h).json()["error"] == "E_NO_POLICY_DRAFT"
    api.post(f"/api/policies/{pid}/draft", json={"outcome": "hold", "conditions": {"actor_kind": "butler"}}, headers=h)
    same = api.post(f"/api/policies/{pid}/publish", headers=h)
    assert same.status_code == 409 and same.json()["error"] == "E_POLICY_UNCHANGED"
    api.post(f"/api/policies/{pid}/draft", json={"outcome": "deny", "conditions": {"actor_kind": "butler"}}, headers=h)
    second = api.post(f"/api/policies/{pid}/publish", headers=h).json()["policy"]
    assert [(v["version"], v["state"]) for v in second["versions"]] == [(2, "published"), (1, "superseded")]
    listed = api.get("/api/policies", headers=h).json()["policies"]
    assert [p["id"] for p in listed] == [pid]
    nobody = world.person("n@example.test")
    assert api.get("/api/policies", headers=nobody.headers).status_code == 404
    assert api.post("/api/policies", json={"name": "x", "outcome": "deny"}, headers=nobody.headers).status_code == 403


def test_publication_refuses_unsatisfiable_stages_and_unknown_teams(api: Any, world: World) -> None:
    h = world.admin.headers
    pid = api.post("/api/policies", json={"name": "four eyes", "outcome": "require_approval",
                                          "stages": [{"count": 2}]}, headers=h).json()["policy"]["id"]
    r = api.post(f"/api/policies/{pid}/publish", headers=h)
    assert r.status_code == 409 and r.json()["error"] == "E_APPROVAL_UNSATISFIABLE"
    api.post(f"/api/policies/{pid}/draft", json={"outcome": "require_approval",
                                                 "stages": [{"count": 1, "team_id": "tm_01ARZ3NDEKTSV4RRFFQ69G5FAV"}]},
             headers=h)
    assert api.post(f"/api/policies/{pid}/publish", headers=h).json()["error"] == "E_NO_SUCH_TEAM"
    bad = api.post("/api/policies", json={"name": "v", "outcome": "deny", "conditions": {"org_daily_volume_min": 0}},
                   headers=h)
    assert bad.status_code == 422 and bad.json()["error"] == "E_BAD_POLICY_VOLUME"


def findings(world: World) -> dict[str, Any]:
    return {f.name: f for f in run_checks(world.node, world.org_id, list(GOVERNANCE_CHECKS))}


def test_the_governance_checks_are_registered() -> None:
    assert all(name in CHECKS for name in GOVERNANCE_CHECKS)


def test_doctor_on_a_file_transport_says_no_signal_can_come(world: World) -> None:
    world.handed_over(3, at=world.ago(3600))
    f = findings(world)
    visibility = f["delivery_visibility"]
    assert (visibility.ok, visibility.severity.value) == (False, "report")  # not observed, never a reassuring ok
    assert visibility.detail.startswith("not observed: ") and "no delivery, bounce or complaint signal can come" \
        in visibility.detail
    assert f["send_breakers"].ok and "unarmed" in f["send_breakers"].detail and "0%" not in f["send_breakers"].detail
    assert f["domain_paused"].ok and f["domain_pause_pending"].ok
    assert not f["delivery_attribution"].ok and f["delivery_attribution"].detail.startswith("not observed: ")


def test_doctor_calls_a_silent_smtp_node_blind_and_reports_foreign_events(world: World) -> None:
    world.node.settings = Settings(data_dir=world.node.settings.data_dir,
                                   database_url=world.node.settings.database_url, transport="smtp")
    world.handed_over(3, at=world.ago(3600))
    world.event("delivery_report", manifest_id=None, source="dsn")
    f = findings(world)
    assert not f["delivery_visibility"].ok and f["delivery_visibility"].severity.value == "degraded"
    assert not f["send_breakers"].ok and "blind" in f["send_breakers"].detail
    assert not f["delivery_attribution"].ok and "another system" in f["delivery_attribution"].fix


def _facts(signals: str = "dsn", old: int = 0, attributed: int = 0, unattributed: int = 0) -> dict[str, Any]:
    return {"old_handovers": old, "attributed_events": attributed, "unattributed_events": unattributed,
            "delivery_signals": signals, "transport": {"dsn": "smtp", "webhook": "resend", "none": "file"}[signals],
            "blind": old > 0 and attributed == 0}


@pytest.mark.parametrize(("facts", "severity", "ok", "says"), [
    (_facts("none"), "report", False, "not observed: the file transport reports no deliveries by design"),
    (_facts("none", old=5, attributed=0), "report", False, "not observed: the file transport"),
    # A fresh node: nothing handed over, nothing heard. Not "0 attributed delivery events" with ok.
    (_facts("dsn"), "report", False, "not observed: no delivery event has been attributed"),
    (_facts("webhook", unattributed=2), "report", False, "not observed"),
    (_facts("dsn", old=3), "degraded", False, "blind: 3 recipients"),
    (_facts("webhook", old=3), "degraded", False, "no provider webhook event has been attributed"),
    (_facts("dsn", attributed=1), "degraded", True, "1 attributed delivery events"),
    (_facts("webhook", old=4, attributed=2), "degraded", True, "2 attributed delivery events; 4 recipients"),
])
def test_visibility_finding(facts: dict[str, Any], severity: str, ok: bool, says: str) -> None:
    f = visibility_finding(facts)
    assert (f.name, f.severity.value, f.ok) == ("delivery_visibility", severity, ok)
    assert says in f.detail
    assert f.data["observed"] is (ok or severity == "degraded")


@pytest.mark.parametrize(("facts", "severity", "ok", "says"), [
    (_facts("dsn"), "report", False, "not observed: no delivery event has been recorded"),
    (_facts("none"), "report", False, "not observed"),
    (_facts("dsn", attributed=3), "degraded", True, "every one of the 3 recorded delivery events"),
    (_facts("dsn", unattributed=2), "degraded", False, "2 delivery events name no send"),
    (_facts("webhook", attributed=5, unattributed=1), "degraded", False, "1 delivery events name no send"),
])
def test_attribution_finding(facts: dict[str, Any], severity: str, ok: bool, says: str) -> None:
    f = attribution_finding(facts)
    assert (f.name, f.severity.value, f.ok) == ("delivery_attribution", severity, ok)
    assert says in f.detail
    assert bool(f.fix) is (not ok and severity == "degraded")


def test_doctor_on_a_fresh_smtp_node_does_not_call_delivery_ok(world: World) -> None:
    world.node.settings = Settings(data_dir=world.node.settings.data_dir,
                                   database_url=world.node.settings.database_url, transport="smtp")
    f = findings(world)
    for name in ("delivery_visibility", "delivery_attribution"):
        assert (f[name].ok, f[name].severity.value) == (False, "report"), name
        assert f[name].detail.startswith("not observed: ") and f[name].data["observed"] is False, name
    world.handed_over(2, at=world.ago(60))
    mid, _ = world.handed_over(1, at=world.ago(60))
    world.event("delivered", manifest_id=mid, at=world.ago(30))
    f = findings(world)
    assert f["delivery_visibility"].ok and "1 attributed delivery events" in f["delivery_visibility"].detail
    assert f["delivery_attribution"].ok and "every one of the 1 recorded" in f["delivery_attribution"].detail


def test_doctor_shows_pauses_in_force_and_pending(api: Any, world: World) -> None:
    b = world.admin_person("b@example.test")
    c = world.admin_person("c@example.test")
    first = api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "abuse"},
                     headers=world.admin.headers).json()["pause"]
    assert not findings(world)["domain_pause_pending"].ok
    for p in (b, c):
        api.post(f"/api/approvals/{first['approval_id']}/decide", json={"decision": "approve"}, headers=p.headers)
    world.node.clock.advance(600)
    f = findings(world)
    assert not f["domain_paused"].ok and "abuse" in f["domain_paused"].detail
    assert f"/api/domain-pauses/{first['pause_id']}/lift" in f["domain_paused"].fix
    assert f["domain_pause_pending"].ok
