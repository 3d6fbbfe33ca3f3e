"""Issue 17 item 14: an administrator with no relation on the mailbox reads a run's redacted mail facts only
under a supervised grant two deciders approved, for a limited time, and every such read is audited
``supervised.opened`` before the facts are shown (seed 003 "`org.admin` is the floor on `inspect`")."""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import select

from mailnode.audit import audit_entries
from tests.butler.runs.builders import World, message, person
from tests.butler.runs.conftest import ack_program


def _opened(world: World) -> list[dict[str, object]]:
    with world.node.read() as conn:
        rows = conn.execute(select(audit_entries.c.actor_id, audit_entries.c.subject, audit_entries.c.detail)
                            .where(audit_entries.c.action == "supervised.opened").order_by(audit_entries.c.seq)).all()
    return [{"actor": r.actor_id, "subject": r.subject, **json.loads(r.detail)} for r in rows]


def test_a_supervised_grant_opens_a_runs_mail_facts_for_its_time_and_every_read_is_audited(world: World) -> None:
    bid, _ = world.publish(ack_program(), name="acknowledge")
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(subject="Order 42"))
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    mailbox = world.installed.mailbox_id
    olga = person(world, "olga@example.test", ("org.admin", world.installed.org_id))
    inspect = f"/api/butler-runs/{run.id}/inspect"

    def facts() -> dict[str, object]:
        r = world.api.get(inspect, headers=olga)
        assert r.status_code == 200, r.text
        return dict(r.json()["inspection"])

    assert facts()["trigger_facts"]["subject"] is None  # type: ignore[index]
    deciders = [person(world, e, ("approval.decide", mailbox)) for e in ("dora@example.test", "dan@example.test")]

    ask = {"mailbox_id": mailbox, "scope": "metadata", "reason": "complaint 17: what did the Butler answer?",
           "duration_seconds": 3600}
    r = world.api.post("/api/supervised-grants", json=ask, headers=olga)
    assert r.status_code == 201, r.text
    grant, approval_id = r.json()["supervised_grant"], r.json()["approval_id"]
    assert (grant["granted_at"], grant["live"]) == (None, False)
    # Asked is not granted: still redacted, nothing recorded.
    assert facts()["trigger_facts_redacted"] is not None and _opened(world) == []

    queue = world.api.get("/api/approvals", headers=deciders[0]).json()["approvals"]
    asked = next(a for a in queue if a["id"] == approval_id)
    assert asked["subject_kind"] == "supervised_read"
    assert (asked["supervised"]["reason"], asked["supervised"]["scope"]) == (ask["reason"], "metadata")
    for decider in deciders:
        d = world.api.post(f"/api/approvals/{approval_id}/decide", json={"decision": "approve"}, headers=decider)
        assert d.status_code == 200, d.text
    live = next(g for g in world.api.get("/api/supervised-grants", headers=olga).json()["supervised_grants"]
                if g["id"] == grant["id"])
    assert live["live"] is True

    seen = facts()
    assert seen["trigger_facts"]["subject"] == "Order 42"  # type: ignore[index]
    assert seen["trigger_facts_redacted"] is None and seen["supervised_grant_id"] == grant["id"]
    opened = _opened(world)
    assert len(opened) == 1
    assert (opened[0]["actor"], opened[0]["subject"], opened[0]["grant_id"]) == (
        person_id(world, "olga@example.test"), run.id, grant["id"])
    assert opened[0]["fields"] == ["from", "parse_error", "return_path", "subject"]

    # The grant ends on its own: after expires_at the facts are redacted again and nothing more is recorded.
    world.node.clock.set(datetime.fromisoformat(live["expires_at"]))  # type: ignore[attr-defined]
    assert facts()["trigger_facts"]["subject"] is None  # type: ignore[index]
    assert len(_opened(world)) == 1


def test_a_supervised_grant_nobody_can_approve_is_refused_and_writes_nothing(world: World) -> None:
    olga = person(world, "olga@example.test", ("org.admin", world.installed.org_id))
    r = world.api.post("/api/supervised-grants", headers=olga, json={
        "mailbox_id": world.installed.mailbox_id, "scope": "content", "reason": "audit", "duration_seconds": 60})
    assert (r.status_code, r.json()["error"]) == (409, "E_SUPERVISED_UNSATISFIABLE")
    assert world.api.get("/api/supervised-grants", headers=olga).json()["supervised_grants"] == []


def person_id(world: World, email: str) -> str:
    from mailnode.schema.directory import users

    with world.node.read() as conn:
        return str(conn.execute(select(users.c.id).where(users.c.email == email)).scalar_one())
