"""Policy lifecycle through the API, and the doctor's governance findings."""

from __future__ import annotations

from typing import Any

from mailnode.config import Settings
from mailnode.doctor.checks import CHECKS, run_checks
from mailnode.doctor.governance_checks import GOVERNANCE_CHECKS
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
    assert f["delivery_visibility"].ok and "no delivery, bounce or complaint signal can come" in f["delivery_visibility"].detail
    assert f["send_breakers"].ok and "unarmed" in f["send_breakers"].detail and "0%" not in f["send_breakers"].detail
    assert f["domain_paused"].ok and f["domain_pause_pending"].ok and f["delivery_attribution"].ok


def test_doctor_calls_a_silent_smtp_node_blind_and_reports_foreign_events(world: World) -> None:
    world.node.settings = Settings(data_dir=world.node.settings.data_dir,
                                   database_url=world.node.settings.database_url, transport="smtp")
    world.handed_over(3, at=world.ago(3600))
    world.event("delivery_report", manifest_id=None, source="dsn")
    f = findings(world)
    assert not f["delivery_visibility"].ok and f["delivery_visibility"].severity.value == "degraded"
    assert not f["send_breakers"].ok and "blind" in f["send_breakers"].detail
    assert not f["delivery_attribution"].ok and "another system" in f["delivery_attribution"].fix


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
