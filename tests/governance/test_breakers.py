"""The breaker statement over real rows: one statement, both predicates, foreign corpora, plans, the API."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import insert

from mailnode.governance import breakers
from mailnode.ids import new_id
from mailnode.outbound import events
from mailnode.schema.governance import breaker_limits
from mailnode.schema.outbound import send_recipient_events, send_recipients
from tests.governance.conftest import World


def state(world: World, signals: str = "webhook", **kw: Any) -> breakers.BreakerState:
    with world.node.read() as conn:
        counts = breakers.fetch(conn, org_id=world.org_id, now=world.node.clock.now(), **kw)
    return breakers.read(counts, now=world.node.clock.now(), delivery_signals=signals)


def test_get_breakers_on_a_fresh_node_is_unarmed_with_no_percentage(api: Any, world: World) -> None:
    r = api.get("/api/breakers", headers=world.admin.headers)
    assert r.status_code == 200, r.text
    readings = {b["breaker"]: b for b in r.json()["breakers"]}
    assert list(readings) == ["volume", "bounce_rate", "complaint_rate"]
    for name in ("bounce_rate", "complaint_rate"):
        assert readings[name]["armed"] is False
        assert readings[name]["unarmed_reason"] == "no_observations"
        assert readings[name]["percent"] is None and readings[name]["percent"] != 0
        assert readings[name]["tripped"] is False
    assert readings["volume"]["percent"] is None and readings["volume"]["observed"] == 0
    assert all(b["sentence"] for b in readings.values())


def test_get_breakers_says_too_few_observations_when_some_were_observed(api: Any, world: World) -> None:
    """Three attributed events (one bounce): ``observations: 3`` is never next to ``no_observations``."""
    mid, _ = world.handed_over(3, at=world.ago(600))
    world.event("delivered", manifest_id=mid, at=world.ago(300))
    world.event("delivered", manifest_id=mid, at=world.ago(300))
    world.event("bounced", manifest_id=mid, at=world.ago(200))
    readings = {b["breaker"]: b for b in api.get("/api/breakers", headers=world.admin.headers).json()["breakers"]}
    bounce, complaint = readings["bounce_rate"], readings["complaint_rate"]
    assert (bounce["observations"], bounce["min_observations"], bounce["armed"]) == (3, 20, False)
    assert bounce["unarmed_reason"] == "too_few_observations" and bounce["percent"] is None
    assert "unarmed (too few observations), 3 observations" in bounce["sentence"]
    assert (complaint["observations"], complaint["unarmed_reason"]) == (2, "too_few_observations")


def test_the_breaker_statement_is_exactly_one_statement(world: World) -> None:
    world.handed_over(3)
    with world.node.read() as conn, world.node.meter.measure(keep_sql=True) as m:
        breakers.evaluate(conn, org_id=world.org_id, now=world.node.clock.now(), delivery_signals="dsn",
                          sending_domain="example.test", recipient_domains=["example.test", "other.test"])
    assert m.count == 1, m.statements


def populate(world: World) -> str:
    """30 delivered and 10 bounced attributed events (25 %), 2 complaints, plus noise that must never count."""
    mid, _ = world.handed_over(40, at=world.ago(600))
    for _ in range(30):
        world.event("delivered", manifest_id=mid, at=world.ago(300))
    for _ in range(10):
        world.event("bounced", manifest_id=mid, at=world.ago(200))
    for _ in range(2):
        world.event("complained", manifest_id=mid, at=world.ago(100))
    # Attributed events of kinds no breaker counts.
    for kind in ("deferred", "failed", "rejected", "opened", "sent"):
        for _ in range(15):
            world.event(kind, manifest_id=mid, at=world.ago(100))
    return mid


def delivery_report_corpus(world: World) -> None:
    """Delivery reports about another system's mail, as ingress records them: unattributed reports."""
    for _ in range(50):
        world.event("delivery_report", manifest_id=None, at=world.ago(100), source="dsn")
    for _ in range(50):
        world.event("complaint_report", manifest_id=None, at=world.ago(100), source="arf")


