"""Durable materialisation: a DBOS workflow per receipt, keyed on the receipt id, and the repair scan.

Accept first, materialise after (issue 19): a workflow is enqueued on the ``materialise`` DBOS queue, whose
worker concurrency (``budgets.MATERIALISE_WORKER_CONCURRENCY``) bounds how many run at once in a process, so a
burst of deliveries waits in the system database instead of taking every connection from the listener.

The receipt commits in mailnode's database and the workflow starts in DBOS's, so a crash between the two
is repaired by ``scan_unmaterialised`` (at start-up and on a schedule), not by DBOS. Starting the same
workflow id twice returns the existing run, and ``materialise_receipt`` is itself idempotent.

A receipt whose materialisation raises, or which was attempted ``MATERIALISE_ATTEMPTS_MAX`` times without
finishing, is quarantined (``ingress.quarantine``): its workflow ends without the Butler trigger, the step is
never retried (``retries_allowed=False``), and the scan skips it, so a message that kills the process is not
parsed again at every start. A re-drive clears the quarantine and counts ``redrives``, which is part of the
workflow id: the re-driven materialisation is a new workflow, not the finished one found again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from dbos import DBOS, SetWorkflowID
from prometheus_client import Counter
from sqlalchemy import or_, select, update

from mailnode import budgets, hooks, runtime
from mailnode.ingress.materialise import materialise_or_quarantine
from mailnode.schema.ingress import ingress_receipts

log = logging.getLogger("mailnode.ingress")

#: The DBOS queue materialisation workflows run from (declared here, registered by ``runtime.launch``).
QUEUE = "materialise"
runtime.declare_queue(QUEUE, budgets.MATERIALISE_WORKER_CONCURRENCY)

#: Repair scans (``scan_unmaterialised``: at start-up and scheduled) this process started, and those that
#: returned; ``metrics`` exposes both on ``GET /metrics``. A scan is counted as started before it reads, so
#: once the completed count exceeds the started count read at some moment, a scan that began after that
#: moment has finished: a test waits on them instead of a guessed time (issue 18).
SCANS_STARTED = Counter("mailnode_materialise_scans_started", "Materialisation repair scans this process started.",
                        registry=None)
SCANS_COMPLETED = Counter("mailnode_materialise_scans_completed",
                          "Materialisation repair scans this process finished.", registry=None)


def workflow_id(receipt_id: str, redrives: int = 0) -> str:
    """The DBOS workflow id of a receipt's materialisation (``-r<n>`` after its n-th re-drive)."""
    return f"materialise-{receipt_id}" if redrives == 0 else f"materialise-{receipt_id}-r{redrives}"


@DBOS.step(retries_allowed=False)
def materialise_step(receipt_id: str) -> str | None:
    """Materialise one receipt; returns the message id, or ``None`` when the receipt is quarantined."""
    node = runtime.current_node()
    done = materialise_or_quarantine(node, receipt_id)
    return done.message_id if done is not None else None


@DBOS.step()
def mark_workflow_done(receipt_id: str) -> None:
    """Record that the receipt's workflow finished (so the scan stops considering it)."""
    node = runtime.current_node()
    with node.begin() as conn:
        conn.execute(update(ingress_receipts).where(ingress_receipts.c.id == receipt_id,
                                                    ingress_receipts.c.workflow_done_at.is_(None))
                     .values(workflow_done_at=node.clock.now()))


@DBOS.workflow()
@runtime.drained_on_stop
def materialise_workflow(receipt_id: str) -> str | None:
    """The durable unit of a delivery: materialise, run the ``AFTER_MATERIALISE`` hooks (the Butler
    trigger), then mark the receipt done. For a receipt ``mailnode ingest`` already materialised, the
    first step returns the existing message and the hooks still run. A quarantined receipt ends the workflow
    there (``None``): no hook runs and the receipt is not marked done until a re-drive materialises it."""
    message_id = materialise_step(receipt_id)
    if message_id is None:
        return None
    for hook in AFTER_MATERIALISE:
        hook(message_id)
    mark_workflow_done(receipt_id)
    return message_id


#: Steps that run after a message exists. Each takes the message id and must be a DBOS step or workflow call,
#: so a resumed workflow does not repeat it. Ingress does not import the layers above it: the composition
#: root (``mailnode.wiring``) wires the Butler trigger here at start-up, and the hook is declared
#: (``mailnode.hooks``) so a launch without that wiring is an error (``E_HOOK_UNWIRED``), not a silent
#: skip (issue 18).
AFTER_MATERIALISE: list[Callable[[str], object]] = []


def wire_after_materialise(*hooks: Callable[[str], object]) -> None:
    """Set the steps run after each materialisation (replacing any earlier wiring, so wiring twice does not
    run a hook twice)."""
    AFTER_MATERIALISE[:] = hooks


hooks.declare("ingress.after_materialise", lambda: bool(AFTER_MATERIALISE),
              "Without the Butler trigger wired into ingress, every delivery would start no Butler run.")


def start(receipt_ids: list[str], redrives: dict[str, int] | None = None) -> None:
    """Enqueue (or find) the materialisation workflow of each receipt on ``QUEUE``; ``redrives`` gives a
    re-driven receipt's count (absent: 0), which picks its workflow id. Returns once each is durably queued,
    not when it runs. Raises ``E_EXECUTOR_NOT_RUNNING`` (500) before ``runtime.launch``."""
    queue = runtime.queue(QUEUE)
    for rid in receipt_ids:
        with SetWorkflowID(workflow_id(rid, (redrives or {}).get(rid, 0))):
            queue.enqueue(materialise_workflow, rid)


def scan_unmaterialised(limit: int = budgets.MATERIALISE_SCAN_BATCH) -> int:
    """Start workflows for receipts whose workflow never finished: unmaterialised ones (a crash between the
    receipt and the workflow start) and ones ``mailnode ingest`` materialised without the durable executor
    (their Butler trigger is still owed). Quarantined receipts are skipped: they wait for a re-drive. Returns
    how many were found; a workflow already running is found, not started twice (its id is the receipt's and
    its re-drive count). Counted in ``SCANS_STARTED`` and, when it returns, ``SCANS_COMPLETED``."""
    SCANS_STARTED.inc()
    node = runtime.current_node()
    t = ingress_receipts.c
    with node.read() as conn:
        rows = conn.execute(
            select(t.id, t.redrives).where(or_(t.materialised_at.is_(None), t.workflow_done_at.is_(None)),
                                           t.quarantined_at.is_(None))
            .order_by(t.received_at).limit(limit)).all()
    if rows:
        log.info("materialise.scan found=%d", len(rows))
        start([r.id for r in rows], {r.id: r.redrives for r in rows})
    SCANS_COMPLETED.inc()
    return len(rows)


@DBOS.workflow()
@runtime.drained_on_stop
def scheduled_scan(scheduled_at: datetime, context: object) -> None:
    """The schedule's entry point (DBOS passes the scheduled time and a context)."""
    scan_unmaterialised()
