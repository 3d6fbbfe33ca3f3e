"""Governance at hand-over: the breaker drain, one ``send.rate_limited``, the domain pause after seal, an
approval completed by two deciders, a released policy hold and a cancelled approval, all through the real
sweep into a real SMTP sink."""

from __future__ import annotations

from sqlalchemy import select

from mailnode import budgets
from mailnode.authz import grant_unchecked
from mailnode.ids import new_id
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.governance import approvals
from tests.governance.e2e.conftest import Org


def test_a_breaker_gated_send_leaves_when_the_window_clears_and_a_policy_gated_one_never(org: Org) -> None:
    held_by = org.person("pat@example.test", ("send.propose", org.i.mailbox_id))
    org.publish("hold pat", "hold", actor_id=held_by.id)
    org.trip_volume()
    by_rate = org.seal(to="rate@remote.test")
    by_policy = org.seal(held_by, to="policy@remote.test")
    assert by_rate["state_reason"] == "breaker_volume" and by_policy["state_reason"] == "policy_hold"
    org.sweep()
    assert org.received() == []
    org.node.clock.advance(budgets.BREAKER_VOLUME_WINDOW_SECONDS + 1)
    for _ in range(3):
        org.sweep()
    assert org.received() == ["rate@remote.test"]
    assert org.read(by_rate["id"])["state"] == "handed_over"
    after = org.read(by_policy["id"])
    assert (after["state"], after["state_reason"]) == ("awaiting", "policy_hold")
    assert {r["submission_state"] for r in after["recipients"]} == {"awaiting"}


def test_many_sweeps_over_a_gated_send_write_one_rate_limited(org: Org) -> None:
    sent = org.seal()
    assert sent["state"] == "held"
    org.trip_volume()
    for _ in range(6):
        report = org.sweep()
        assert [r.detail for r in report.results] == ["breaker_volume"]
        # Each sweep that finds it still gated writes its recheck time: until then no sweep reads it.
        org.node.clock.advance(budgets.DISPATCH_SWEEP_INTERVAL_SECONDS)
        assert org.sweep().results == []
        org.node.clock.advance(budgets.BREAKER_RECHECK_SECONDS)
    [entry] = org.entries("send.rate_limited", sent["id"])
    assert entry.detail["at"] == "dispatch"
    read = org.read(sent["id"])
    assert (read["state"], read["state_reason"], read["attempts"]) == ("awaiting", "breaker_volume", 0)
    assert {r["submission_state"] for r in read["recipients"]} == {"awaiting"}
    assert org.received() == []


def test_a_paused_domain_is_withheld_at_seal_and_at_hand_over_and_another_domain_is_not(org: Org) -> None:
    other = org.other_mailbox("other.test")
    # A minute's hold window keeps the first send in the node while the pause is placed.
    org.api.patch(f"/api/mailboxes/{org.i.mailbox_id}", json={"hold_window_seconds": 60}, headers=org.admin.headers)
    before = org.seal(to="before@remote.test")
    assert before["state"] == "held"
    pause = org.pause("example.test")
    after = org.seal(to="after@remote.test")
    elsewhere = org.seal(mailbox_id=other, to="elsewhere@remote.test")
    assert (after["state"], after["state_reason"]) == ("withheld", "domain_paused")
    assert pause["pause_id"] in after["last_error"] and not org.approval_rows(after["id"])
    assert elsewhere["state"] == "held"
    org.node.clock.advance(61)
    org.sweep()
    at_hand_over = org.read(before["id"])
    assert (at_hand_over["state"], at_hand_over["state_reason"]) == ("withheld", "domain_paused")
    assert {r["submission_state"] for r in at_hand_over["recipients"]} == {"withheld"}
    assert org.read(elsewhere["id"])["state"] == "handed_over"
    assert org.received() == ["elsewhere@remote.test"]
    [withheld] = org.entries("send.withheld", before["id"])
    assert withheld.detail["reason"] == "domain_paused"


