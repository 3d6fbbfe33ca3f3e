"""What moves between the retention sweep's scan and its write is left whole and reported ``raced`` only:
the ledger row purged by another sweep, the send claimed, retried, recovered or gated meanwhile. Each
race is the sweep's own ``scan`` and ``write`` with the other writer's statement interleaved between them
in the same transaction (so it runs the same on SQLite and PostgreSQL). spec/transactional.md §5."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, select, update

from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.schema.retention import retained_content
from tests.retention.conftest import Retained

DAY = 86_400


def _enrolled(org: Retained, state: str) -> tuple[str, str]:
    """A send past the ceiling in ``state``, enrolled in the ledger: (id, its body digest)."""
    sid, digest = org.send("raced body", at=org.ago(15 * DAY), state=state)
    with org.node.begin() as conn:
        retention_io.enrol(conn, org_id=org.org_id)
    return sid, digest


def _state(org: Retained, sid: str) -> tuple[Any, ...]:
    with org.node.read() as conn:
        send = conn.execute(select(send_manifests.c.state, send_manifests.c.state_reason)
                            .where(send_manifests.c.id == sid)).one()
        recipients = conn.execute(select(send_recipients.c.submission_state)
                                  .where(send_recipients.c.manifest_id == sid)).scalars().all()
        purged_at = conn.execute(select(retained_content.c.purged_at)
                                 .where(retained_content.c.source_id == sid)).scalar_one()
    return tuple(send), list(recipients), purged_at


def _ledger_purged_elsewhere(org: Retained, sid: str) -> Callable[[Connection], None]:
    """Another sweep's ledger write, landing between this sweep's scan and its write."""
    def race(conn: Connection) -> None:
        conn.execute(update(retained_content).where(retained_content.c.source_id == sid)
                     .values(purged_at=org.node.clock.now() - timedelta(seconds=1), digests=None))
    return race


@pytest.mark.parametrize("state", ["held", "awaiting", "throttled", "outcome_unknown", "handed_over"])
def test_a_ledger_row_purged_by_another_sweep_after_the_scan_leaves_the_send_untouched(org: Retained,
                                                                                       state: str) -> None:
    sid, _ = _enrolled(org, state)
    now = org.node.clock.now()
    with org.node.begin() as conn:
        scanned = retention_io.scan(conn, org_id=org.org_id, now=now)
        assert scanned.page.delete == (sid,)
        _ledger_purged_elsewhere(org, sid)(conn)
        written = retention_io.write(conn, scanned, org_id=org.org_id, now=now)
    assert (written.purged, written.withheld, written.raced) == ((), (), (sid,))
    assert written.digests == frozenset()
    (send_state, reason), recipients, _ = _state(org, sid)
    assert (send_state, reason, recipients) == (state, None, [state])
    assert org.entries("send.withheld") == [] and org.entries("retention.deleted") == []


def test_two_sweeps_over_one_pending_send_withhold_it_once(org: Retained) -> None:
    """Both scan, the first writes whole, the second meets a purged row: one withholding, one audit each."""
    sid, _ = _enrolled(org, "held")
    now = org.node.clock.now()
    with org.node.begin() as conn:
        first = retention_io.scan(conn, org_id=org.org_id, now=now)
        second = retention_io.scan(conn, org_id=org.org_id, now=now)
        done = retention_io.write(conn, first, org_id=org.org_id, now=now)
        again = retention_io.write(conn, second, org_id=org.org_id, now=now)
    assert (done.purged, done.withheld, done.raced) == ((sid,), (sid,), ())
    assert (again.purged, again.withheld, again.raced) == ((), (), (sid,))
    assert [e["subject"] for e in org.entries("send.withheld")] == [sid]
    assert [e["subject"] for e in org.entries("retention.deleted")] == [sid]


def _move(sid: str, **values: Any) -> Callable[[Connection], None]:
    def race(conn: Connection) -> None:
        conn.execute(update(send_manifests).where(send_manifests.c.id == sid).values(**values))
    return race


@pytest.mark.parametrize(("scanned_state", "moved_to", "lease"), [
    # A dispatch claimed and handed it over, ending ambiguous: it may have left, so it is not withheld.
    ("held", "outcome_unknown", None),
    # A gate stopped it: withholding it would audit the wrong ``from``.
    ("throttled", "awaiting", None),
    # A lapsed claim recovered to held: no longer the state the scan decided on.
    ("outcome_unknown", "held", None),
    # A person retried a refused send: it is queued again, not done with.
    ("refused", "held", None),
    # A worker claimed it after the scan (the same state, under a live lease).
    ("held", "held", 60.0),
    ("outcome_unknown", "outcome_unknown", 60.0),
])
def test_a_send_that_moved_after_the_scan_keeps_its_body_and_is_only_raced(org: Retained, scanned_state: str,
                                                                          moved_to: str,
                                                                          lease: float | None) -> None:
    sid, digest = _enrolled(org, scanned_state)
    now = org.node.clock.now()
    with org.node.begin() as conn:
        scanned = retention_io.scan(conn, org_id=org.org_id, now=now)
        assert scanned.page.delete == (sid,)
        _move(sid, state=moved_to, lease_until=None if lease is None else now + timedelta(seconds=lease))(conn)
        written = retention_io.write(conn, scanned, org_id=org.org_id, now=now)
    assert (written.purged, written.withheld, written.raced) == ((), (), (sid,))
    (send_state, reason), recipients, purged_at = _state(org, sid)
    assert (send_state, reason, purged_at) == (moved_to, None, None)
    assert recipients == [scanned_state]
    assert org.entries("send.withheld") == [] and org.entries("retention.deleted") == []
    assert org.blob_exists(digest)
    # The next pass meets it again and decides on what it is now.
    if lease is None:
        assert retention_io.run_pass(org.node, now).sweeps[org.org_id].purged == (sid,)
