"""``GET /api/sends/{id}`` reads a governed send correctly, with the reason in words: a send from a paused
domain, a send behind a tripped volume breaker, and a send waiting for approval (its id and open stage)."""

from __future__ import annotations

from mailnode.outbound.reads import NEXT_STEP, next_step
from mailnode.vocabulary.send_states import REASON_WORDS, StateReason
from tests.governance.e2e.conftest import Org


def test_a_send_from_a_paused_domain(org: Org) -> None:
    pause = org.pause("example.test")
    sent = org.seal()
    read = org.read(sent["id"])
    assert (read["state"], read["state_reason"]) == ("withheld", "domain_paused")
    assert read["reason_words"] == REASON_WORDS[StateReason.DOMAIN_PAUSED]
    assert "example.test is paused" in read["last_error"] and "compromised account" in read["last_error"]
    assert f"POST /api/domain-pauses/{pause['pause_id']}/lift" in read["last_error"]
    assert read["approval"] is None and read["retry"]["mode"] == "none"
    assert "lifts the pause" in read["next_step"]


def test_a_send_behind_a_tripped_volume_breaker(org: Org) -> None:
    org.trip_volume()
    sent = org.seal()
    read = org.read(sent["id"])
    assert (read["state"], read["state_reason"]) == ("awaiting", "breaker_volume")
    assert read["reason_words"] == REASON_WORDS[StateReason.BREAKER_VOLUME]
    assert "volume: 2 of 1 recipients handed over in the last 60 min" in read["last_error"]
    assert "go when the oldest hand-over leaves the window in 3600 s" in read["last_error"]
    assert "leaves by itself" in read["next_step"] and "GET /api/breakers" in read["next_step"]


def test_a_send_waiting_for_approval_shows_the_approval_and_its_open_stage(org: Org) -> None:
    b = org.person("bea@example.test", ("approval.decide", org.i.mailbox_id))
    org.person("cal@example.test", ("approval.decide", org.i.mailbox_id))
    org.person("dan@example.test", ("approval.decide", org.i.mailbox_id))
    org.publish("two then one", "require_approval", [{"count": 2}, {"count": 1}])
    sent = org.seal()
    read = org.read(sent["id"])
    assert (read["state"], read["state_reason"]) == ("awaiting", "policy_approval_required")
    assert read["reason_words"] == REASON_WORDS[StateReason.POLICY_APPROVAL_REQUIRED]
    approval = read["approval"]
    assert approval["id"] == sent["approval_id"] and approval["state"] == "pending"
    assert approval["expires_at"] is not None
    assert [(s["ordinal"], s["required"], s["approved"]) for s in approval["stages"]] == [(1, 2, 0), (2, 1, 0)]
    assert approval["open_stage"]["ordinal"] == 1
    assert f"POST /api/approvals/{sent['approval_id']}/decide" in read["next_step"]
    org.api.post(f"/api/approvals/{sent['approval_id']}/decide", json={"decision": "approve"}, headers=b.headers)
    stage = org.read(sent["id"])["approval"]["open_stage"]
    assert (stage["ordinal"], stage["approved"]) == (1, 1)
    # The deciders are not named on the send.
    assert b.id not in str(org.read(sent["id"]))


def test_every_reason_has_a_next_step_and_an_unknown_one_fails_closed() -> None:
    assert set(NEXT_STEP) == set(StateReason)
    assert next_step(None, send_id="snd_x", approval_id=None) is None
    assert "not one mailnode knows" in (next_step("made_up", send_id="snd_x", approval_id=None) or "")
