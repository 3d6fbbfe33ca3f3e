"""The listener path's decisions, as tables: when a cached route may be used, which statements invalidate it,
how long committed receipts wait to be enqueued; and the evidence store's group write."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import delete, insert, select, text, update

from mailnode import budgets
from mailnode.ingress import route_cache
from mailnode.ingress.receipts import recipient_key
from mailnode.ingress.routing import Route
from mailnode.schema.directory import domains
from mailnode.schema.ingress import ingress_receipts
from mailnode.schema.mail import mailbox_addresses, mailboxes
from mailnode.schema.outbound import send_recipients

TTL = budgets.ROUTE_CACHE_TTL_SECONDS


@pytest.mark.parametrize(("entry_gen", "looked_up_at", "current_gen", "now", "expected"), [
    (3, 100.0, 3, 100.0, True),               # just looked up
    (3, 100.0, 3, 100.0 + TTL - 0.01, True),  # within the TTL
    (3, 100.0, 3, 100.0 + TTL, False),        # the TTL ran out: another process may have changed it
    (3, 100.0, 4, 100.1, False),              # a route write committed in this process since
    (3, 100.0, 3, 99.0, False),               # a clock that went backwards is not trusted
])
def test_fresh(entry_gen: int, looked_up_at: float, current_gen: int, now: float, expected: bool) -> None:
    assert route_cache.fresh(entry_gen, looked_up_at, current_gen, now) is expected


@pytest.mark.parametrize(("statement", "expected"), [
    (insert(mailbox_addresses), True),
    (delete(mailbox_addresses), True),
    (update(mailboxes), True),
    (delete(domains), True),
    (insert(send_recipients), True),
    (insert(ingress_receipts), False),        # receipts do not decide routes
    (select(mailbox_addresses), False),       # reads never invalidate
    (text("DELETE FROM mailbox_addresses"), False),  # text is not inspected (mailnode writes through Core)
])
def test_touches_routes(statement: Any, expected: bool) -> None:
    assert route_cache.touches_routes(statement) is expected


def test_a_cached_route_is_dropped_on_a_generation_bump_and_after_the_ttl() -> None:
    now = [1000.0]
    cache = route_cache.RouteCache(recipient_key, clock=lambda: now[0])
    route = Route(org_id="org_1", mailbox_id="mbx_1", address="support@example.test")
    cache.put("support@example.test", route, route_cache.generation(), cache.now())
    assert cache.get("<support@EXAMPLE.test>") == route  # compared as recipient_key compares
    assert cache.get("Support@example.test") is None     # the local part is case-sensitive
    now[0] += TTL
    assert cache.get("support@example.test") is None
    cache.put("support@example.test", route, route_cache.generation(), cache.now())
    route_cache.bump()
    assert cache.get("support@example.test") is None


def test_the_cache_holds_at_most_its_budget_dropping_the_oldest() -> None:
    cache = route_cache.RouteCache(recipient_key, max_entries=2)
    gen = route_cache.generation()
    for n in range(3):
        cache.put(f"a{n}@example.test", Route("org_1", "mbx_1", f"a{n}@example.test"), gen, cache.now())
    assert cache.get("a0@example.test") is None
    assert cache.get("a1@example.test") is not None and cache.get("a2@example.test") is not None


@pytest.mark.parametrize(("first_at", "last_at", "now", "expected"), [
    (10.0, 10.0, 10.0, 0.2),    # just committed: wait for a quiet gap
    (10.0, 10.1, 10.2, 0.1),    # deliveries keep coming: the gap is counted from the last
    (10.0, 10.1, 10.3, 0.0),    # quiet long enough: enqueue now
    (10.0, 14.9, 14.95, 0.05),  # a steady stream: the oldest held bounds the wait...
    (10.0, 15.0, 15.0, 0.0),    # ...to 5 s
])
def test_enqueue_wait(first_at: float, last_at: float, now: float, expected: float) -> None:
    from mailnode.ingress.committer import enqueue_wait

    assert enqueue_wait(first_at, last_at, now, quiet=0.2, longest=5.0) == pytest.approx(expected)


def test_put_many_stores_each_blob_once_and_whole(tmp_path: Any) -> None:
    from mailnode.evidence import EvidenceStore

    store = EvidenceStore(tmp_path)
    already = store.put(b"stored before")
    blobs = [b"one", b"two", b"one", b"stored before", b"three"]
    digests = store.put_many(blobs)
    assert digests[0] == digests[2] and digests[3] == already
    assert [store.get(d) for d in digests] == blobs
    assert not [p for p in tmp_path.rglob(".tmp-*")]  # no temporary file left behind
