"""Materialisation never starves the listener (issue 19): receipts' workflows run from the ``materialise`` DBOS
queue, at most ``budgets.MATERIALISE_WORKER_CONCURRENCY`` at once in a process; the rest wait in the queue."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from dbos import DBOS

from mailnode import budgets, runtime, wiring
from mailnode.ingress import workflows


def test_a_burst_of_receipts_materialises_at_most_the_worker_concurrency_at_once(
        node: Any, installed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = threading.Lock()
    running = 0
    most = 0
    done: list[str] = []

    def materialise_slowly(_node: Any, receipt_id: str) -> Any:
        # Stands in for parsing: held long enough that the queue's poll finds every burst receipt waiting.
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.3)
        with lock:
            running -= 1
            done.append(receipt_id)
        return None  # read by the workflow as "quarantined": it ends without the Butler trigger

    monkeypatch.setattr(workflows, "materialise_or_quarantine", materialise_slowly)
    burst = [f"rcpt_burst{i:02d}" for i in range(3 * budgets.MATERIALISE_WORKER_CONCURRENCY)]
    wiring.launch(node, role="test")
    try:
        workflows.start(burst)
        ids = [workflows.workflow_id(rid) for rid in burst]
        deadline = time.monotonic() + 60
        statuses: dict[str, str] = {}
        while time.monotonic() < deadline:
            statuses = {w.workflow_id: str(w.status) for w in DBOS.list_workflows(workflow_ids=ids)}
            if len(statuses) == len(ids) and set(statuses.values()) == {"SUCCESS"}:
                break
            time.sleep(0.05)
        assert set(statuses.values()) == {"SUCCESS"}, statuses
        assert {w.queue_name for w in DBOS.list_workflows(workflow_ids=ids)} == {workflows.QUEUE}
    finally:
        runtime.shutdown()
    assert sorted(done) == sorted(burst)
    assert 1 < most <= budgets.MATERIALISE_WORKER_CONCURRENCY


def test_starting_materialisation_before_the_executor_runs_is_refused() -> None:
    with pytest.raises(Exception) as caught:
        workflows.start(["rcpt_nothing"])
    assert getattr(caught.value, "code", None) == "E_EXECUTOR_NOT_RUNNING"
