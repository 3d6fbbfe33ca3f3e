"""The notify sweeper against the local Resend server (spec/transactional.md §3): its three refusals,
stranded-claim recovery after the lease, the give-up age, and pages that never starve."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from mailnode import authz, budgets
from mailnode.outbound import sweeper
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.directory import relationship_tuples
from mailnode.schema.outbound import send_manifests
from tests.governance.conftest import World
from tests.support.resend_emulator import Fault

from .conftest import T0, Org


def test_a_day_long_outage_keeps_every_attempt_and_the_mail_goes_after_the_probe(org: Org) -> None:
    org.emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    first = org.deferrable(to="first@remote.test")
    sweeper.run_pass(org.node)
    assert org.send(first.id).attempts == 1 and org.requests() == 1
    queued = [org.deferrable(to=f"during{i}@remote.test") for i in range(3)]
    # Every ten minutes until midnight: nothing swept, no attempt spent, no request made.
    for minutes in range(10, 16 * 60, 10):
        org.clock.set(T0 + timedelta(minutes=minutes))
        report = sweeper.run_pass(org.node)
        assert report.plan is not None and report.plan.send_mode.value == "none"
    assert org.requests() == 1
    assert org.send(first.id).attempts == 1
    assert all(org.send(s.id).attempts == 0 and org.send(s.id).state == "held" for s in queued)
    # The pause has ended: the sweeper probes with one send, and since it is accepted, sends the rest.
    org.clock.set(datetime(2026, 3, 11, 0, 10, tzinfo=UTC))
    report = sweeper.run_pass(org.node)
    assert report.plan is not None and report.plan.send_mode.value == "probe_one"
    assert all(org.send(s.id).state == "handed_over" for s in [first, *queued])
    assert org.send(first.id).attempts == 2 and all(org.send(s.id).attempts == 1 for s in queued)
    assert org.requests() == 5


def test_a_failed_probe_re_arms_the_pause_and_sends_nothing_else(org: Org) -> None:
    org.emulator.add_fault(Fault(status=429, name="daily_quota_exceeded", times=2))
    sends = [org.deferrable(to=f"p{i}@remote.test") for i in range(3)]
    sweeper.run_pass(org.node)
    assert org.requests() == 1
    org.clock.set(datetime(2026, 3, 11, 0, 10, tzinfo=UTC))
    sweeper.run_pass(org.node)
    assert org.requests() == 2, "the probe is one request"
    assert org.status().unavailable_until == datetime(2026, 3, 12, tzinfo=UTC)
    assert sum(org.send(s.id).attempts for s in sends) == 2


def test_a_retry_at_20h_goes_and_one_at_40h_is_refused_to_a_person(org: Org) -> None:
    org.emulator.add_fault(Fault(status=500, name="application_error", times=2))
    sent = org.deferrable()
    sweeper.run_pass(org.node)
    row = org.send(sent.id)
    assert row.state == "outcome_unknown" and row.first_attempt_at == T0
    org.clock.set(T0 + timedelta(hours=20))
    sweeper.run_pass(org.node)
    row = org.send(sent.id)
    assert org.requests() == 2 and row.state == "outcome_unknown" and row.attempts == 2
    assert row.first_attempt_at == T0, "the key's first use never moves"
    org.clock.set(T0 + timedelta(hours=40))
    sweeper.run_pass(org.node)
    row = org.send(sent.id)
    assert org.requests() == 2, "the expired key is not reused silently"
    assert (row.state, row.state_reason) == ("outcome_unknown", "dedup_window_closed")
    # It has left every sweep query.
    assert sum(sweeper.run_pass(org.node).verdicts.values()) == 0


def test_a_worker_killed_mid_send_leaves_a_claim_the_sweeper_recovers_after_the_lease(org: Org) -> None:
    sent = org.deferrable()
    lease = T0 + timedelta(seconds=budgets.DISPATCH_LEASE_SECONDS)
    # What a claim writes before the first recipient is marked: the worker died right there.
    with org.node.begin() as conn:
        conn.execute(update(send_manifests).where(send_manifests.c.id == sent.id).values(
            state="outcome_unknown", attempts=1, first_attempt_at=T0, lease_until=lease, claim_token="dead/1"))
    report = sweeper.run_pass(org.node)
    # Under a live lease no query reads it (another worker may still be sending).
    assert report.verdicts == {} and org.requests() == 0 and org.send(sent.id).state == "outcome_unknown"
    org.clock.set(lease + timedelta(seconds=1))
    sweeper.run_pass(org.node)
    row = org.send(sent.id)
    assert row.state == "handed_over" and row.claim_token is None and org.requests() == 1


def test_deferrable_mail_past_the_give_up_age_is_given_up_even_while_the_breaker_is_shut(org: Org) -> None:
    org.emulator.add_fault(Fault(status=429, name="monthly_quota_exceeded"))
    sent = org.deferrable()
    sweeper.run_pass(org.node)
    org.clock.set(T0 + timedelta(seconds=budgets.SWEEPER_GIVE_UP_AGE_SECONDS))
    sweeper.run_pass(org.node)
    row = org.send(sent.id)
    assert (row.state, row.state_reason) == ("withheld", "gave_up")
    assert org.requests() == 1


def test_realtime_mail_found_pending_is_refused_never_retried(org: Org) -> None:
    from mailnode.outbound.seal import SealRequest, seal

    sealed = seal(org.node, org_id=org.installed.org_id, author_id=org.installed.user_id,
                  request=SealRequest(mailbox_id=org.installed.mailbox_id, to=["x@remote.test"], subject="Code",
                                      body="1", mail_class="realtime"))
    org.clock.set(T0 + timedelta(hours=1))
    sweeper.run_pass(org.node)
    row = org.send(sealed.id)
    assert (row.state, row.state_reason) == ("withheld", "realtime_not_retried") and org.requests() == 0


def test_pages_with_a_cursor_past_a_full_page_of_leased_rows(org: Org) -> None:
    leased = [org.deferrable(to=f"l{i}@remote.test") for i in range(3)]
    free = org.deferrable(to="free@remote.test")
    with org.node.begin() as conn:
        conn.execute(update(send_manifests).where(send_manifests.c.id.in_([s.id for s in leased])).values(
            state="outcome_unknown", lease_until=T0 + timedelta(minutes=5), claim_token="other/1"))
    sweeper.run_pass(org.node, batch_max=2)
    assert org.send(free.id).state == "handed_over"


def test_the_retention_hook_runs_before_the_send_passes_even_while_shut(org: Org) -> None:
    seen: list[datetime] = []

    def retention(node: object, now: datetime) -> None:
        seen.append(now)

    org.emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    org.deferrable()
    sweeper.run_pass(org.node)
    sweeper.register_pre_send_pass(retention)
    try:
        report = sweeper.run_pass(org.node)
    finally:
        sweeper.PRE_SEND_PASSES.remove(retention)
    assert seen == [T0] and report.pre_passes >= 1 and report.plan is not None
    assert report.plan.send_mode.value == "none"



def test_a_probe_is_not_spent_on_a_send_a_gate_stops_before_the_provider(org: Org) -> None:
    leaver = World(org.node, org.installed).person("leaver@example.test", ("send.propose", org.installed.mailbox_id))
    stopped = seal(org.node, org_id=org.installed.org_id, author_id=leaver.id, request=SealRequest(
        mailbox_id=org.installed.mailbox_id, to=["first@remote.test"], subject="Notice", body="Hello",
        mail_class="deferrable"))
    later = org.deferrable(to="second@remote.test")
    org.emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    sweeper.run_pass(org.node)
    assert org.requests() == 1 and org.send(stopped.id).state == "throttled"
    # During the pause its author loses send.propose: at its next hand-over a gate stops it before the
    # provider is asked, so it cannot be the probe; the probe is still owed and the next send carries it.
    with org.node.begin() as conn:
        (grant,) = conn.execute(select(relationship_tuples.c.id).where(
            relationship_tuples.c.subject_id == leaver.id)).all()
        authz.revoke(conn, org_id=org.installed.org_id, actor_id=org.installed.user_id, at=org.clock.now(),
                     grant_id=grant.id)
    org.clock.set(datetime(2026, 3, 11, 0, 10, tzinfo=UTC))
    report = sweeper.run_pass(org.node)
    assert report.plan is not None and report.plan.send_mode.value == "probe_one"
    assert (org.send(stopped.id).state, org.send(stopped.id).state_reason) == ("withheld", "authority_lost")
    assert org.send(later.id).state == "handed_over" and org.requests() == 2
