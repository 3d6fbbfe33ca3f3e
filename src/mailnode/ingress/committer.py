"""Group commit for the SMTP listener: one writer thread accepts concurrent deliveries together.

Each ``DATA`` hands its bytes and envelope to :meth:`GroupCommitter.submit` (the listener's only thread hop for
it) and awaits the returned future. The writer thread takes the first waiting delivery, gathers every other
one that arrived while the previous group was being committed (at most ``budgets.GROUP_COMMIT_MAX_DELIVERIES``),
and accepts them with ``receipts.accept_group``: the blobs fsynced (each directory once), then every receipt
row in one transaction. Only then is each future resolved with its delivery's receipt ids, so a ``250`` is
never answered before its own receipt is durable. If the group's writes fail, every future of that group
(and only those) gets the exception and the listener answers ``451``; nothing of the group was committed.

Materialisation work: after a group's futures are resolved, its receipt ids go to a second thread, the
enqueuer, which hands them to ``on_committed`` (``ingress.workflows.start``: one DBOS workflow enqueued per
receipt, a system-database write each), so those writes are neither on the ``250`` path nor on the writer's.
Accept first, materialise after: the enqueuer holds the ids while deliveries keep arriving and calls
``on_committed`` once the listener has committed nothing for ``budgets.MATERIALISE_DEFER_QUIET_SECONDS``, or
once the oldest id held has waited ``budgets.MATERIALISE_DEFER_MAX_SECONDS`` (so a steady stream is still
materialised); a burst is therefore taken at the listener's speed before its materialisation competes with it
for the interpreter and the database's writer lock. A lost call (a crash, a failing enqueue) leaves receipts
with ``workflow_done_at`` unset, which the repair scan (``ingress.workflows.scan_unmaterialised``) enqueues.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.ingress import receipts
from mailnode.node import Node

log = logging.getLogger("mailnode.smtp")

_STOP = object()


def take_group(first: object, waiting: queue.SimpleQueue[object], limit: int) -> tuple[list[object], bool]:
    """The group that starts with ``first``: it plus what is already waiting, up to ``limit`` items, without
    blocking. Returns the items and whether the stop marker was met (it ends the group and the writer)."""
    if first is _STOP:
        return [], True
    items = [first]
    while len(items) < limit:
        try:
            item = waiting.get_nowait()
        except queue.Empty:
            break
        if item is _STOP:
            return items, True
        items.append(item)
    return items, False


def _stopped_error() -> MailnodeError:
    """``E_LISTENER_STOPPED`` (503): a delivery handed over when the writer no longer runs."""
    return MailnodeError(code="E_LISTENER_STOPPED", what="The listener's receipt writer is not running.",
                         why="The listener is stopping, or its writer thread ended on an error (logged).",
                         fix="Retry: the sending server will, once the node is serving again.", status=503)


def enqueue_wait(first_at: float, last_at: float, now: float, quiet: float = budgets.MATERIALISE_DEFER_QUIET_SECONDS,
                 longest: float = budgets.MATERIALISE_DEFER_MAX_SECONDS) -> float:
    """Seconds the enqueuer still holds receipt ids before handing them over (pure; 0 = now): until ``quiet``
    seconds passed since the last commit (``last_at``), or ``longest`` since the oldest held (``first_at``),
    whichever comes first (monotonic seconds)."""
    return max(0.0, min(last_at + quiet, first_at + longest) - now)


_Pending = tuple[bytes, receipts.Envelope, "Future[list[str]]"]


class GroupCommitter:
    """The writer thread of one listener. ``start()``, ``submit(raw, envelope)``, ``stop()``."""

    def __init__(self, node: Node, on_committed: Callable[[list[str]], None] | None = None,
                 max_group: int = budgets.GROUP_COMMIT_MAX_DELIVERIES) -> None:
        self.node = node
        self.on_committed = on_committed
        self.max_group = max_group
        #: The sizes of the groups committed so far (failed ones included), for tests and the benchmark.
        self.group_sizes: list[int] = []
        self._waiting: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._committed: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._enqueuer: threading.Thread | None = None
        self._stopped = False

    def start(self) -> None:
        """Start the writer thread (and the enqueuing thread when ``on_committed`` is given)."""
        if self.on_committed is not None:
            self._enqueuer = threading.Thread(target=self._enqueue_loop, name="mailnode-enqueue", daemon=True)
            self._enqueuer.start()
        self._thread = threading.Thread(target=self._run, name="mailnode-group-commit", daemon=True)
        self._thread.start()

    def submit(self, raw: bytes, envelope: receipts.Envelope) -> Future[list[str]]:
        """Queue one delivery; the future gets its receipt ids once they are committed, or the exception that
        failed its group. Raises ``E_MESSAGE_TOO_LARGE`` / ``E_NO_RECIPIENTS`` at once (``receipts.check``),
        and ``E_LISTENER_STOPPED`` (503) once ``stop()`` was called or the writer died. Deliveries submitted
        before ``start()`` wait for it (the first groups are formed from them)."""
        receipts.check(raw, envelope)
        if self._stopped or (self._thread is not None and not self._thread.is_alive()):
            raise _stopped_error()
        fut: Future[list[str]] = Future()
        self._waiting.put((raw, envelope, fut))
        return fut

    def stop(self) -> None:
        """Commit what is already waiting, then end the writer and the enqueuing thread (waits for both)."""
        self._stopped = True
        if self._thread is not None:
            self._waiting.put(_STOP)
            self._thread.join()
            self._thread = None
        while True:  # a delivery submitted as the writer stopped: its DATA answers 451, not never
            try:
                item = self._waiting.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, tuple):
                item[2].set_exception(_stopped_error())
        if self._enqueuer is not None:  # what it holds is handed over now, not dropped
            self._committed.put(_STOP)
            self._enqueuer.join()
            self._enqueuer = None

    def _run(self) -> None:
        stop = False
        while not stop:
            items, stop = take_group(self._waiting.get(), self._waiting, self.max_group)
            if items:
                self._commit([item for item in items if isinstance(item, tuple)])

    def _commit(self, group: list[_Pending]) -> None:
        self.group_sizes.append(len(group))
        try:
            ids = receipts.accept_group(self.node, [(raw, env) for raw, env, _ in group])
        except BaseException as exc:  # every delivery of the group answers 451; the listener logs each
            for _, _, fut in group:
                fut.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, _, fut), delivered in zip(group, ids, strict=True):
            fut.set_result(delivered)
        if self._enqueuer is not None:
            self._committed.put([rid for delivered in ids for rid in delivered])

    def _enqueue_loop(self) -> None:
        held: list[str] = []
        first_at = last_at = 0.0
        while True:
            timeout = enqueue_wait(first_at, last_at, time.monotonic()) if held else None
            try:
                item = self._committed.get(timeout=timeout)
            except queue.Empty:
                item = None
            if isinstance(item, list):
                last_at = time.monotonic()
                first_at = first_at if held else last_at
                held.extend(item)
            if held and (item is _STOP or enqueue_wait(first_at, last_at, time.monotonic()) == 0.0):
                self._enqueue(held)
                held = []
            if item is _STOP:
                return

    def _enqueue(self, ids: list[str]) -> None:
        assert self.on_committed is not None
        try:
            self.on_committed(ids)
        except Exception:  # the receipts are committed; the repair scan enqueues them
            log.exception("smtp.materialise_start_failed receipts=%s", ids)
