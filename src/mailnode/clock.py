"""The injectable UTC clock: code asks ``clock.now()``, tests move it.

Every time in mailnode is a timezone-aware ``datetime`` in UTC. Durable timers (DBOS sleeps, receive
timeouts, schedules) run on wall-clock time and are not governed by this clock; their durations are
settings so tests can shorten them.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Anything with ``now() -> datetime`` (aware, UTC)."""

    def now(self) -> datetime:
        """The current time, aware UTC."""
        ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        return datetime.now(UTC)


class FrozenClock:
    """A clock that only moves when told to; for tests and replays. Thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("FrozenClock needs an aware datetime")
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The frozen time."""
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        """Move forward by ``seconds`` and return the new time."""
        with self._lock:
            self._now = self._now + timedelta(seconds=seconds)
            return self._now

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (aware)."""
        if when.tzinfo is None:
            raise ValueError("FrozenClock needs an aware datetime")
        with self._lock:
            self._now = when


def utc(dt: datetime) -> datetime:
    """Return ``dt`` as aware UTC; a naive value (as SQLite returns) is taken to be UTC already."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)
