"""Group commit for the SMTP listener: one writer thread accepts concurrent deliveries together.

Each ``DATA`` hands its bytes and envelope to :meth:`GroupCommitter.submit` (the listener's only thread hop for
it) and awaits the returned future. The writer thread takes the first waiting delivery, gathers every other
one that arrived while the previous group was being committed (at most ``budgets.GROUP_COMMIT_MAX_DELIVERIES``),
and accepts them with ``receipts.accept_group``: the blobs fsynced (each directory once), then every receipt
row in one transaction. Only then is each future resolved with its delivery's receipt ids, so a ``250`` is
never answered before its own receipt is durable. If the group's writes fail, every future of that group
(and only those) gets the exception and the listener answers ``451``; nothing of the group was committed.

Materialisation work: after a group's futures are resolved, its receipt ids go to ``on_committed`` on a
second thread (one call per group, in commit order), which enqueues their DBOS workflows, so the system
database's writes are neither on the ``250`` path nor on the writer's. A lost call (a crash, a failing
enqueue) leaves receipts with ``workflow_done_at`` unset, which the repair scan
(``ingress.workflows.scan_unmaterialised``) enqueues.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

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
        self._enqueuer: ThreadPoolExecutor | None = None
        self._stopped = False

    def start(self) -> None:
        """Start the writer thread (and the enqueuing thread when ``on_committed`` is given)."""
        if self.on_committed is not None:
            self._enqueuer = ThreadPoolExecutor(1, thread_name_prefix="mailnode-enqueue")
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
        if self._enqueuer is not None:
            self._enqueuer.shutdown(wait=True)
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
            self._enqueuer.submit(self._enqueue, [rid for delivered in ids for rid in delivered])

    def _enqueue(self, ids: list[str]) -> None:
        assert self.on_committed is not None
        try:
            self.on_committed(ids)
        except Exception:  # the receipts are committed; the repair scan enqueues them
            log.exception("smtp.materialise_start_failed receipts=%s", ids)
