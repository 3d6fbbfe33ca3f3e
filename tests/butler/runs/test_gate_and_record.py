"""The release gate's timeout and late releases; a hand-edited stored program refused before any effect;
loop bounds; the run record's read routes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select, text

from mailnode.schema.butler import butler_versions
from mailnode.schema.butler_runs import butler_runs
from mailnode.schema.outbound import send_manifests
from tests.butler.runs.conftest import World, ack_program, message, program
from tests.conftest import bearer


def _send_state(world: World, send_id: str) -> tuple[str, str | None]:
    with world.node.read() as conn:
        row = conn.execute(select(send_manifests.c.state, send_manifests.c.state_reason)
                           .where(send_manifests.c.id == send_id)).one()
    return row.state, row.state_reason


def test_a_release_timeout_stops_the_run_and_leaves_the_send_releasable(world: World) -> None:
    world.node.settings.butler_release_timeout_seconds = 0.5
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message())
    run = world.wait_run(mid)
    assert (run.state, run.outcome_reason) == ("stopped", "release_timed_out")
    send_id = world.effects(run.id)[-1].subject
    assert _send_state(world, send_id) == ("awaiting", "butler_release_required")
    # A release after the run ended still releases the send; the ended run is left as it is.
    r = world.api.post(f"/api/sends/{send_id}/release", headers=world.admin)
    assert r.status_code == 200, r.text
    assert r.json()["release"] == {"send_id": send_id, "state": "held", "run_id": run.id, "resumed": False,
                                        "resumption": "run_not_parked"}
    assert _send_state(world, send_id) == ("held", None)
    assert world.wait_run(mid).outcome_reason == "release_timed_out"


def test_a_timed_out_send_can_be_cancelled(world: World) -> None:
    world.node.settings.butler_release_timeout_seconds = 0.5
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    run = world.wait_run(world.deliver(message()))
    send_id = world.effects(run.id)[-1].subject
    assert world.api.post(f"/api/sends/{send_id}/cancel", headers=world.admin).status_code == 200
    assert _send_state(world, send_id)[0] == "cancelled"


def test_a_release_after_the_run_is_gone_still_releases_the_send(world: World) -> None:
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message())
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    send_id = world.effects(run.id)[-1].subject
    from dbos import DBOS

    # The workflow's durable state is gone (an operator deleted it, or it outlived retention).
    DBOS.cancel_workflow(run.id)
    DBOS.delete_workflow(run.id)
    r = world.api.post(f"/api/sends/{send_id}/release", headers=world.admin)
    assert r.status_code == 200, r.text
    assert (r.json()["release"]["resumed"], r.json()["release"]["resumption"]) == (False, "workflow_gone")
    assert _send_state(world, send_id) == ("held", None)
    gone = world.wait_run(mid)
    assert (gone.state, gone.outcome_reason) == ("finished", "released_after_run_expired")


def test_only_someone_with_send_propose_releases_and_only_a_butler_gate(world: World) -> None:
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    run = world.wait_run(world.deliver(message()), until=lambda r: r.state == "awaiting_release")
    send_id = world.effects(run.id)[-1].subject
    r = world.api.post("/api/users", json={"email": "bob@example.test", "name": "Bob"}, headers=world.admin)
    bob = r.json()["user"]["id"]
    from mailnode.directory.tokens import create_token

    with world.node.begin() as conn:
        _, token = create_token(conn, org_id=world.installed.org_id, principal_id=bob, at=world.node.clock.now(),
                                actor_id=world.installed.user_id, label="test")
    refused = world.api.post(f"/api/sends/{send_id}/release", headers=bearer(token))
    assert refused.status_code == 409 and refused.json()["detail"] == {
        "send_id": send_id, "released": False, "reason": "not_found"}
    assert _send_state(world, send_id) == ("awaiting", "butler_release_required")
    # A person's own send (no Butler gate) is not released here either.
    mine = world.api.post("/api/sends", json={"mailbox_id": world.installed.mailbox_id, "to": ["x@remote.test"],
                                              "subject": "hi", "body": "hi"}, headers=world.admin)
    assert world.api.post(f"/api/sends/{mine.json()['send']['id']}/release",
                          headers=world.admin).status_code == 409


def _hand_edit(world: World, version_id: str, doc: dict[str, Any]) -> None:
    """Change a published version's stored program behind the frozen-row triggers' back."""
    with world.node.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("ALTER TABLE butler_versions DISABLE TRIGGER USER"))
        else:
            conn.execute(text("DROP TRIGGER trg_butler_versions_frozen_content"))
        conn.execute(butler_versions.update().where(butler_versions.c.id == version_id)
                     .values(ast_json=json.dumps(doc)))
        if conn.dialect.name == "postgresql":
            conn.execute(text("ALTER TABLE butler_versions ENABLE TRIGGER USER"))


_TAKE = {"id": "take", "type": "case.assign", "caseId": "${event.case_id}", "assignee": "${butler.id}", "next": None}


@pytest.mark.parametrize("nodes", [
    [{"id": "think", "type": "llm.classify", "next": "take"}, _TAKE],
    [{"id": "a", "type": "join", "next": "b"}, {"id": "b", "type": "join", "next": "a"}, _TAKE],
    [{"id": "a", "type": "join", "next": "nowhere"}, _TAKE],
], ids=["reserved-node", "cycle", "dangling-edge"])
def test_a_hand_edited_stored_program_is_refused_before_any_effect(world: World, nodes: list[dict[str, Any]]) -> None:
    bid, vid = world.publish(program([_TAKE], "take", ["send.propose"]))
    world.grant(bid, "send.propose")
    edited = program(nodes, nodes[0]["id"], ["send.propose"])
    _hand_edit(world, vid, edited)
    run = world.wait_run(world.deliver(message()))
    assert (run.state, run.outcome_reason) == ("refused", "ast_does_not_check")
    assert world.effects(run.id) == []


def test_run_reads_are_for_administrators_and_never_show_trigger_facts(world: World) -> None:
    bid, _ = world.publish(program([{"id": "done", "type": "stop", "reason": "seen"}], "done"))
    run = world.wait_run(world.deliver(message(subject="private subject")))
    listed = world.api.get("/api/butler-runs", params={"butler_id": bid, "limit": 1000}, headers=world.admin)
    assert listed.status_code == 200 and [r["id"] for r in listed.json()["butler_runs"]] == [run.id]
    one = world.api.get(f"/api/butler-runs/{run.id}", headers=world.admin).json()["butler_run"]
    assert one["state"] == "stopped" and one["effect_rows"] == []
    assert "private subject" not in listed.text + json.dumps(one) and "trigger_facts" not in one
    with world.node.read() as conn:
        facts = conn.execute(select(butler_runs.c.trigger_facts)).scalar_one()
    assert facts["subject"] == "private subject" and facts["return_path"] == "customer@remote.test"
    assert set(facts) >= {"automated", "reply_refusal", "dmarc", "spf", "dkim", "attachments",
                          "attachments_dangerous", "message_id", "case_id", "mailbox_address"}
    r = world.api.post("/api/users", json={"email": "carol@example.test", "name": "Carol"}, headers=world.admin)
    from mailnode.directory.tokens import create_token

    with world.node.begin() as conn:
        _, token = create_token(conn, org_id=world.installed.org_id, principal_id=r.json()["user"]["id"],
                                at=world.node.clock.now(), actor_id=world.installed.user_id, label="test")
    assert world.api.get("/api/butler-runs", headers=bearer(token)).status_code == 404
    assert world.api.get(f"/api/butler-runs/{run.id}", headers=bearer(token)).status_code == 404


def test_a_late_release_still_leaves_a_full_hold_window_to_cancel_in(world: World) -> None:
    from datetime import timedelta

    from mailnode import budgets

    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose")
    mid = world.deliver(message())
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    send_id = world.effects(run.id)[-1].subject
    late = timedelta(seconds=budgets.SEND_HOLD_WINDOW_DEFAULT_SECONDS * 4)
    world.node.clock.advance(late.total_seconds())  # type: ignore[attr-defined]
    released_at = world.node.clock.now()
    r = world.api.post(f"/api/sends/{send_id}/release", headers=world.admin)
    assert r.status_code == 200, r.text
    with world.node.read() as conn:
        release_at = conn.execute(select(send_manifests.c.release_at)
                                  .where(send_manifests.c.id == send_id)).scalar_one()
    assert release_at == released_at + timedelta(seconds=budgets.SEND_HOLD_WINDOW_DEFAULT_SECONDS)
    # Inside that window the person can still take it back.
    assert world.api.post(f"/api/sends/{send_id}/cancel", headers=world.admin).status_code == 200
    assert _send_state(world, send_id)[0] == "cancelled"