def test_an_approval_completed_by_two_deciders_moves_the_send_to_held_and_it_is_handed_over(org: Org) -> None:
    b = org.person("bea@example.test", ("approval.decide", org.i.mailbox_id))
    c = org.person("cal@example.test", ("approval.decide", org.i.mailbox_id))
    org.publish("two approvers", "require_approval", [{"count": 2}])
    sent = org.seal()
    aid = sent["approval_id"]
    assert sent["state_reason"] == "policy_approval_required" and aid.startswith("apr_")
    org.sweep()
    assert org.received() == []
    first = org.api.post(f"/api/approvals/{aid}/decide", json={"decision": "approve"}, headers=b.headers)
    assert first.json()["decided"]["completed"] is False
    assert org.read(sent["id"])["state"] == "awaiting"
    second = org.api.post(f"/api/approvals/{aid}/decide", json={"decision": "approve"}, headers=c.headers)
    assert second.json()["decided"]["manifest_state"] == "held"
    held = org.read(sent["id"])
    assert (held["state"], held["state_reason"]) == ("held", None)
    assert {r["submission_state"] for r in held["recipients"]} == {"held"}
    org.sweep()
    assert org.received() == ["ann@remote.test"]
    assert org.read(sent["id"])["state"] == "handed_over"


def test_releasing_a_policy_hold_hands_the_send_over(org: Org) -> None:
    org.publish("hold all", "hold")
    sent = org.seal()
    outsider = org.person("out@example.test")
    refused = org.api.post(f"/api/sends/{sent['id']}/release-hold", headers=outsider.headers)
    assert refused.status_code == 404 and refused.json()["error"] == "E_NO_SUCH_SEND"
    org.sweep()
    assert org.received() == []
    r = org.api.post(f"/api/sends/{sent['id']}/release-hold", headers=org.admin.headers)
    assert r.status_code == 200, r.text
    released = r.json()["send"]
    assert (released["state"], released["state_reason"]) == ("held", None)
    assert {x["submission_state"] for x in released["recipients"]} == {"held"}
    [entry] = org.entries("send.released", sent["id"])
    assert entry.actor_id == org.admin.id and entry.detail["from"] == "policy_hold"
    again = org.api.post(f"/api/sends/{sent['id']}/release-hold", headers=org.admin.headers)
    assert again.status_code == 409 and again.json()["error"] == "E_SEND_NOT_ON_POLICY_HOLD"
    # The policy still says hold, and the send was sealed under hold: not stricter, so it leaves.
    org.sweep()
    assert org.received() == ["ann@remote.test"]


def test_release_hold_refuses_a_send_at_another_gate(org: Org) -> None:
    org.trip_volume()
    sent = org.seal()
    r = org.api.post(f"/api/sends/{sent['id']}/release-hold", headers=org.admin.headers)
    assert r.status_code == 409 and "breaker_volume" in r.json()["why"]
    assert not org.entries("send.released", sent["id"])


def test_cancelling_a_send_settles_its_pending_approval(org: Org) -> None:
    b = org.person("bea@example.test", ("approval.decide", org.i.mailbox_id))
    org.publish("one approver", "require_approval")
    sent = org.seal()
    pending = org.api.get("/api/approvals", headers=b.headers).json()["approvals"]
    assert [a["id"] for a in pending] == [sent["approval_id"]]
    r = org.api.post(f"/api/sends/{sent['id']}/cancel", headers=org.admin.headers)
    assert r.status_code == 200 and r.json()["send"]["state"] == "cancelled"
    with org.node.read() as conn:
        state = conn.execute(select(approvals.c.state).where(approvals.c.id == sent["approval_id"])).scalar_one()
    assert state == "cancelled"
    assert org.api.get("/api/approvals", headers=b.headers).json()["approvals"] == []
    [entry] = org.entries("send.cancelled", sent["id"])
    assert entry.detail["approval_cancelled"] is True
    late = org.api.post(f"/api/approvals/{sent['approval_id']}/decide", json={"decision": "approve"},
                        headers=b.headers)
    assert late.status_code in (404, 409)


