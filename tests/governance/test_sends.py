"""Governance around a send: seal facts, approvals and their effects, the hand-over recheck, rate gating once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import and_, delete, or_, select

from mailnode import budgets
from mailnode.audit import audit_entries
from mailnode.budgets import APPROVAL_SEND_EXPIRY_SECONDS, GOVERNANCE_SEAL_FACTS_MAX_STATEMENTS
from mailnode.clock import utc
from mailnode.governance import breakers, gatefacts
from mailnode.schema.directory import relationship_tuples
from mailnode.schema.governance import breaker_limits
from mailnode.schema.outbound import send_manifests, send_recipients
from tests.governance.conftest import Person, World


def publish(api: Any, world: World, name: str, outcome: str, stages: list[dict[str, Any]] | None = None,
            **conditions: Any) -> dict[str, Any]:
    r = api.post("/api/policies", json={"name": name, "outcome": outcome, "conditions": conditions,
                                        "stages": stages or []}, headers=world.admin.headers)
    assert r.status_code == 201, r.text
    p = api.post(f"/api/policies/{r.json()['policy']['id']}/publish", headers=world.admin.headers)
    assert p.status_code == 200, p.text
    return p.json()["policy"]


def facts(world: World, author: str | None = None, recipients: tuple[str, ...] = ("x@elsewhere.test",)
          ) -> tuple[gatefacts.GovernanceFacts, int]:
    with world.node.read() as conn, world.node.meter.measure(keep_sql=True) as m:
        f = gatefacts.seal_facts(conn, org_id=world.org_id, mailbox_id=world.i.mailbox_id,
                                 author_id=author or world.admin.id, recipients=list(recipients), is_reply=False,
                                 sending_domain="example.test", now=world.node.clock.now(),
                                 delivery_signals="dsn")
    return f, m.count


def recheck(world: World, manifest_id: str, bound: str | None) -> gatefacts.RecheckFacts:
    with world.node.read() as conn:
        return gatefacts.recheck_facts(conn, org_id=world.org_id, manifest_id=manifest_id,
                                       mailbox_id=world.i.mailbox_id, author_id=world.admin.id,
                                       recipients=["x@elsewhere.test"], is_reply=False, sending_domain="example.test",
                                       bound_outcome=bound, now=world.node.clock.now(), delivery_signals="dsn")


def deciders(world: World) -> tuple[Person, Person]:
    b = world.person("b@example.test", ("approval.decide", world.i.mailbox_id))
    c = world.person("c@example.test", ("approval.decide", world.i.mailbox_id))
    return b, c


def gated_send(world: World, f: gatefacts.GovernanceFacts) -> tuple[str, str]:
    mid, _ = world.manifest(state="awaiting", reason="policy_approval_required", recipients=2,
                            policy_outcome=f.policy.outcome.value)
    with world.node.begin() as conn:
        aid = gatefacts.write_approval_request(conn, org_id=world.org_id, manifest_id=mid, facts=f,
                                               now=world.node.clock.now())
    return mid, aid


def send_state(world: World, mid: str) -> tuple[str, str | None, set[str]]:
    with world.node.read() as conn:
        m = conn.execute(select(send_manifests).where(send_manifests.c.id == mid)).one()
        rs = {r.submission_state for r in conn.execute(select(send_recipients)
                                                       .where(send_recipients.c.manifest_id == mid)).all()}
    return m.state, m.state_reason, rs


def test_seal_facts_cost_and_no_policy_allows(world: World) -> None:
    f, n = facts(world)
    assert f.policy.outcome.value == "allow" and f.approval is None and n == 2
    assert f.gate_inputs() == {"policy_outcome": "allow", "approval_satisfiable": True, "domain_paused": False,
                               "rate_gate": None}


def test_external_recipients_and_the_policy_outcome(api: Any, world: World) -> None:
    publish(api, world, "hold external", "hold", recipient_external=True)
    assert facts(world, recipients=("a@example.test",))[0].policy.outcome.value == "allow"
    held, _ = facts(world, recipients=("a@example.test", "z@elsewhere.test"))
    assert held.policy.outcome.value == "hold" and held.policy.matched[0].policy_name == "hold external"


def test_an_approved_send_is_held_and_rechecks_clean_until_it_expires(api: Any, world: World) -> None:
    b, c = deciders(world)
    publish(api, world, "two approvers", "require_approval", [{"count": 2}])
    f, n = facts(world)
    assert f.policy.outcome.value == "require_approval" and f.approval is not None
    assert len(f.approval.eligible) == 2 and f.approval_satisfiable and n <= GOVERNANCE_SEAL_FACTS_MAX_STATEMENTS
    mid, aid = gated_send(world, f)
    one = api.post(f"/api/approvals/{aid}/decide", json={"decision": "approve"}, headers=b.headers).json()["decided"]
    assert one["completed"] is False and one["open_stage"]["ordinal"] == 1
    # Only the keys of the decision: no effect yet, so no effect report (and no other kind's keys as nulls).
    decision_keys = {"approval_id", "subject_kind", "subject_id", "decision", "reason", "stage_ordinal",
                     "approval_state", "completed", "open_stage", "conflict"}
    assert set(one) == decision_keys
    dup = api.post(f"/api/approvals/{aid}/decide", json={"decision": "approve"}, headers=b.headers)
    assert dup.status_code == 409 and dup.json()["error"] == "E_ALREADY_DECIDED"
    outsider = world.person("o@example.test")
    assert api.post(f"/api/approvals/{aid}/decide", json={"decision": "approve"},
                    headers=outsider.headers).status_code == 404
    two = api.post(f"/api/approvals/{aid}/decide", json={"decision": "approve"}, headers=c.headers).json()["decided"]
    assert two["completed"] is True and two["manifest_state"] == "held"
    assert set(two) == decision_keys | {"manifest_state"}
    assert send_state(world, mid) == ("held", None, {"held"})
    assert recheck(world, mid, "require_approval").withhold_reason is None
    world.node.clock.advance(APPROVAL_SEND_EXPIRY_SECONDS + 1)
    assert recheck(world, mid, "require_approval").withhold_reason == "approval_expired"


def test_an_approver_who_loses_the_relation_makes_the_send_ineligible(api: Any, world: World) -> None:
    b, _c = deciders(world)
    publish(api, world, "one approver", "require_approval")
    f, _ = facts(world)
    mid, aid = gated_send(world, f)
    api.post(f"/api/approvals/{aid}/decide", json={"decision": "approve"}, headers=b.headers)
    assert send_state(world, mid)[0] == "held"
    with world.node.begin() as conn:
        conn.execute(delete(relationship_tuples).where(relationship_tuples.c.subject_id == b.id))
    assert recheck(world, mid, "require_approval").withhold_reason == "approver_ineligible"


def test_a_denial_withholds_and_a_withdrawal_that_leaves_a_shortfall_too(api: Any, world: World) -> None:
    b, c = deciders(world)
    publish(api, world, "two approvers", "require_approval", [{"count": 2}])
    f, _ = facts(world)
    denied, aid = gated_send(world, f)
    r = api.post(f"/api/approvals/{aid}/decide", json={"decision": "deny"}, headers=c.headers).json()["decided"]
    assert r["approval_state"] == "denied"
    assert send_state(world, denied) == ("withheld", "approval_denied", {"withheld"})
    other, aid2 = gated_send(world, f)
    api.post(f"/api/approvals/{aid2}/decide", json={"decision": "approve"}, headers=b.headers)
    w = api.post(f"/api/approvals/{aid2}/withdraw", headers=b.headers)
    assert w.status_code == 200 and w.json()["withdrawn"]["approval_state"] == "unsatisfiable"
    withdrawn_keys = {"approval_id", "approval_state", "stage_ordinal", "shortfall", "manifest_state"}
    assert set(w.json()["withdrawn"]) == withdrawn_keys
    assert send_state(world, other) == ("withheld", "approval_unsatisfiable", {"withheld"})
    assert api.post(f"/api/approvals/{aid2}/withdraw", headers=b.headers).status_code == 409


def test_a_seal_with_too_few_deciders_is_unsatisfiable(api: Any, world: World) -> None:
    deciders(world)
    publish(api, world, "three", "require_approval", [{"count": 3}])
    f, _ = facts(world)  # the author is one of the three: two remain
    assert f.gate_inputs()["approval_satisfiable"] is False and "Stage 1" in (f.shortfall_sentence() or "")


def test_a_stricter_policy_withholds_at_hand_over(api: Any, world: World) -> None:
    mid, _ = world.manifest(state="held", policy_outcome="allow")
    assert recheck(world, mid, "allow").withhold_reason is None
    publish(api, world, "stop replies", "deny", is_reply=False)
    rf = recheck(world, mid, "allow")
    assert rf.withhold_reason == "policy_stricter" and "deny" in rf.withhold_detail


def movable(now: Any) -> Any:
    """The shape of outbound's movable_now predicate, for driving the gate write in isolation."""
    m = send_manifests.c
    return and_(m.release_at <= now, or_(m.state.in_(("held", "throttled")),
                                         and_(m.state == "awaiting", m.state_reason.like("breaker_%"))))


