"""Every row a sweep reads leaves every sweep query (spec/transactional.md §3; seed 002, "Every document the
sweep finds leaves by a door"), on the real queries and the real database, against the local Resend server.

A notify-sweeper pass (``sweeper.run_pass``) or a dispatch sweep (``dispatch.sweep``) that reads a row and
does not hand it over leaves it matching none of ``sweeper.sweep_queries(now)`` nor ``movable_now_sql(now)``
at the same ``now``: a send a rate breaker still gates (gated at seal, or at the hand-over), and each
verdict that writes. A second pass at the same ``now`` therefore reads nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from mailnode import budgets
from mailnode.outbound import dispatch, sweeper
from mailnode.outbound.movable import movable_now_sql
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.governance import breaker_limits
from mailnode.schema.outbound import send_manifests, send_recipients
from tests.governance.conftest import World

from .conftest import T0, Org


def queries_matching(org: Org, send_id: str) -> list[str]:
    """The sweep queries (and ``movable_now``) that select ``send_id`` at the clock's ``now``."""
    now = org.clock.now()
    named = {**sweeper.sweep_queries(org.node, now), "movable_now": movable_now_sql(now)}
    with org.node.read() as conn:
        return [name for name, where in named.items()
                if conn.execute(select(func.count()).select_from(send_manifests)
                                .where(send_manifests.c.id == send_id, where)).scalar_one()]


def trip_volume(org: Org) -> None:
    """Limit the organisation to 1 recipient an hour and hand 2 over now: the volume breaker trips."""
    with org.node.begin() as conn:
        conn.execute(breaker_limits.insert().values(org_id=org.installed.org_id, volume_max_recipients=1,
                                                    updated_by=org.installed.user_id, updated_at=org.clock.now()))
    World(org.node, org.installed).handed_over(2)


def correspondence(org: Org, to: str = "person@remote.test") -> str:
    """Seal correspondence from the mailbox as its administrator; its id."""
    return seal(org.node, org_id=org.installed.org_id, author_id=org.installed.user_id,
                request=SealRequest(mailbox_id=org.installed.mailbox_id, to=[to], subject="Invoice",
                                    body="Attached.")).id


@pytest.mark.parametrize("gated_at", ["seal", "hand-over"])
def test_a_sweeper_pass_that_reads_a_breaker_gated_send_leaves_it_outside_every_query(org: Org,
                                                                                       gated_at: str) -> None:
    if gated_at == "seal":
        trip_volume(org)
    sent = org.deferrable()
    if gated_at == "hand-over":
        assert sent.state.value == "held"
        trip_volume(org)
    assert "send" in queries_matching(org, sent.id)
    report = sweeper.run_pass(org.node)
    assert report.verdicts == {"send": 1} and [r.detail for r in report.dispatched] == ["breaker_volume"]
    row = org.send(sent.id)
    assert (row.state, row.state_reason, row.attempts) == ("awaiting", "breaker_volume", 0)
    assert queries_matching(org, sent.id) == []
    assert sweeper.run_pass(org.node).verdicts == {}
    assert org.requests() == 0
    # At its recheck time it is read again, found still gated, and written out again.
    org.clock.advance(budgets.BREAKER_RECHECK_SECONDS)
    assert "send" in queries_matching(org, sent.id)
    assert sweeper.run_pass(org.node).verdicts == {"send": 1}
    assert queries_matching(org, sent.id) == [] and org.requests() == 0


@pytest.mark.parametrize("gated_at", ["seal", "hand-over"])
def test_a_dispatch_sweep_that_reads_a_breaker_gated_send_leaves_it_outside_every_query(org: Org,
                                                                                        gated_at: str) -> None:
    if gated_at == "seal":
        trip_volume(org)
    sent = correspondence(org)
    if gated_at == "hand-over":
        trip_volume(org)
    assert dispatch.due_ids(org.node) == [sent]
    report = dispatch.sweep(org.node)
    assert [(r.manifest_id, r.detail) for r in report.results] == [(sent, "breaker_volume")]
    assert queries_matching(org, sent) == []
    assert dispatch.sweep(org.node).results == [] and sweeper.run_pass(org.node).verdicts == {}
    assert org.requests() == 0


def _given_up(org: Org) -> str:
    sent = org.deferrable()
    org.clock.set(T0 + timedelta(seconds=budgets.SWEEPER_GIVE_UP_AGE_SECONDS))
    return sent.id


def _realtime_left_pending(org: Org) -> str:
    sealed = seal(org.node, org_id=org.installed.org_id, author_id=org.installed.user_id,
                  request=SealRequest(mailbox_id=org.installed.mailbox_id, to=["x@remote.test"], subject="Code",
                                      body="1", mail_class="realtime"))
    org.clock.set(T0 + timedelta(hours=1))
    return sealed.id


def _ambiguous_past_its_window(org: Org) -> str:
    sent = org.deferrable()
    with org.node.begin() as conn:
        conn.execute(update(send_manifests).where(send_manifests.c.id == sent.id).values(
            state="outcome_unknown", attempts=1, first_attempt_at=T0))
        conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == sent.id).values(
            submission_state="outcome_unknown"))
    org.clock.set(T0 + timedelta(hours=25))
    return sent.id


def _stranded_of_an_unknown_class(org: Org) -> str:
    sent = org.deferrable()
    with org.node.begin() as conn:
        conn.execute(update(send_manifests).where(send_manifests.c.id == sent.id).values(
            mail_class="bulk", state="outcome_unknown", attempts=1, first_attempt_at=T0,
            lease_until=T0 + timedelta(minutes=5), claim_token="dead/1"))
    org.clock.set(T0 + timedelta(minutes=6))
    return sent.id


def _deliverable(org: Org) -> str:
    return org.deferrable().id


# (verdict the pass gives, the row it reads, what the row is afterwards)
DOORS: list[tuple[str, Callable[[Org], str], tuple[str, str | None]]] = [
    ("give_up", _given_up, ("withheld", "gave_up")),
    ("refuse_realtime", _realtime_left_pending, ("withheld", "realtime_not_retried")),
    ("to_person", _ambiguous_past_its_window, ("outcome_unknown", "dedup_window_closed")),
    ("quarantine", _stranded_of_an_unknown_class, ("withheld", "not_classified")),
    ("send", _deliverable, ("handed_over", None)),
]


@pytest.mark.parametrize(("verdict", "make", "after"), DOORS, ids=[d[0] for d in DOORS])
def test_every_verdict_a_pass_gives_leaves_the_row_outside_every_query(
        org: Org, verdict: str, make: Callable[[Org], str], after: tuple[str, str | None]) -> None:
    send_id = make(org)
    assert queries_matching(org, send_id) != []
    report = sweeper.run_pass(org.node)
    assert report.verdicts == {verdict: 1}
    row = org.send(send_id)
    assert (row.state, row.state_reason) == after
    assert queries_matching(org, send_id) == []
    assert sweeper.run_pass(org.node).verdicts == {}