def provider_bounce_corpus(world: World) -> None:
    """Provider events in the counted vocabulary that name no send of this node (manifest NULL)."""
    for kind in ("bounced", "complained", "delivered"):
        for _ in range(50):
            world.event(kind, manifest_id=None, at=world.ago(100), source="resend")


def assert_true_readings(st: breakers.BreakerState) -> None:
    bounce = st.reading(breakers.Breaker.BOUNCE_RATE)
    complaint = st.reading(breakers.Breaker.COMPLAINT_RATE)
    assert (bounce.observed, bounce.observations, bounce.percent) == (10, 40, 25)
    assert (complaint.observed, complaint.observations) == (2, 30)
    assert not bounce.tripped


@pytest.mark.parametrize("corpus", [delivery_report_corpus, provider_bounce_corpus])
def test_foreign_rows_never_count(world: World, corpus: Any) -> None:
    populate(world)
    corpus(world)
    assert_true_readings(state(world))


@pytest.mark.parametrize("removed", sorted(breakers.EVENT_PREDICATES))
def test_removing_either_predicate_makes_the_corpus_test_fail(world: World, removed: str) -> None:
    populate(world)
    delivery_report_corpus(world)
    provider_bounce_corpus(world)
    assert_true_readings(state(world))
    weakened = breakers.EVENT_PREDICATES - {removed}
    with pytest.raises(AssertionError):
        assert_true_readings(state(world, event_predicates=weakened))


def test_the_provider_bounce_corpus_alone_needs_the_attribution_predicate(world: World) -> None:
    populate(world)
    provider_bounce_corpus(world)
    with pytest.raises(AssertionError):
        assert_true_readings(state(world, event_predicates=frozenset({"event_type"})))


def unguarded_event_counts(stmt: Any) -> list[str]:
    """Labels of sub-selects over send_recipient_events that lack either predicate."""
    missing = []
    for col in stmt.selected_columns:
        inner = getattr(col, "element", None)
        sub = getattr(inner, "element", None)
        froms = getattr(sub, "get_final_froms", list)()
        if send_recipient_events not in froms:
            continue
        where = str(sub.whereclause)
        if ("send_recipient_events.event_type IN" not in where
                or "send_recipient_events.manifest_id IS NOT NULL" not in where):
            missing.append(col.name)
    return missing


def test_every_event_counting_subselect_carries_both_predicates(world: World) -> None:
    stmt = breakers.statement(org_id=world.org_id, now=world.node.clock.now(), sending_domain="example.test")
    counted = [c.name for c in stmt.selected_columns if "send_recipient_events" in str(c)]
    assert len(counted) == 6, counted
    assert unguarded_event_counts(stmt) == []
    # The reader itself can fail: a statement missing a predicate is caught.
    for removed in breakers.EVENT_PREDICATES:
        weak = breakers.statement(org_id=world.org_id, now=world.node.clock.now(),
                                  event_predicates=breakers.EVENT_PREDICATES - {removed})
        assert len(unguarded_event_counts(weak)) == 6


def test_a_success_dsn_is_never_a_bounce_and_deferred_never_counts(world: World) -> None:
    mid, rids = world.handed_over(25, at=world.ago(600))
    with world.node.begin() as conn:
        for n, rid in enumerate(rids):
            events.record(conn, org_id=world.org_id, event="delivered", attribution=events.Attribution(mid, rid),
                          recipient=None, status="2.0.0", source="dsn", source_event_id=f"ok-{n}",
                          at=world.node.clock.now())
            events.record(conn, org_id=world.org_id, event="deferred", attribution=events.Attribution(mid, rid),
                          recipient=None, status="4.4.1", source="dsn", source_event_id=f"later-{n}",
                          at=world.node.clock.now())
    bounce = state(world).reading(breakers.Breaker.BOUNCE_RATE)
    assert (bounce.observed, bounce.observations, bounce.percent, bounce.armed) == (0, 25, 0, True)
    complaint = state(world).reading(breakers.Breaker.COMPLAINT_RATE)
    assert complaint.observations == 25 and complaint.observed == 0


