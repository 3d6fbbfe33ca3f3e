"""The volume breaker inside one dispatch batch (issue 19): the batch reads the breaker once, and the
recipients it lets through count as handed over for its later sends, so one sweep never takes an
organisation past its volume limit further than sends handed over one by one would."""

from __future__ import annotations

from sqlalchemy import insert

from mailnode.schema.governance import breaker_limits

from .conftest import Org


def test_one_batch_stops_at_the_volume_limit_as_sends_handed_over_one_by_one_would(org: Org) -> None:
    # Limit 2 recipients an hour; nothing handed over yet; five sends in one batch. Sends handed over one
    # by one would go while the count is within the limit (0, 1, 2: the third takes it to 3 > 2) and the
    # breaker then gates the rest; the batch, reading the count once, must gate the same two.
    with org.node.begin() as conn:
        conn.execute(insert(breaker_limits).values(org_id=org.org_id, volume_max_recipients=2,
                                                   updated_by=org.admin.id, updated_at=org.node.clock.now()))
    sends = [org.seal(to=f"r{i}@remote.test")["id"] for i in range(5)]
    report = org.sweep()
    assert [(r.manifest_id, r.state) for r in report.results] == [
        *((s, "handed_over") for s in sends[:3]), *((s, "awaiting") for s in sends[3:])]
    # The batch submits its window concurrently, so the sink receives them in any order.
    assert sorted(org.received()) == ["r0@remote.test", "r1@remote.test", "r2@remote.test"]
    assert [org.read(s)["state_reason"] for s in sends[3:]] == ["breaker_volume", "breaker_volume"]
    assert [e.subject for e in org.entries("send.rate_limited")] == sends[3:]
