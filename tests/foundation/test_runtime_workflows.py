"""Every async DBOS workflow of the node is wrapped by ``runtime.pending_on_stop``, so a graceful stop leaves
it PENDING for the next start instead of recording the stop as its ERROR outcome (issue 14 item 3; the
served proof is tests/butler_run/test_graceful_stop.py)."""

from __future__ import annotations

import importlib
import inspect

from mailnode import runtime


def test_every_async_workflow_stays_pending_on_a_graceful_stop() -> None:
    async_workflows: dict[str, bool] = {}
    for name in (*runtime.WORKFLOW_MODULES, "mailnode.outbound.sweeper_workflows", "mailnode.notices.workflows"):
        for value in vars(importlib.import_module(name)).values():
            if hasattr(value, "dbos_function_name") and inspect.iscoroutinefunction(value):
                async_workflows[value.__name__] = bool(getattr(value, "stays_pending_on_stop", False))
    assert async_workflows == {"run_butler": True, "wake_workflow": True}
