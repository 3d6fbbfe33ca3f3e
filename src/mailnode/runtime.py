"""The durable executor (DBOS): configuring, launching and destroying it for one process.

DBOS keeps its system database in SQLite under the data directory by default, and in the node's own
PostgreSQL when the node uses PostgreSQL (spec/dbos.md). Traps designed around: ``application_version``
is set to mailnode's version (a hash would strand waiting runs on any edit); every process gets its own
``executor_id`` (two processes with one id re-run each other's live workflows); SQLite's notification
polling interval is lowered so a release wakes a waiting run quickly. DBOS opens its SQLite file in the
rollback journal; ``launch`` turns the file to WAL first (``use_wal``), which the file keeps (issue 19: in the
rollback journal every workflow and step row took the file's one write lock against every reader).

Workflows reach the process's ``Node`` through ``current_node()``, set by ``launch``; this is the one
process-wide handle, because DBOS calls workflow functions without arguments of ours.

A graceful stop leaves async workflows PENDING (``pending_on_stop``). ``DBOS.destroy`` stops DBOS's event
loop by cancelling every task on it. A workflow running as a task of its own (started from async code, or
recovered through DBOS's queue) sees ``asyncio.CancelledError``, records nothing and stays PENDING. But
an async workflow started from sync code (``DBOS.start_workflow``: the trigger's ``run_butler``, the
dispatcher's wake-up) runs its coroutine through a worker thread blocked on the loop, and that thread
receives the cancellation as ``concurrent.futures.CancelledError``, an ``Exception``, which DBOS 3.4
records as the workflow's ERROR outcome: the run is never recovered (issue 14 item 3). So every async
workflow body is wrapped to turn the cancellation into ``ExecutorStopping``, a ``BaseException`` that no
path records as an outcome, as ``KeyboardInterrupt`` would not be.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from mailnode import __version__, budgets, hooks
from mailnode.config import Settings
from mailnode.errors import MailnodeError
from mailnode.node import Node

#: Modules that declare DBOS workflows; imported before launch so recovery finds every workflow.
WORKFLOW_MODULES = ("mailnode.ingress.workflows", "mailnode.outbound.workflows", "mailnode.butler.engine",
                    "mailnode.butler.trigger")

log = logging.getLogger("mailnode.runtime")

P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
_node: Node | None = None
_launched = False
_executor_id: str | None = None
#: Queues declared by the workflow modules (``declare_queue``): name -> worker concurrency; ``launch`` registers
#: each, and ``queue`` returns the registered one until ``shutdown``.
_declared_queues: dict[str, int] = {}
_queues: dict[str, Any] = {}
#: How many ``drained_on_stop`` workflow bodies are running now, and the condition ``shutdown`` waits on.
_inflight = 0
_inflight_changed = threading.Condition()


def system_database_url(node: Node) -> str:
    """The DBOS system database URL for ``node`` (``system_database_url_of`` its settings)."""
    return system_database_url_of(node.settings)


def system_database_url_of(s: Settings) -> str:
    """The DBOS system database URL: the setting, the node's PostgreSQL, or SQLite in the data dir."""
    if s.dbos_system_database_url:
        return s.dbos_system_database_url
    if s.is_postgres:
        return s.resolved_database_url
    return f"sqlite:///{(s.data_dir / 'dbos.sqlite').resolve()}"


def use_wal(url: str) -> None:
    """Turn the SQLite file of ``url`` (``sqlite:///<path>``) to WAL, creating the file if absent; any other
    URL is left alone. WAL is a property of the file, kept by every later connection (DBOS's included), so
    this runs once before DBOS opens it and DBOS needs no change. A file another process holds open in the
    rollback journal cannot change mode: that is logged (``dbos.journal_mode``) and the start goes on, since
    the journal changes speed, not durability (DBOS's connections keep ``synchronous=FULL``).
    """
    if not url.startswith("sqlite:///"):
        return
    import sqlite3

    conn = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=budgets.SQLITE_BUSY_TIMEOUT_MS / 1000)
    try:
        mode = str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
    finally:
        conn.close()
    if mode.lower() != "wal":
        log.warning("dbos.journal_mode mode=%s url=%s: the system database stays out of WAL", mode, url)


