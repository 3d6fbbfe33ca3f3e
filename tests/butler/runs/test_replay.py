"""Inspect and re-run: the gated inspection of a run, and re-runs that re-ask every judgement and seal a send
only when its content is new (spec/butler.md §8.2)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode import budgets
from mailnode.butler import replay, replay_rule, trigger
from mailnode.schema.butler_runs import butler_runs
from mailnode.schema.outbound import drafts, send_manifests
from mailnode.vocabulary.send_states import SendState
from tests.butler.runs.builders import World, message, person, release, send_of, wait_for
from tests.butler.runs.conftest import ack_program


def test_the_fact_classification_is_total_over_the_facts_a_run_carries() -> None:
    assert set(replay.FACT_DISCLOSURE) == set(trigger.FACT_NAMES)
    assert {k for k, v in replay.FACT_DISCLOSURE.items() if v == "content"} == {"subject", "from", "return_path",
                                                                               "parse_error"}
    shown, redacted = replay.disclose({"subject": "s", "message_id": "m", "x_new_fact": 1}, may_read=False)
    assert shown == {"subject": None, "message_id": "m", "x_new_fact": None} and redacted == ["subject", "x_new_fact"]


@pytest.mark.parametrize("state", list(SendState))
def test_whether_an_incumbent_stands_is_decided_for_every_send_state(state: SendState) -> None:
    assert replay_rule.stands(state.value) is (state not in (SendState.CANCELLED, SendState.WITHHELD))


def test_an_unknown_send_state_stands() -> None:
    assert replay_rule.stands("teleported") is True


def test_content_identity_collapses_case_order_and_duplicates_only() -> None:
    a = replay_rule.content_identity("mbx_1", ["B@x.test", "a@x.test"], [], [], "Re: hi", "msg_1", "h")
    assert a == replay_rule.content_identity("mbx_1", ["a@x.test", "b@x.test", "A@x.test"], [], [], "Re: hi",
                                             "msg_1", "h")
    assert a != replay_rule.content_identity("mbx_1", ["a@x.test", "b@x.test"], [], [], "Re: hi!", "msg_1", "h")
    assert a != replay_rule.content_identity("mbx_1", ["a@x.test", "b@x.test"], [], [], "Re: hi", "msg_1", "h2")


def _parked(world: World) -> tuple[str, Any, str]:
    bid, _ = world.publish(ack_program(), name="acknowledge")
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(subject="Order 42"))
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    return bid, run, world.effects(run.id)[-1].subject


def _rerun(world: World, run_id: str, headers: dict[str, str] | None = None) -> Any:
    return world.api.post(f"/api/butler-runs/{run_id}/replay", json={"mode": "re-run"}, headers=headers or world.admin)


def _sends(world: World) -> int:
    with world.node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(send_manifests)).scalar_one())


def _replayed(world: World, r: Any) -> Any:
    """The re-run the answer names, once it ended or parked on a send."""
    assert r.status_code == 202, r.text
    new_id = r.json()["replay"]["run_id"]

    def settled() -> Any:
        with world.node.read() as conn:
            row = conn.execute(select(butler_runs).where(butler_runs.c.id == new_id)).first()
        return row if row is not None and row.state != "running" else None

    return wait_for(settled)


def test_inspect_shows_the_run_its_program_its_sends_and_redacts_mail_content(world: World) -> None:
    _bid, run, send_id = _parked(world)
    r = world.api.get(f"/api/butler-runs/{run.id}/inspect", headers=world.admin)
    assert r.status_code == 200, r.text
    seen = r.json()["inspection"]
    assert seen["run"]["id"] == run.id and seen["program"]["checks"] is True
    assert [n["id"] for n in seen["program"]["nodes"]] == ["may_reply", "reply", "propose", "quiet"]
    # The installing administrator holds the mailbox's relations: the facts are shown.
    assert seen["trigger_facts"]["subject"] == "Order 42" and seen["trigger_facts_redacted"] is None
    assert [(e["node_id"], e["outcome"]) for e in seen["effects"]] == [("reply", "ok"), ("propose", "ok")]
    assert "send" not in seen["effects"][0], "only a send's effect row carries a send"
    sent = seen["effects"][1]["send"]
    assert (sent["id"], sent["state"], sent["retry"]["mode"], sent["retry"]["basis"]) == (
        send_id, "awaiting", "none", "not_yet_attempted")
    assert seen["re_run"] == {"available": True, "why": None} and seen["replays"] == []
    assert "which branch a guard" in seen["not_recorded"]
    # Another administrator with no relation on the mailbox sees the run, not the mail.
    other = person(world, "olga@example.test", ("org.admin", world.installed.org_id))
    theirs = world.api.get(f"/api/butler-runs/{run.id}/inspect", headers=other).json()["inspection"]
    assert theirs["trigger_facts"]["subject"] is None and theirs["trigger_facts"]["return_path"] is None
    assert theirs["trigger_facts"]["message_id"] == run.trigger_key
    assert theirs["trigger_facts_redacted"]["keys"] == ["from", "parse_error", "return_path", "subject"]
    # Anyone else: absent.
    reader = person(world, "rita@example.test", ("mailbox.content.read", world.installed.mailbox_id))
    gone = world.api.get(f"/api/butler-runs/{run.id}/inspect", headers=reader)
    assert (gone.status_code, gone.json()["error"]) == (404, "E_NO_SUCH_BUTLER_RUN")
    assert _rerun(world, run.id, reader).status_code == 404


def test_rerunning_a_run_whose_send_is_still_held_seals_nothing(world: World) -> None:
    _bid, run, send_id = _parked(world)
    release(world, send_id)
    assert send_of(world, send_id).state == "held"
    again = _replayed(world, _rerun(world, run.id))
    assert again.id.startswith(f"{run.version_id}-brp_") and again.replay_of == run.id
    assert (again.state, again.outcome_reason) == ("finished", None)
    rows = world.effects(again.id)
    assert [(e.node_id, e.outcome, e.reason, e.subject) for e in rows][1] == (
        "propose", "ok", "replay_identical_content", send_id)
    assert _sends(world) == 1
    entries = world.api.get("/api/audit", params={"action": "butler.replayed"}, headers=world.admin).json()["entries"]
    assert [(e["actor_kind"], json.loads(e["detail"])["replay_of"] if isinstance(e["detail"], str)
             else e["detail"]["replay_of"]) for e in entries] == [("user", run.id)]
    # A second re-run resumes the draft the first one left, rather than colliding with it.
    third = _replayed(world, _rerun(world, run.id))
    assert [(e.node_id, e.outcome, e.reason) for e in world.effects(third.id)] == [
        ("reply", "ok", None), ("propose", "ok", "replay_identical_content")]
    with world.node.read() as conn:
        assert conn.execute(select(func.count()).select_from(drafts)).scalar_one() == 1
    listed = world.api.get(f"/api/butler-runs/{run.id}/inspect", headers=world.admin).json()["inspection"]
    assert [r["id"] for r in listed["replays"]] == [again.id, third.id]


def test_rerunning_after_the_program_changed_the_text_seals_a_new_send(world: World) -> None:
    bid, run, send_id = _parked(world)
    changed = ack_program()
    changed["nodes"][1]["body"] = "Thank you; a person will answer today."
    assert world.api.put(f"/api/butlers/{bid}/draft", json={"source": json.dumps(changed)},
                         headers=world.admin).status_code == 200
    published = world.api.post(f"/api/butlers/{bid}/publish", headers=world.admin).json()["published"]
    again = _replayed(world, _rerun(world, run.id))
    assert again.version_id == published["version_id"] != run.version_id
    assert (again.state, again.outcome_reason) == ("awaiting_release", "butler_release_required")
    propose = world.effects(again.id)[-1]
    new_send = propose.subject
    assert new_send != send_id and _sends(world) == 2
    # The content rule's one read of the source run's sends fits in the send's reservation.
    assert propose.statements <= budgets.BUTLER_RESERVE_SEND_PROPOSE_STATEMENTS
    assert send_of(world, new_send).state == "awaiting"


def test_rerunning_a_run_whose_send_a_since_fixed_policy_withheld_records_replay_send_decided(world: World) -> None:
    made = world.api.post("/api/policies", json={"name": "no Butler mail", "outcome": "deny",
                                                 "conditions": {"actor_kind": "butler"}, "stages": []},
                          headers=world.admin)
    assert made.status_code == 201, made.text
    policy = made.json()["policy"]["id"]
    assert world.api.post(f"/api/policies/{policy}/publish", headers=world.admin).status_code == 200
    bid, _ = world.publish(ack_program(), name="acknowledge")
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(subject="Order 42"))
    run = world.wait_run(mid)
    [_, propose] = world.effects(run.id)
    assert (propose.outcome, propose.reason) == ("refused", "policy_denied")
    assert send_of(world, propose.subject).state == "withheld"
    # The policy is fixed.
    assert world.api.post(f"/api/policies/{policy}/draft", json={"outcome": "allow", "conditions": {}, "stages": []},
                          headers=world.admin).status_code == 200
    assert world.api.post(f"/api/policies/{policy}/publish", headers=world.admin).status_code == 200
    again = _replayed(world, _rerun(world, run.id))
    assert [(e.node_id, e.outcome, e.reason, e.subject) for e in world.effects(again.id)][1] == (
        "propose", "refused", "replay_send_decided", propose.subject)
    assert (again.state, again.refusals) == ("finished", 1) and _sends(world) == 1


def test_rerunning_a_run_whose_send_was_cancelled_records_replay_send_decided(world: World) -> None:
    _bid, run, send_id = _parked(world)
    cancelled = world.api.post(f"/api/sends/{send_id}/cancel", headers=world.admin)
    assert cancelled.status_code == 200, cancelled.text
    again = _replayed(world, _rerun(world, run.id))
    assert [(e.outcome, e.reason, e.subject) for e in world.effects(again.id)][1] == (
        "refused", "replay_send_decided", send_id)
    assert _sends(world) == 1


def test_a_rerun_refuses_an_unknown_mode_and_a_paused_butler(world: World) -> None:
    bid, run, _ = _parked(world)
    odd = world.api.post(f"/api/butler-runs/{run.id}/replay", json={"mode": "retry-effect"}, headers=world.admin)
    assert (odd.status_code, odd.json()["error"]) == (422, "E_BUTLER_REPLAY_MODE_UNKNOWN")
    from mailnode.butler import pause

    with world.node.begin() as conn:
        placed = pause.place(conn, org_id=world.installed.org_id, butler_id=bid, name="acknowledge",
                             figure=pause.reading(3, [bid]), message_id=run.trigger_key, at=world.node.clock.now())
    refused = _rerun(world, run.id)
    assert (refused.status_code, refused.json()["error"]) == (409, "E_BUTLER_PAUSED")
    assert placed in refused.json()["fix"]
    seen = world.api.get(f"/api/butler-runs/{run.id}/inspect", headers=world.admin).json()["inspection"]
    assert seen["re_run"] == {"available": False, "why": "butler_paused"}
