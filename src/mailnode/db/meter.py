"""The statement meter: counts SQL statements executed on the current thread inside a scope.

Statement counts are deterministic (unlike times), so budgets on them may be asserted by tests and
Butler runs are priced in them. The meter hooks SQLAlchemy's ``before_cursor_execute`` event of an
engine; scopes nest (an inner scope's statements count in the outer one too).

    meter = StatementMeter.attach(engine)
    with meter.measure() as m:
        ...
    m.count  # statements executed on this thread in the block

Transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) is not a statement for this purpose:
it is not counted, so a budget measures the work an operation asks of the database. Nor is PostgreSQL's
transaction-scoped advisory lock (``SELECT pg_advisory_xact_lock(...)``, the audit chain's lock,
``audit.lock_chain``): it is the counterpart of SQLite's ``BEGIN IMMEDIATE`` writer lock, which is part
of ``BEGIN``, so a budget counts the same work on both databases.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlalchemy import event
from sqlalchemy.engine import Engine

_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")
#: The one lock statement that is transaction control too (see the module docstring).
_LOCK = "SELECT PG_ADVISORY_XACT_LOCK("


@dataclass
class Measurement:
    """What one scope saw: ``count`` statements, and their SQL text when ``keep_sql`` was asked."""

    count: int = 0
    statements: list[str] = field(default_factory=list)
    keep_sql: bool = False


class StatementMeter:
    """Counts statements per thread for the engine it is attached to."""

    #: One meter per live engine, keyed weakly on the engine itself: keyed on ``id(engine)``, a new engine
    #: that reused a collected one's id got the old meter, whose listener sat on the dead engine, and
    #: counted nothing (a test saw 0 statements where 9 ran once enough nodes had come and gone).
    _by_engine: ClassVar[weakref.WeakKeyDictionary[Engine, StatementMeter]] = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self._local = threading.local()

    @classmethod
    def attach(cls, engine: Engine) -> StatementMeter:
        """The meter of ``engine``, attaching it on first use (one per engine)."""
        meter = cls._by_engine.get(engine)
        if meter is None:
            meter = cls()
            event.listen(engine, "before_cursor_execute", meter._on_execute)
            cls._by_engine[engine] = meter
        return meter

    def _stack(self) -> list[Measurement]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = []
            self._local.stack = stack
        return stack

    def _on_execute(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        stack = self._stack()
        head = statement.lstrip()[:len(_LOCK)].upper()
        if not stack or head.startswith(_CONTROL) or head == _LOCK:
            return
        for m in stack:
            m.count += 1
            if m.keep_sql:
                m.statements.append(statement)

    @contextmanager
    def measure(self, keep_sql: bool = False) -> Iterator[Measurement]:
        """Count the statements this thread executes inside the block."""
        m = Measurement(keep_sql=keep_sql)
        stack = self._stack()
        stack.append(m)
        try:
            yield m
        finally:
            stack.remove(m)
