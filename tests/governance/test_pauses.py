"""The two-administrator domain pause through the API: refused alone, placed by two others, lifted by one."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from mailnode.audit import audit_entries
from mailnode.governance import gatefacts
from mailnode.schema.governance import approvals, domain_pauses
from tests.governance.conftest import World


def count(world: World, table: Any) -> int:
    with world.node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def actions(world: World) -> list[str]:
    with world.node.read() as conn:
        return [r.action for r in conn.execute(select(audit_entries.c.action).order_by(audit_entries.c.seq)).all()]


def test_a_lone_administrator_is_refused_before_anything_is_written(api: Any, world: World) -> None:
    before = actions(world)
    r = api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "spam run"},
                 headers=world.admin.headers)
    assert r.status_code == 409 and r.json()["error"] == "E_DOMAIN_PAUSE_UNSATISFIABLE"
    body = r.json()
    assert "POST /api/policies" in body["fix"] and "/cancel" in body["fix"]
    assert body["detail"]["other_administrators"] == 0
    assert count(world, domain_pauses) == 0 and count(world, approvals) == 0 and actions(world) == before


def test_two_administrators_are_still_too_few(api: Any, world: World) -> None:
    world.admin_person("b@example.test")
    r = api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "spam run"},
                 headers=world.admin.headers)
    assert r.status_code == 409 and r.json()["error"] == "E_DOMAIN_PAUSE_UNSATISFIABLE"
    assert r.json()["detail"]["other_administrators"] == 1
    assert count(world, domain_pauses) == 0


def test_placed_by_two_others_and_lifted_by_one(api: Any, world: World) -> None:
    b = world.admin_person("b@example.test")
    c = world.admin_person("c@example.test")
    r = api.post("/api/domain-pauses", json={"domain": "Example.TEST", "reason": "compromised account"},
                 headers=world.admin.headers)
    assert r.status_code == 201, r.text
    pause = r.json()["pause"]
    assert pause["domain"] == "example.test" and pause["eligible"] == 2
    assert api.get("/api/domain-pauses", headers=world.admin.headers).json()["pauses"] == []
    # The requester may not decide; a second request is refused while this one is open.
    own = api.post(f"/api/approvals/{pause['approval_id']}/decide", json={"decision": "approve"},
                   headers=world.admin.headers)
    assert own.status_code == 409 and own.json()["error"] == "E_APPROVER_IS_ACTOR"
    again = api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "x"}, headers=b.headers)
    assert again.status_code == 409 and again.json()["error"] == "E_DOMAIN_PAUSE_PENDING"
    queue = api.get("/api/approvals", headers=b.headers).json()["approvals"]
    assert [a["id"] for a in queue] == [pause["approval_id"]] and queue[0]["domain_pause"]["domain"] == "example.test"
    first = api.post(f"/api/approvals/{pause['approval_id']}/decide", json={"decision": "approve"}, headers=b.headers)
    assert first.status_code == 200 and first.json()["decided"]["completed"] is False
    bad = api.post(f"/api/approvals/{pause['approval_id']}/decide", json={"decision": "maybe"}, headers=c.headers)
    assert bad.status_code == 422 and bad.json()["error"] == "E_BAD_DECISION"
    second = api.post(f"/api/approvals/{pause['approval_id']}/decide", json={"decision": "approve"},
                      headers=c.headers)
    assert second.status_code == 200, second.text
    assert second.json()["decided"]["completed"] is True and second.json()["decided"]["domain_paused"] is True
    listed = api.get("/api/domain-pauses", headers=b.headers).json()["pauses"]
    assert [p["pause_id"] for p in listed] == [pause["pause_id"]] and listed[0]["reason"] == "compromised account"
    assert "domain.pause_placed" in actions(world)
    # In force: seal and dispatch facts see it for this domain, not for another.
    with world.node.read() as conn:
        facts = gatefacts.seal_facts(conn, org_id=world.org_id, mailbox_id=world.i.mailbox_id,
                                     author_id=world.admin.id, recipients=["x@elsewhere.test"], is_reply=False,
                                     sending_domain="example.test", now=world.node.clock.now(),
                                     delivery_signals="dsn")
        other = gatefacts.seal_facts(conn, org_id=world.org_id, mailbox_id=world.i.mailbox_id,
                                     author_id=world.admin.id, recipients=["x@elsewhere.test"], is_reply=False,
                                     sending_domain="other.test", now=world.node.clock.now(),
                                     delivery_signals="dsn")
        recheck = gatefacts.recheck_facts(conn, org_id=world.org_id, manifest_id="snd_x", mailbox_id=world.i.mailbox_id,
                                          author_id=world.admin.id, recipients=["x@elsewhere.test"], is_reply=False,
                                          sending_domain="example.test", bound_outcome="allow",
                                          now=world.node.clock.now(), delivery_signals="dsn")
    assert facts.gate_inputs()["domain_paused"] is True and other.gate_inputs()["domain_paused"] is False
    assert recheck.withhold_reason == "domain_paused" and "/lift" in recheck.withhold_detail
    # One administrator lifts it, alone.
    lifted = api.post(f"/api/domain-pauses/{pause['pause_id']}/lift", json={}, headers=b.headers)
    assert lifted.status_code == 200 and lifted.json()["lifted"]["domain"] == "example.test"
    assert api.get("/api/domain-pauses", headers=b.headers).json()["pauses"] == []
    twice = api.post(f"/api/domain-pauses/{pause['pause_id']}/lift", json={}, headers=c.headers)
    assert twice.status_code == 409 and twice.json()["error"] == "E_DOMAIN_PAUSE_ALREADY_LIFTED"
    assert actions(world).count("domain.pause_lifted") == 1


def test_a_denial_leaves_the_request_as_a_record(api: Any, world: World) -> None:
    b = world.admin_person("b@example.test")
    world.admin_person("c@example.test")
    pause = api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "r"},
                     headers=world.admin.headers).json()["pause"]
    d = api.post(f"/api/approvals/{pause['approval_id']}/decide", json={"decision": "deny"}, headers=b.headers)
    assert d.status_code == 200 and d.json()["decided"]["approval_state"] == "denied"
    with world.node.read() as conn:
        row = conn.execute(select(domain_pauses)).one()
    assert row.placed_at is None and row.reason == "r"
    lift = api.post(f"/api/domain-pauses/{pause['pause_id']}/lift", json={}, headers=b.headers)
    assert lift.status_code == 409 and lift.json()["error"] == "E_DOMAIN_PAUSE_NOT_PLACED"
    # A new request is allowed after a refusal.
    assert api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "again"},
                    headers=world.admin.headers).status_code == 201


def test_only_administrators_ask_or_lift(api: Any, world: World) -> None:
    someone = world.person("p@example.test")
    r = api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "r"}, headers=someone.headers)
    assert r.status_code == 403 and r.json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    bad = api.post("/api/domain-pauses", json={"domain": "not a domain", "reason": "r"}, headers=world.admin.headers)
    assert bad.status_code == 422