def test_releasing_the_policy_hold_of_a_butlers_send_leaves_it_at_the_butler_gate(org: Org) -> None:
    butler = new_id("btl")
    with org.node.begin() as conn:
        grant_unchecked(conn, org_id=org.org_id, at=org.node.clock.now(), subject_id=butler,
                        relation="send.propose", object_id=org.i.mailbox_id, actor_id=None)
    org.publish("hold Butler mail", "hold", actor_kind="butler")
    sealed = seal(org.node, org_id=org.org_id, author_id=butler, request=SealRequest(
        mailbox_id=org.i.mailbox_id, to=["ann@remote.test"], subject="Re: order", body="On its way."))
    # A policy hold outranks the Butler release gate at seal.
    assert sealed.state_reason == "policy_hold"
    r = org.api.post(f"/api/sends/{sealed.id}/release-hold", headers=org.admin.headers)
    assert r.status_code == 200, r.text
    assert (r.json()["send"]["state"], r.json()["send"]["state_reason"]) == ("awaiting", "butler_release_required")
    org.sweep()
    assert org.received() == []


def test_an_approved_butler_send_still_waits_for_a_persons_release(org: Org) -> None:
    b = org.person("bea@example.test", ("approval.decide", org.i.mailbox_id))
    butler = new_id("btl")
    with org.node.begin() as conn:
        grant_unchecked(conn, org_id=org.org_id, at=org.node.clock.now(), subject_id=butler,
                        relation="send.propose", object_id=org.i.mailbox_id, actor_id=None)
    org.publish("approve Butler mail", "require_approval", [{"count": 1}], actor_kind="butler")
    sealed = seal(org.node, org_id=org.org_id, author_id=butler, request=SealRequest(
        mailbox_id=org.i.mailbox_id, to=["ann@remote.test"], subject="Re: order", body="On its way."))
    assert sealed.state_reason == "policy_approval_required" and sealed.approval_id
    done = org.api.post(f"/api/approvals/{sealed.approval_id}/decide", json={"decision": "approve"},
                        headers=b.headers)
    assert done.json()["decided"]["completed"] is True, done.text
    after = org.read(sealed.id)
    assert (after["state"], after["state_reason"]) == ("awaiting", "butler_release_required")
    org.sweep()
    assert org.received() == []


def test_a_tripped_breaker_holds_deferrable_mail_of_an_author_a_stricter_policy_matches(org: Org) -> None:
    # Issue 17 item 1: an organisation-wide require_approval policy made the recheck drop the rate gate,
    # and dispatch ignored the policy refusal for deferrable mail: it went straight through the breaker.
    sealed = seal(org.node, org_id=org.org_id, author_id=org.admin.id, request=SealRequest(
        mailbox_id=org.i.mailbox_id, to=["late@remote.test"], subject="Your export", body="Ready.",
        mail_class="deferrable"))
    assert sealed.state == "held"
    org.publish("everything needs approval", "require_approval", stages=[{"count": 1}])
    org.trip_volume()
    org.sweep()
    assert org.received() == []
    after = org.read(sealed.id)
    assert (after["state"], after["state_reason"], after["attempts"]) == ("awaiting", "breaker_volume", 0)
    [entry] = org.entries("send.rate_limited", sealed.id)
    assert entry.detail["at"] == "dispatch"
    # The window clears: the breaker let it go, and policy (correspondence's gate) never held it.
    org.node.clock.advance(budgets.BREAKER_VOLUME_WINDOW_SECONDS + 1)
    org.sweep()
    assert org.received() == ["late@remote.test"]
    assert org.read(sealed.id)["state"] == "handed_over"