def executor_id(node: Node, role: str = "serve") -> str:
    """This process's executor id: the setting, else ``<role>-<host>-<pid>``.

    The derived id is distinct among live processes, on one host as on several (spec/dbos.md trap 3: two
    live processes with one id re-run each other's workflows; ``<role>-<host>`` alone was the same for two
    processes on one host). It is not stable across restarts, and need not be: a restarted process (or any
    other) takes over a dead one's pending work through ``mailnode.liveness`` (issue 19). A configured id
    keeps DBOS's own recovery at start as well; it must then differ between processes.
    """
    return node.settings.executor_id or f"{role}-{socket.gethostname()}-{os.getpid()}"


def recover_executor(dead_executor_id: str) -> int:
    """Hand the PENDING workflows of the dead executor ``dead_executor_id`` (of this mailnode version) back to
    DBOS's queues, where whichever live process dequeues each first runs it from its last recorded step;
    returns how many. DBOS re-enqueues a workflow only while it is PENDING under that id, so recovering twice
    (two survivors, or a claimant that died mid-way) starts nothing twice.

    Uses DBOS 3.4's ``DBOS._recover_pending_workflows`` (what DBOS's own conductor calls for a dead executor;
    3.4 has no public name for it). Raises ``E_EXECUTOR_NOT_RUNNING`` (500) outside ``launch``..``shutdown``.
    """
    from dbos import DBOS

    if not _launched:
        raise MailnodeError(code="E_EXECUTOR_NOT_RUNNING", what="No durable executor runs in this process.",
                            why="runtime.launch() has not run in this process, or it was shut down.",
                            fix="Start the node with mailnode serve.", status=500)
    return len(DBOS._recover_pending_workflows([dead_executor_id]))


def launch(node: Node, role: str = "serve") -> None:
    """Configure and launch DBOS for this process; recovery of pending workflows starts here.

    Raises ``E_EXECUTOR_ALREADY_RUNNING`` (500) if this process already launched one, ``E_HOOK_UNWIRED``
    (500) if a hook a lower layer calls is not wired (``mailnode.hooks``; ``mailnode.wiring`` wires them).
    """
    global _node, _launched, _executor_id
    import importlib

    from dbos import DBOS, DBOSConfig

    for module in WORKFLOW_MODULES:
        importlib.import_module(module)
    hooks.require_wired()  # an unwired hook stops the start (E_HOOK_UNWIRED), it is not skipped
    with _lock:
        if _launched:
            raise MailnodeError(code="E_EXECUTOR_ALREADY_RUNNING", what="DBOS is already launched in this process.",
                                why="There is one durable executor per process.",
                                fix="Call runtime.shutdown() first.", status=500)
        url = system_database_url(node)
        config: DBOSConfig = {
            "name": "mailnode",
            "system_database_url": url,
            "application_version": __version__,
            "executor_id": executor_id(node, role),
            "notification_listener_polling_interval_sec": budgets.DBOS_NOTIFICATION_POLL_SECONDS,
            # DBOS sets its logger to this level at launch (INFO otherwise: ~70 system-schema lines a start
            # and an invitation to a hosted console); ``mailnode.logs`` routes what passes.
            "log_level": node.settings.log_libraries.upper(),
        }
        _node = node
        use_wal(url)
        DBOS(config=config)
        DBOS.launch()
        # After launch: DBOS keeps queues in its system database (spec/dbos.md, "Queues"). Its queue thread
        # finds a newly registered queue within a second; what was enqueued before waits, it is not lost.
        for name, worker_concurrency in _declared_queues.items():
            _queues[name] = DBOS.register_queue(name, worker_concurrency=worker_concurrency,
                                                polling_interval_sec=budgets.DBOS_QUEUE_POLL_SECONDS)
        _launched = True
        _executor_id = config["executor_id"]


class ExecutorStopping(BaseException):
    """This process stopped running a workflow (DBOS's event loop cancelled it); not the workflow's outcome.

    A ``BaseException``, like ``KeyboardInterrupt``: DBOS records an ``Exception`` escaping a workflow as
    its ERROR outcome and lets anything else pass unrecorded, so the workflow stays PENDING and the next
    start of an executor with the same id, a takeover of this executor (``recover_executor``, driven by
    ``mailnode.liveness``) or ``DBOS.resume_workflow`` recovers it from its last step.
    """


