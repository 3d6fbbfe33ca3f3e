"""Executor liveness (issue 19): who is judged dead (a table of the pure verdict), and on the database that one
survivor claims a dead process, audited, that a claimed process learns it at its next beat, and that a
graceful stop is taken over at once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from mailnode import audit, liveness
from mailnode.liveness import ExecutorRow, takeover_verdict
from mailnode.schema.executors import executors

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
LEASE = 15.0


def _row(*, executor_id: str = "serve-b", host: str = "h1", beat_ago: float = 1.0, stopped: bool = False,
         claimed_ago: float | None = None, recovered: bool = False) -> ExecutorRow:
    return ExecutorRow(executor_id=executor_id, host=host, pid=4242, beat_at=NOW - timedelta(seconds=beat_ago),
                       stopped_at=NOW if stopped else None,
                       taken_over_by=None if claimed_ago is None else "serve-c",
                       taken_over_at=None if claimed_ago is None else NOW - timedelta(seconds=claimed_ago),
                       recovered_at=NOW if recovered else None)


@pytest.mark.parametrize(("row", "pid_running", "verdict"), [
    (_row(), True, "alive"),
    (_row(beat_ago=LEASE - 0.1), True, "alive"),
    (_row(beat_ago=LEASE + 0.1), True, "lapsed"),
    (_row(stopped=True), True, "stopped"),
    # Same host, its pid no longer runs: dead without waiting for the lease.
    (_row(host="h1"), False, "gone"),
    # Another host's pid says nothing here.
    (_row(host="h2"), False, "alive"),
    (_row(executor_id="serve-a", beat_ago=LEASE * 10), False, "self"),
    (_row(beat_ago=LEASE * 10, recovered=True), False, "recovered"),
    # A survivor's claim is respected for a lease; past it, the claimant died mid-way and it is judged afresh.
    (_row(beat_ago=LEASE * 10, claimed_ago=1.0), False, "being_taken_over"),
    (_row(beat_ago=LEASE * 10, claimed_ago=LEASE + 1), True, "lapsed"),
    (_row(stopped=True, claimed_ago=LEASE + 1), True, "stopped"),
])
def test_takeover_verdict(row: ExecutorRow, pid_running: bool, verdict: str) -> None:
    assert takeover_verdict(row, me="serve-a", now=NOW, host="h1", pid_running=pid_running,
                            lease_seconds=LEASE) == verdict


def _recorder(calls: list[str], returns: int = 0) -> Callable[[str], int]:
    """A ``recover`` that records each dead executor id it is called with and returns ``returns``."""
    def recover(dead: str) -> int:
        calls.append(dead)
        return returns
    return recover


def _stored(node: Any, executor_id: str) -> Any:
    with node.read() as conn:
        return conn.execute(select(executors).where(executors.c.executor_id == executor_id)).one()


def _taken_over_entries(node: Any, org_id: str) -> list[Any]:
    with node.read() as conn:
        return conn.execute(select(audit.audit_entries).where(
            audit.audit_entries.c.org_id == org_id,
            audit.audit_entries.c.action == liveness.TAKEN_OVER_ACTION)).all()


def test_a_lapsed_process_is_taken_over_once_audited_and_fenced(node: Any, installed: Any, clock: Any) -> None:
    clock.set(NOW)
    liveness.register(node, "serve-dead", "serve")
    liveness.register(node, "serve-a", "serve")
    liveness.register(node, "serve-b", "serve")
    clock.set(NOW + timedelta(seconds=liveness.budgets.EXECUTOR_LEASE_SECONDS + 1))
    assert liveness.beat(node, "serve-a") and liveness.beat(node, "serve-b")

    recovered: list[str] = []
    # Both survivors read the dead row before either claims: only one claim matches it.
    seen = next(r for r in liveness.unrecovered(node) if r.executor_id == "serve-dead")
    assert liveness.claim(node, seen, me="serve-a", verdict="lapsed")
    assert not liveness.claim(node, seen, me="serve-b", verdict="lapsed")
    # A full pass by the loser now finds it being taken over and does nothing.
    assert liveness.take_over_dead(node, "serve-b", _recorder(recovered)) == []
    assert recovered == []

    row = _stored(node, "serve-dead")
    assert row.taken_over_by == "serve-a" and row.recovered_at is None
    entries = _taken_over_entries(node, installed.org_id)
    assert [(e.subject, e.actor_kind) for e in entries] == [("serve-dead", "node")]
    assert '"by":"serve-a"' in entries[0].detail.replace(" ", "")
    # The dead process, were it still running, learns at its next beat that it must stop.
    assert liveness.beat(node, "serve-dead") is False
    with node.read() as conn:
        assert audit.verify(conn, installed.org_id).intact


def test_a_claimant_that_died_mid_way_is_claimed_again(node: Any, installed: Any, clock: Any) -> None:
    clock.set(NOW)
    liveness.register(node, "serve-dead", "serve")
    liveness.register(node, "serve-a", "serve")
    clock.set(NOW + timedelta(seconds=liveness.budgets.EXECUTOR_LEASE_SECONDS + 1))
    seen = next(r for r in liveness.unrecovered(node) if r.executor_id == "serve-dead")
    assert liveness.claim(node, seen, me="serve-a", verdict="lapsed")  # and serve-a dies before recovering

    clock.set(NOW + timedelta(seconds=3 * liveness.budgets.EXECUTOR_LEASE_SECONDS))
    liveness.register(node, "serve-c", "serve")
    calls: list[str] = []
    done = liveness.take_over_dead(node, "serve-c", _recorder(calls, 2))
    assert sorted(calls) == ["serve-a", "serve-dead"]
    assert {(t.executor_id, t.verdict, t.recovered) for t in done} == {("serve-dead", "lapsed", 2),
                                                                       ("serve-a", "lapsed", 2)}
    assert _stored(node, "serve-dead").recovered_at is not None
    assert len(_taken_over_entries(node, installed.org_id)) == 3


def test_a_graceful_stop_is_taken_over_at_once_and_a_live_one_is_not(node: Any, installed: Any,
                                                                      clock: Any) -> None:
    clock.set(NOW)
    liveness.register(node, "serve-stopped", "serve")
    liveness.register(node, "serve-live", "serve")
    liveness.register(node, "serve-a", "serve")
    liveness.mark_stopped(node, "serve-stopped")
    calls: list[str] = []
    done = liveness.take_over_dead(node, "serve-a", _recorder(calls))
    assert calls == ["serve-stopped"] and [t.verdict for t in done] == ["stopped"]
    # A later pass finds nothing more to do: recovered rows are not read again.
    assert liveness.take_over_dead(node, "serve-a", _recorder(calls)) == []


def test_a_restart_under_the_same_configured_id_is_live_again(node: Any, installed: Any, clock: Any) -> None:
    clock.set(NOW)
    liveness.register(node, "serve-fixed", "serve")
    liveness.mark_stopped(node, "serve-fixed")
    assert liveness.beat(node, "serve-fixed") is False
    liveness.register(node, "serve-fixed", "serve")
    assert liveness.beat(node, "serve-fixed") is True
    assert _stored(node, "serve-fixed").stopped_at is None
