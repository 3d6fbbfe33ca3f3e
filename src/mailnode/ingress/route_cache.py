"""The listener's route cache: ``RCPT TO`` answered from memory once an address has been routed.

A route (``ingress.routing.resolve``) depends on the rows of ``ROUTE_TABLES``: mailbox addresses, mailboxes,
domains (the bounce domain) and the send recipients and manifests a VERP address names. Freshness:

- **This process**: every committed transaction that wrote one of ``ROUTE_TABLES`` through SQLAlchemy (on any
  engine of the process) bumps a process-wide generation (SQLAlchemy ``before_execute`` marks the connection,
  ``commit`` bumps), and an entry cached under an older generation is not used. A mailbox, route or domain
  change made in this process is therefore honoured on the next ``RCPT``. The generation is read *before* the
  lookup and stored with its result, so a change committed while a lookup ran leaves that result stale.
- **Other processes** (the CLI, a second ``serve``): an entry is used for at most
  ``budgets.ROUTE_CACHE_TTL_SECONDS`` after it was looked up; a change made elsewhere is seen within that time.
- Only routes that exist are cached. An unknown address is looked up every time, so a mailbox created in
  another process is never refused ``550`` (a permanent failure) because of the cache; a removed address may
  still be accepted for up to the TTL, and the receipt then fails or files as the removal left it (``451`` if
  its mailbox row is gone: the client retries and gets the ``550``).

The decisions (is an entry fresh? which statement touches a route table?) are pure functions; the cache
itself is a bounded dict (``budgets.ROUTE_CACHE_MAX_ENTRIES``, the oldest dropped first) guarded by a lock,
since lookups finish on worker threads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import UpdateBase

from mailnode import budgets
from mailnode.ingress.routing import Route

#: The tables whose rows decide a route; a committed write to any of them invalidates every cached route.
ROUTE_TABLES = frozenset({"mailbox_addresses", "mailboxes", "domains", "organisations", "send_recipients",
                          "send_manifests"})

_generation = 0
_generation_lock = threading.Lock()
_DIRTY = "mailnode_routes_dirty"


def generation() -> int:
    """The process-wide route generation: bumped by each committed write to ``ROUTE_TABLES``."""
    return _generation


def bump() -> None:
    """Invalidate every cached route of this process (called on commit of a route-table write)."""
    global _generation
    with _generation_lock:
        _generation += 1


def touches_routes(statement: Any) -> bool:
    """Whether ``statement`` (a SQLAlchemy construct) writes a route table (pure). Text statements are not
    inspected: mailnode writes those tables through Core constructs only."""
    if not isinstance(statement, UpdateBase):
        return False
    table = getattr(statement, "table", None)
    return getattr(table, "name", None) in ROUTE_TABLES


def fresh(entry_generation: int, looked_up_at: float, current_generation: int, now: float,
          ttl: float = budgets.ROUTE_CACHE_TTL_SECONDS) -> bool:
    """Whether a cached route may be used (pure): no route write committed in this process since its lookup,
    and looked up less than ``ttl`` seconds ago (monotonic seconds)."""
    return entry_generation == current_generation and 0 <= now - looked_up_at < ttl


def watch(engine: Engine) -> None:
    """Make committed route-table writes on ``engine`` bump the generation (idempotent per engine)."""
    if event.contains(engine, "before_execute", _before_execute):
        return
    event.listen(engine, "before_execute", _before_execute)
    event.listen(engine, "commit", _on_commit)
    event.listen(engine, "rollback", _on_rollback)


def _before_execute(conn: Connection, clauseelement: Any, multiparams: Any, params: Any,
                    execution_options: Any) -> None:
    if touches_routes(clauseelement):
        conn.info[_DIRTY] = True


def _on_commit(conn: Connection) -> None:
    if conn.info.pop(_DIRTY, False):
        bump()


def _on_rollback(conn: Connection) -> None:
    conn.info.pop(_DIRTY, None)


class RouteCache:
    """Routes by address (compared as ``key`` makes them), fresh per :func:`fresh`."""

    def __init__(self, key: Callable[[str], str], clock: Callable[[], float] = time.monotonic,
                 max_entries: int = budgets.ROUTE_CACHE_MAX_ENTRIES) -> None:
        self._key = key
        self._clock = clock
        self._max = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[Route, int, float]] = OrderedDict()

    def get(self, address: str) -> Route | None:
        """The cached route of ``address`` if fresh, else None (look it up, then :meth:`put`)."""
        with self._lock:
            hit = self._entries.get(self._key(address))
        if hit is None:
            return None
        route, gen, at = hit
        return route if fresh(gen, at, generation(), self._clock()) else None

    def put(self, address: str, route: Route, looked_up_generation: int, looked_up_at: float) -> None:
        """Remember ``route``, found by a lookup that began at ``looked_up_generation``/``looked_up_at``."""
        with self._lock:
            k = self._key(address)
            self._entries.pop(k, None)
            self._entries[k] = (route, looked_up_generation, looked_up_at)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def now(self) -> float:
        """The cache's clock (monotonic seconds)."""
        return self._clock()