def pending_on_stop(body: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Wrap an async workflow body (under ``@DBOS.workflow()``) so a graceful stop leaves it PENDING.

    ``asyncio.CancelledError`` reaching the body (only ``DBOS.destroy`` cancels workflow tasks; a
    ``DBOS.cancel_workflow`` raises ``DBOSWorkflowCancelledError`` instead) becomes ``ExecutorStopping``,
    logged at INFO with the workflow id; every other exception and every result pass through unchanged.
    The name, module and signature are the body's, so DBOS registers and recovers it under its own name;
    the wrapper is marked ``stays_pending_on_stop`` (a test finds every async workflow without it).
    """

    @functools.wraps(body)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await body(*args, **kwargs)
        except asyncio.CancelledError:
            from dbos import DBOS

            log.info("workflow.left_pending id=%s name=%s: the executor is stopping; a takeover recovers it",
                     DBOS.workflow_id, body.__name__)
            raise ExecutorStopping(DBOS.workflow_id) from None

    wrapper.stays_pending_on_stop = True  # type: ignore[attr-defined]
    return wrapper


def declare_queue(name: str, worker_concurrency: int) -> None:
    """Declare a DBOS queue that ``launch`` registers: at most ``worker_concurrency`` of its workflows run at
    once in this process (others wait in the system database, for this process or another to take).
    Call at import of a module in ``WORKFLOW_MODULES``; declaring again replaces the concurrency."""
    _declared_queues[name] = worker_concurrency


def queue(name: str) -> Any:
    """The DBOS queue ``name`` registered by ``launch`` (``.enqueue(workflow, *args)``).

    Raises ``E_EXECUTOR_NOT_RUNNING`` (500) outside ``launch``..``shutdown`` or for an undeclared name.
    """
    found = _queues.get(name)
    if found is None:
        raise MailnodeError(code="E_EXECUTOR_NOT_RUNNING", what=f"No durable queue {name!r} is running.",
                            why="runtime.launch() has not run in this process, or the queue was never declared "
                                f"(declared: {sorted(_declared_queues)}).",
                            fix="Start the node with mailnode serve.", status=500)
    return found


def current_node() -> Node:
    """The node this process launched DBOS with; ``E_EXECUTOR_NOT_RUNNING`` (500) before launch."""
    if _node is None:
        raise MailnodeError(code="E_EXECUTOR_NOT_RUNNING", what="No node is bound to the durable executor.",
                            why="runtime.launch() has not run in this process.",
                            fix="Start the node with mailnode serve.", status=500)
    return _node


def is_launched() -> bool:
    """True between ``launch`` and ``shutdown``."""
    return _launched


def launched_executor_id() -> str | None:
    """The executor id this process launched DBOS with (``executor_id``), None outside ``launch``..``shutdown``."""
    return _executor_id


def workflow_statuses(node: Node, workflow_ids: list[str]) -> dict[str, str]:
    """DBOS's status (``PENDING``, ``ERROR`` ...) of each of ``workflow_ids`` that exists; absent ids are
    workflows DBOS does not hold. Reads through the launched executor, else through a ``DBOSClient`` over
    ``system_database_url`` (never creating a SQLite file that does not exist yet).

    Raises ``E_EXECUTOR_UNREADABLE`` (503) when the system database does not exist or cannot be read.
    """
    if not workflow_ids:
        return {}
    from dbos import DBOS, DBOSClient

    if _launched:
        found = DBOS.list_workflows(workflow_ids=workflow_ids, load_input=False, load_output=False)
        return {w.workflow_id: str(w.status) for w in found}
    url = system_database_url(node)
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        raise _unreadable(url, "the file does not exist (no durable executor has run over this data directory)")
    try:
        client = DBOSClient(system_database_url=url, retry_connection_errors=False)
        try:
            found = client.list_workflows(workflow_ids=workflow_ids, load_input=False, load_output=False)
        finally:
            client.destroy()
    except Exception as exc:
        raise _unreadable(url, f"{type(exc).__name__}: {exc}") from exc
    return {w.workflow_id: str(w.status) for w in found}


def _unreadable(url: str, why: str) -> MailnodeError:
    shown = url.split("@")[-1] if "@" in url else url
    return MailnodeError(code="E_EXECUTOR_UNREADABLE", what=f"The durable executor's system database ({shown}) "
                         "could not be read.", why=why,
                         fix="Start the node once with mailnode serve (it creates the database), or check "
                             "MAILNODE_DBOS_SYSTEM_DATABASE_URL and MAILNODE_DATABASE_URL.", status=503)


def drained_on_stop(body: Callable[P, R]) -> Callable[P, R]:
    """Wrap a sync workflow body (under ``@DBOS.workflow()``) so a graceful stop waits for it to finish.

    A sync workflow runs on one of DBOS's worker threads; ``DBOS.destroy`` does not stop that thread, so a
    body still running when the executor goes away fails to record its step and DBOS logs a traceback
    ("System database accessed before DBOS was launched"), seen on a scheduled sweep during a SIGINT stop.
    ``shutdown`` waits (at most ``budgets.SHUTDOWN_DRAIN_SECONDS``) until no wrapped body is running. The
    name, module and signature are the body's; the wrapper is marked ``drains_on_stop`` (a test finds every
    sync workflow without it).
    """

    @functools.wraps(body)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        global _inflight
        with _inflight_changed:
            _inflight += 1
        try:
            return body(*args, **kwargs)
        finally:
            with _inflight_changed:
                _inflight -= 1
                _inflight_changed.notify_all()

    wrapper.drains_on_stop = True  # type: ignore[attr-defined]
    return wrapper


def _drain(timeout: float) -> int:
    """Wait up to ``timeout`` seconds until no ``drained_on_stop`` body runs; the number still running."""
    with _inflight_changed:
        _inflight_changed.wait_for(lambda: _inflight == 0, timeout=timeout)
        return _inflight


def _stop_starting_workflows(timeout: float) -> None:
    """Tell DBOS's scheduler and queue threads to stop, and wait up to ``timeout`` seconds for them to exit,
    so that no workflow starts while this executor stops.

    DBOS 3.4's ``destroy`` sets these threads' stop events and shuts its thread pool without waiting for a
    queue thread that is between dequeuing a workflow and submitting it, so a scheduled sweep dequeued in that
    window logged ``Error executing workflow sched-...: Executor accessed before DBOS was launched`` on a
    graceful stop (``tests/butler/runs/test_graceful_stop.py``). The workflow stays claimed and the next start
    recovers it; the ERROR line was the defect. Joining the threads first lets each finish what it dequeued.
    The attributes are DBOS's own (``background_thread_stop_events``, ``_background_threads``): where a
    version lacks them this does nothing and ``destroy`` stops the threads as before.
    """
    deadline = time.monotonic() + timeout
    for thread in starting_threads():
        thread.join(timeout=max(0.0, deadline - time.monotonic()))


#: DBOS background threads a stop leaves running until ``destroy``: running workflows still receive their
#: notifications (a release) and their jobs through them while the stop drains.
_KEPT_UNTIL_DESTROY = ("run_notification_listener", "run_notifier", "dbos-background-jobs")


def starting_threads() -> list[threading.Thread]:
    """Tell DBOS's threads that start workflows (its queue thread and queue workers, the scheduler, event
    pollers) to stop, and return them: every background thread but those in ``_KEPT_UNTIL_DESTROY``."""
    from dbos import _dbos as dbos_module

    instance = getattr(dbos_module, "_dbos_global_instance", None)
    for event in list(getattr(instance, "background_thread_stop_events", ())):
        event.set()
    return [t for t in list(getattr(instance, "_background_threads", ()))
            if not any(kept in t.name for kept in _KEPT_UNTIL_DESTROY)]


def shutdown() -> None:
    """Stop DBOS starting workflows (``budgets.SHUTDOWN_STOP_STARTING_SECONDS``), wait for running sync
    workflow bodies (``drained_on_stop``, bounded by ``budgets.SHUTDOWN_DRAIN_SECONDS``), then destroy DBOS
    and forget the node. DBOS's event loop cancels every async workflow, which stays PENDING
    (``pending_on_stop``) for the next start of this executor id, or a takeover (``recover_executor``), to
    recover."""
    global _node, _launched, _executor_id
    from dbos import DBOS

    if is_launched():
        _stop_starting_workflows(budgets.SHUTDOWN_STOP_STARTING_SECONDS)
    # Before taking _lock: a running body may need current_node(), which takes it.
    still = _drain(budgets.SHUTDOWN_DRAIN_SECONDS)
    if still:
        log.warning("workflow.still_running count=%d: the stop goes on after %.0f s; the next start recovers them",
                    still, budgets.SHUTDOWN_DRAIN_SECONDS)
    with _lock:
        if _launched:
            DBOS.destroy(destroy_registry=False)
        _queues.clear()
        _launched = False
        _node = None
        _executor_id = None
