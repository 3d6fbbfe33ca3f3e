"""Every async DBOS workflow of the node is wrapped by ``runtime.pending_on_stop``, so a graceful stop leaves
it PENDING for the next start instead of recording the stop as its ERROR outcome (issue 14 item 3; the
served proof is tests/butler_run/test_graceful_stop.py); every sync one by ``runtime.drained_on_stop``, so
a graceful stop waits for a running body instead of destroying the executor under it."""

from __future__ import annotations

import importlib
import inspect
import threading
import time

from mailnode import runtime


def test_every_async_workflow_stays_pending_on_a_graceful_stop() -> None:
    async_workflows: dict[str, bool] = {}
    for name in (*runtime.WORKFLOW_MODULES, "mailnode.outbound.sweeper_workflows", "mailnode.notices.workflows"):
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
    for name in (*runtime.WORKFLOW_MODULES, "mailnode.outbound.sweeper_workflows", "mailnode.notices.workflows"):
        for value in vars(importlib.import_module(name)).values():
            if _is_workflow(value) and not inspect.iscoroutinefunction(value):
                sync_workflows[value.__name__] = bool(getattr(value, "drains_on_stop", False))
    assert sync_workflows == {name: True for name in (
        "materialise_workflow", "scheduled_scan", "scheduled_sweep", "trigger_workflow", "scheduled_sweeper",
        "scheduled_notice_sweep")}


def test_a_graceful_stop_waits_for_a_running_sync_body_before_destroying_the_executor() -> None:
    # A scheduled sweep still running when DBOS was destroyed logged DBOS's traceback ("System database
    # accessed before DBOS was launched"): the stop must wait for the body, then go on.
    release = threading.Event()
    order: list[str] = []

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
    stopper.join(0.3)
    assert stopper.is_alive(), "shutdown did not wait for the running body"
    release.set()
    stopper.join(5)
    worker.join(5)
    assert order == ["body finished", "executor destroyed"]
