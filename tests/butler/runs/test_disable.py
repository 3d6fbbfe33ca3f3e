"""Issue 17 item 13: disabling a Butler stops new runs and lets the runs in flight finish, grants untouched."""

from __future__ import annotations

import json

from sqlalchemy import select

from mailnode.audit import audit_entries
from tests.butler.runs.conftest import World, ack_program, message


def test_a_disabled_butler_opens_no_run_and_its_parked_run_still_finishes_when_released(world: World) -> None:
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    first = world.deliver(message(subject="before"))
    parked = world.wait_run(first, until=lambda r: r.state == "awaiting_release")
    r = world.api.post(f"/api/butlers/{bid}/disable", json={"reason": "replying too eagerly"}, headers=world.admin)
    assert r.status_code == 200, r.text
    assert r.json()["butler"]["disabled"]["by"] == world.installed.user_id

    second = world.deliver(message(subject="after"))
    world.await_settled(second)  # the trigger has decided on it
    assert world.runs(second) == []
    # The run in flight walks on: a person's release still resumes it to its end.
    send_id = world.effects(parked.id)[-1].subject
    assert world.api.post(f"/api/sends/{send_id}/release", headers=world.admin).status_code == 200
    done = world.wait_run(first)
    assert (done.state, done.outcome_reason) == ("finished", None)
    # Its grants were not touched.
    grants = world.api.get("/api/access", params={"subject_id": bid}, headers=world.admin).json()["grants"]
    assert sorted(g["relation"] for g in grants) == ["mailbox.content.read", "send.propose"]

    assert world.api.post(f"/api/butlers/{bid}/enable", headers=world.admin).status_code == 200
    third = world.deliver(message(subject="enabled again"))
    assert world.wait_run(third, until=lambda r: r.state == "awaiting_release").butler_id == bid


def test_enable_records_the_reason_given_and_null_without_one(world: World) -> None:
    bid, _ = world.publish(ack_program())
    for reason, body in (("the mailbox is fixed", {"reason": "  the mailbox is fixed "}), (None, None)):
        assert world.api.post(f"/api/butlers/{bid}/disable", json={"reason": "wrong mailbox"},
                              headers=world.admin).status_code == 200
        r = world.api.post(f"/api/butlers/{bid}/enable", json=body, headers=world.admin)
        assert r.status_code == 200, r.text
        assert r.json()["butler"]["disabled"] is None
        with world.node.read() as conn:
            stored = conn.execute(select(audit_entries.c.detail).where(audit_entries.c.action == "butler.enabled")
                                  .order_by(audit_entries.c.seq.desc()).limit(1)).scalar_one()
        detail = json.loads(stored)
        assert (detail["reason"], detail["was_disabled_for"]) == (reason, "wrong mailbox")
    r = world.api.post(f"/api/butlers/{bid}/disable", json={"reason": "again"}, headers=world.admin)
    assert r.status_code == 200
    r = world.api.post(f"/api/butlers/{bid}/enable", json={"reason": "x" * 10_000}, headers=world.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_BUDGET_EXCEEDED"
