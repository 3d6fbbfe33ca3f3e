"""Every async DBOS workflow of the node is wrapped by ``runtime.pending_on_stop``, so a graceful stop leaves
it PENDING for the next start instead of recording the stop as its ERROR outcome (issue 14 item 3; the
served proof is tests/butler/runs/test_graceful_stop.py); every sync one by ``runtime.drained_on_stop``, so
a graceful stop waits for a running body instead of destroying the executor under it."""

from __future__ import annotations

import importlib
import inspect
import threading
import time
from typing import Any

import pytest

from mailnode import runtime


def test_every_async_workflow_stays_pending_on_a_graceful_stop() -> None:
    async_workflows: dict[str, bool] = {}
    for name in (*runtime.WORKFLOW_MODULES, "mailnode.outbound.sweeper_workflows", "mailnode.notices.workflows",
                 "mailnode.app_events.workflows"):
        for value in vars(importlib.import_module(name)).values():
            if hasattr(value, "dbos_function_name") and inspect.iscoroutinefunction(value):
                async_workflows[value.__name__] = bool(getattr(value, "stays_pending_on_stop", False))
    assert async_workflows == {"run_butler": True, "wake_workflow": True}


def _is_workflow(value: object) -> bool:
    # DBOS registers steps too, under "<temp>." names; its workflows under their own.
    from dbos._dbos import _get_or_create_dbos_registry

    name = getattr(value, "dbos_function_name", None)
    return (name is not None and not name.startswith("<temp>.")
            and name in _get_or_create_dbos_registry().workflow_info_map)


def test_every_sync_workflow_is_waited_for_by_a_graceful_stop() -> None:
    sync_workflows: dict[str, bool] = {}
    for name in (*runtime.WORKFLOW_MODULES, "mailnode.outbound.sweeper_workflows", "mailnode.notices.workflows",
                 "mailnode.app_events.workflows"):
        for value in vars(importlib.import_module(name)).values():
            if _is_workflow(value) and not inspect.iscoroutinefunction(value):
                sync_workflows[value.__name__] = bool(getattr(value, "drains_on_stop", False))
    assert sync_workflows == {name: True for name in (
        "materialise_workflow", "scheduled_scan", "scheduled_sweep", "trigger_workflow", "scheduled_sweeper",
        "scheduled_notice_sweep", "scheduled_webhook_pass")}


class _SignallingCondition(threading.Condition):
    """A condition that sets ``waiting`` each time a thread is about to block on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def test_a_graceful_stop_waits_for_a_running_sync_body_before_destroying_the_executor(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A scheduled sweep still running when DBOS was destroyed logged DBOS's traceback ("System database
    # accessed before DBOS was launched"): the stop must wait for the body, then go on.
    release = threading.Event()
    order: list[str] = []
    # The body counts itself on this condition and the stop blocks on it: its ``waiting`` is the signal that
    # the stop has found the body running and waits, rather than a guessed time after which it should have.
    condition = _SignallingCondition()
    monkeypatch.setattr(runtime, "_inflight_changed", condition)

    @runtime.drained_on_stop
    def body() -> None:
        release.wait(5)
        order.append("body finished")

    worker = threading.Thread(target=body)
    worker.start()
    while runtime._inflight == 0:
        time.sleep(0.001)
    stopper = threading.Thread(target=lambda: (runtime.shutdown(), order.append("executor destroyed")))
    stopper.start()
    assert condition.waiting.wait(5), "shutdown did not wait for the running body"
    assert stopper.is_alive() and order == []
    release.set()
    stopper.join(5)
    worker.join(5)
    assert order == ["body finished", "executor destroyed"]


def test_a_graceful_stop_stops_dbos_starting_workflows_before_it_drains(node: Any, monkeypatch: Any) -> None:
    # A queue thread that dequeued a scheduled sweep while DBOS was being destroyed logged "Error executing
    # workflow sched-...: Executor accessed before DBOS was launched": the scheduler and queue threads must
    # have exited before the drain, so nothing starts between the drain and the destroy.
    from dbos import _dbos as dbos_module

    from mailnode import wiring

    wiring.launch(node, role="test")
    try:
        kept = runtime._KEPT_UNTIL_DESTROY
        threads = [t for t in dbos_module._dbos_global_instance._background_threads
                   if not any(name in t.name for name in kept)]
        assert any("queue_thread" in t.name for t in threads), [t.name for t in threads]
        assert all(t.is_alive() for t in threads), "DBOS runs no background thread to stop"
        alive_at_drain: list[str] = []
        real_drain = runtime._drain

        def drain(timeout: float) -> int:
            alive_at_drain.extend(t.name for t in threads if t.is_alive())
            return real_drain(timeout)

        monkeypatch.setattr(runtime, "_drain", drain)
    finally:
        runtime.shutdown()
    assert alive_at_drain == []