def test_bounce_basis_follows_the_transport(world: World) -> None:
    mid, _ = world.handed_over(30, at=world.ago(600))
    for _ in range(12):
        world.event("bounced", manifest_id=mid, at=world.ago(60))
    dsn = state(world, "dsn").reading(breakers.Breaker.BOUNCE_RATE)
    assert (dsn.basis, dsn.observations, dsn.observed, dsn.percent, dsn.tripped) == ("handed_over", 30, 12, 40, True)
    hook = state(world, "webhook").reading(breakers.Breaker.BOUNCE_RATE)
    assert (hook.basis, hook.observations, hook.armed, hook.percent) == ("events", 12, False, None)
    none = state(world, "none").reading(breakers.Breaker.BOUNCE_RATE)
    assert none.basis == "events"
    # The oldest bounce leaves the 6 h window in 6 h - 60 s; a lower bound for a rate.
    assert dsn.retry_after_seconds == breakers.WINDOW_SECONDS[breakers.Breaker.BOUNCE_RATE] - 60
    assert dsn.retry_after_exact is False


def test_volume_trips_over_the_limit_and_clears_when_the_window_passes(world: World) -> None:
    with world.node.begin() as conn:
        conn.execute(insert(breaker_limits).values(org_id=world.org_id, volume_max_recipients=5,
                                                   updated_by=world.admin.id, updated_at=world.node.clock.now()))
    world.handed_over(3, at=world.ago(1800))
    world.handed_over(3, at=world.ago(60))
    vol = state(world).reading(breakers.Breaker.VOLUME)
    assert (vol.observed, vol.limit, vol.tripped, vol.retry_after_exact) == (6, 5, True, True)
    assert vol.retry_after_seconds == 1800 and vol.percent is None
    assert state(world).gate is not None and state(world).gate.reason == "breaker_volume"
    world.node.clock.advance(1801)
    vol = state(world).reading(breakers.Breaker.VOLUME)
    assert (vol.observed, vol.tripped) == (3, False)


def test_rows_outside_the_window_do_not_count(world: World) -> None:
    world.handed_over(7, at=world.ago(breakers.WINDOW_SECONDS[breakers.Breaker.VOLUME] + 1))
    assert state(world).reading(breakers.Breaker.VOLUME).observed == 0
    assert state(world).day_volume == 7


def fill(world: World, old_rows: int, in_window: int) -> None:
    """Many old rows and a few in-window rows, inserted in bulk."""
    mid, _ = world.handed_over(1, at=world.ago(10 * 86400))
    old = world.ago(3 * 86400)
    recent = world.ago(60)
    with world.node.begin() as conn:
        conn.execute(insert(send_recipients), [
            {"id": new_id("srp"), "org_id": world.org_id, "manifest_id": mid, "kind": "to", "address": f"o{n}@x.test",
             "submission_state": "handed_over", "submission_state_at": old if n >= in_window else recent,
             "created_at": old} for n in range(old_rows)])
        kinds = ("delivered", "bounced", "complained", "deferred", "delivery_report")
        conn.execute(insert(send_recipient_events), [
            {"id": new_id("sev"), "org_id": world.org_id, "event_type": kinds[n % len(kinds)],
             "recipient": "r@x.test", "manifest_id": mid if n % 7 else None, "source": "bulk",
             "source_event_id": f"b{n}", "received_at": old if n >= in_window else recent} for n in range(old_rows)])
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("ANALYZE send_recipients")
            conn.exec_driver_sql("ANALYZE send_recipient_events")


def test_the_statement_seeks_indexes_rather_than_scanning(world: World) -> None:
    fill(world, 20_000, 50)
    stmt = breakers.statement(org_id=world.org_id, now=world.node.clock.now(), sending_domain="example.test")
    with world.node.read() as conn:
        plan = "\n".join(breakers.query_plan(conn, stmt))
        dialect = conn.dialect.name
    assert "ix_send_recipients_handed_over" in plan, plan
    assert "ix_send_recipient_events_attributed" in plan, plan
    if dialect == "sqlite":
        assert "SCAN send_recipient" not in plan, plan
    else:
        assert "Seq Scan on send_recipient" not in plan, plan
