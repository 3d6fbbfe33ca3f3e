"""Deferrable mail's first hand-over is the dispatch sweep's; what fails is the notify sweeper's
(``outbound.classes.DeliveredBy.FIRST_BY_DISPATCH_THEN_SWEEPER``), against the local Resend server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailnode import budgets
from mailnode.outbound import dispatch, sweeper
from tests.support.resend_emulator import Fault

from .conftest import T0, Org


def test_a_deferrable_send_goes_with_the_next_dispatch_sweep_not_the_next_sweeper_pass(org: Org) -> None:
    sent = org.deferrable()
    report = dispatch.sweep(org.node)
    assert [(r.manifest_id, r.state) for r in report.results] == [(sent.id, "handed_over")]
    assert org.requests() == 1 and org.send(sent.id).attempts == 1


@pytest.mark.parametrize(("fault", "after_first"), [
    (Fault(status=500, name="application_error"), "outcome_unknown"),
    (Fault(status=429, name="rate_limit_exceeded"), "throttled"),
])
def test_after_a_failed_first_hand_over_only_the_sweeper_retries_it(org: Org, fault: Fault,
                                                                   after_first: str) -> None:
    org.emulator.add_fault(fault)
    sent = org.deferrable()
    dispatch.sweep(org.node)
    assert org.send(sent.id).state == after_first and org.requests() == 1
    org.clock.set(T0 + timedelta(hours=1))
    assert dispatch.due_ids(org.node) == [] and dispatch.sweep(org.node).results == []
    sweeper.run_pass(org.node)
    assert org.send(sent.id).state == "handed_over" and org.requests() == 2


def test_the_dispatch_sweep_leaves_deferrable_mail_alone_while_the_provider_refuses_it_or_owes_a_probe(
        org: Org) -> None:
    org.emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    first = org.deferrable(to="first@remote.test")
    dispatch.sweep(org.node)
    assert org.requests() == 1
    queued = org.deferrable(to="queued@remote.test")
    assert dispatch.due_ids(org.node) == [], "shut: nothing is read"
    org.clock.set(datetime(2026, 3, 11, 0, 10, tzinfo=UTC))
    assert dispatch.due_ids(org.node) == [], "probe due: the sweeper probes with one send"
    sweeper.run_pass(org.node)
    assert {org.send(first.id).state, org.send(queued.id).state} == {"handed_over"}


def test_deferrable_mail_past_its_give_up_age_is_not_handed_over_by_the_dispatch_sweep(org: Org) -> None:
    sent = org.deferrable()
    org.clock.set(T0 + timedelta(seconds=budgets.SWEEPER_GIVE_UP_AGE_SECONDS))
    assert dispatch.due_ids(org.node) == []
    sweeper.run_pass(org.node)
    assert (org.send(sent.id).state, org.send(sent.id).state_reason) == ("withheld", "gave_up")
    assert org.requests() == 0