def test_many_sweeps_over_a_rate_gated_send_write_one_entry(world: World) -> None:
    with world.node.begin() as conn:
        conn.execute(breaker_limits.insert().values(org_id=world.org_id, volume_max_recipients=1,
                                                    updated_by=world.admin.id, updated_at=world.node.clock.now()))
    world.handed_over(2)
    mid, _ = world.manifest(state="held")
    first = world.node.clock.now()
    written: list[bool] = []
    for _ in range(5):
        rf = recheck(world, mid, "allow")
        assert rf.withhold_reason is None and rf.rate_gate is not None
        assert rf.rate_gate.breaker is breakers.Breaker.VOLUME
        with world.node.begin() as conn:
            written.append(gatefacts.record_rate_limited(
                conn, org_id=world.org_id, manifest_id=mid, mailbox_id=world.i.mailbox_id, reading=rf.rate_gate,
                now=world.node.clock.now(), at="dispatch", guard=movable(world.node.clock.now())))
        world.node.clock.advance(5)
    assert written == [True, False, False, False, False]
    assert send_state(world, mid) == ("awaiting", "breaker_volume", {"awaiting"})
    with world.node.read() as conn:
        entries = conn.execute(select(audit_entries).where(audit_entries.c.action == "send.rate_limited")).all()
        release_at = conn.execute(select(send_manifests.c.release_at).where(send_manifests.c.id == mid)).scalar_one()
    assert len(entries) == 1 and entries[0].subject == mid
    # The recheck time was written once, by the first call; the guard kept the later ones from moving it.
    assert utc(release_at) == first + timedelta(seconds=budgets.BREAKER_RECHECK_SECONDS)


