"""Durable dispatch: the scheduled sweep and the wake-up when a send becomes movable (DBOS).

The sweep runs every ``settings.dispatch_interval_seconds`` (``server.apply_schedules``). A wake-up is
started after a seal or a retry: a workflow keyed on the send id (so starting it twice is one run) that
sleeps durably until the send's ``release_at`` (0 s for a hold window of 0) and then sweeps. Both call
``dispatch.sweep`` with this process's executor id in the claim token, so a restart under the same
executor id recovers the claims a killed predecessor left (``recover_own_claims``), and a process that takes
over a dead one (``mailnode.liveness``) recovers the claims made under its id without waiting for their
lease (``recover_claims_of``).
"""

from __future__ import annotations

import logging
from datetime import datetime

from dbos import DBOS, SetWorkflowID
from prometheus_client import Counter

from mailnode import runtime
from mailnode.node import Node
from mailnode.outbound import dispatch

log = logging.getLogger("mailnode.dispatch")

#: Dispatch passes (scheduled sweeps and wake-ups) this process started, and those that returned; ``metrics``
#: exposes both on ``GET /metrics``. A pass is counted as started before it reads anything, so once the
#: completed count exceeds the started count read at some moment, a pass that began after that moment has
#: finished: a stalled dispatch shows as neither moving, and a test waits on them instead of a guessed time.
PASSES_STARTED = Counter("mailnode_dispatch_passes_started", "Dispatch passes this process started.", registry=None)
PASSES_COMPLETED = Counter("mailnode_dispatch_passes_completed", "Dispatch passes this process finished.",
                           registry=None)


def _executor() -> str:
    return runtime.executor_id(runtime.current_node())


def sweep_once() -> int:
    """One bounded sweep with the configured transport, counted in ``PASSES_STARTED`` and (when it returns)
    ``PASSES_COMPLETED``; returns how many sends it moved."""
    PASSES_STARTED.inc()
    report = dispatch.sweep(runtime.current_node(), executor_id=_executor())
    PASSES_COMPLETED.inc()
    return sum(1 for r in report.results if r.state is not None)


@DBOS.step()
def sweep_step() -> int:
    """``sweep_once`` as a recorded step (a resumed workflow does not sweep twice for one tick)."""
    return sweep_once()


@DBOS.workflow()
@runtime.drained_on_stop
def scheduled_sweep(scheduled_at: datetime, context: object) -> None:
    """The schedule's entry point (DBOS passes the scheduled time and a context)."""
    sweep_step()


@DBOS.workflow()
@runtime.pending_on_stop
async def wake_workflow(delay_seconds: float) -> int:
    """Sleep durably for ``delay_seconds`` (an async wait holds no thread), then sweep once."""
    if delay_seconds > 0:
        await DBOS.sleep_async(delay_seconds)
    # A sync step runs on a worker thread, so the sweep's own event loop does not nest in DBOS's.
    return await DBOS.run_step_async(None, sweep_once)


def wake(send_id: str, delay_seconds: float) -> None:
    """Start (or find) the wake-up of ``send_id``; a no-op when no durable executor runs in this process
    (the CLI, tests without DBOS): the next scheduled sweep of the serving node picks the send up."""
    if not runtime.is_launched():
        return
    with SetWorkflowID(f"dispatch-wake-{send_id}-{int(delay_seconds * 1000)}"):
        DBOS.start_workflow(wake_workflow, max(0.0, delay_seconds))


def recover_own_claims(node: Node) -> int:
    """At start-up, before the durable executor runs anything: resolve claims left under this process's
    executor id. Executor ids are unique among live processes, so their holder is dead."""
    return dispatch.recover_claims(node, dispatch.capabilities_of(node), own_executor_id=runtime.executor_id(node))


def recover_claims_of(node: Node, dead_executor_id: str) -> int:
    """Resolve every claim made under ``dead_executor_id``, whose process is dead (a takeover decided it:
    ``mailnode.liveness``), without waiting for the claims' lease (``budgets.DISPATCH_LEASE_SECONDS``); returns
    how many. ``dispatch.recover_claims`` reads a bounded batch, so it runs again until a batch resolves none;
    each claim is resolved in its own transaction guarded by its claim token, so two recoverers never
    resolve one claim twice."""
    caps = dispatch.capabilities_of(node)
    total = 0
    while recovered := dispatch.recover_claims(node, caps, own_executor_id=dead_executor_id):
        total += recovered
    return total