def test_a_recheck_writes_the_next_recheck_time_and_no_entry(world: World) -> None:
    with world.node.begin() as conn:
        conn.execute(breaker_limits.insert().values(org_id=world.org_id, volume_max_recipients=1,
                                                    updated_by=world.admin.id, updated_at=world.node.clock.now()))
    world.handed_over(2)
    # Sealed already gated: the seal wrote its entry; a hand-over that finds it still gated only rechecks.
    gated_at = world.node.clock.now()
    mid, _ = world.manifest(state="awaiting", reason="breaker_volume")
    now = world.node.clock.advance(10)
    rf = recheck(world, mid, "allow")
    assert rf.rate_gate is not None
    with world.node.begin() as conn:
        wrote = gatefacts.record_rate_limited(conn, org_id=world.org_id, manifest_id=mid,
                                              mailbox_id=world.i.mailbox_id, reading=rf.rate_gate, now=now,
                                              at="dispatch", guard=movable(now))
    assert wrote is False
    with world.node.read() as conn:
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == mid)).one()
        entries = conn.execute(select(audit_entries).where(audit_entries.c.action == "send.rate_limited")).all()
    recheck_at = now + timedelta(seconds=budgets.BREAKER_RECHECK_SECONDS)
    assert utc(row.release_at) == recheck_at and entries == []
    assert (row.state, row.state_reason, utc(row.state_at)) == ("awaiting", "breaker_volume", gated_at)
    assert row.last_error.endswith(f"The node asks the breakers again at {recheck_at.isoformat(timespec='seconds')}.")
