"""Durable materialisation: a DBOS workflow per receipt, keyed on the receipt id, and the repair scan.

The receipt commits in mailnode's database and the workflow starts in DBOS's, so a crash between the two
is repaired by ``scan_unmaterialised`` (at start-up and on a schedule), not by DBOS. Starting the same
workflow id twice returns the existing run, and ``materialise_receipt`` is itself idempotent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from dbos import DBOS, SetWorkflowID
from sqlalchemy import or_, select, update

from mailnode import budgets, runtime
from mailnode.ingress.materialise import materialise_receipt
from mailnode.ingress.tables import ingress_receipts

log = logging.getLogger("mailnode.ingress")


def workflow_id(receipt_id: str) -> str:
    """The DBOS workflow id of a receipt's materialisation."""
    return f"materialise-{receipt_id}"


@DBOS.step()
def materialise_step(receipt_id: str) -> str:
    """Materialise one receipt; returns the message id."""
    node = runtime.current_node()
    if node.settings.fault_materialise_delay_seconds:
        time.sleep(node.settings.fault_materialise_delay_seconds)
    return materialise_receipt(node, receipt_id).message_id


@DBOS.step()
def mark_workflow_done(receipt_id: str) -> None:
    """Record that the receipt's workflow finished (so the scan stops considering it)."""
    node = runtime.current_node()
    with node.begin() as conn:
        conn.execute(update(ingress_receipts).where(ingress_receipts.c.id == receipt_id,
                                                    ingress_receipts.c.workflow_done_at.is_(None))
                     .values(workflow_done_at=node.clock.now()))


@DBOS.workflow()
def materialise_workflow(receipt_id: str) -> str:
    """The durable unit of a delivery: materialise, run the ``AFTER_MATERIALISE`` hooks (the Butler
    trigger), then mark the receipt done. For a receipt ``mailnode ingest`` already materialised, the
    first step returns the existing message and the hooks still run."""
    message_id = materialise_step(receipt_id)
    for hook in AFTER_MATERIALISE:
        hook(message_id)
    mark_workflow_done(receipt_id)
    return message_id


#: Steps that run after a message exists (the Butler trigger registers here). Each takes the message id
#: and must be a DBOS step or workflow call, so a resumed workflow does not repeat it.
AFTER_MATERIALISE: list[Callable[[str], object]] = []

# The Butler trigger: every published Butler listening on the delivered-to address gets its run
# (issue 7). A child workflow, so a resumed materialisation does not start it twice.
from mailnode.butler.trigger import trigger_workflow  # noqa: E402

AFTER_MATERIALISE.append(trigger_workflow)


def start(receipt_ids: list[str]) -> None:
    """Start (or find) the materialisation workflow of each receipt."""
    for rid in receipt_ids:
        with SetWorkflowID(workflow_id(rid)):
            DBOS.start_workflow(materialise_workflow, rid)


def scan_unmaterialised(limit: int = budgets.MATERIALISE_SCAN_BATCH) -> int:
    """Start workflows for receipts whose workflow never finished: unmaterialised ones (a crash between the
    receipt and the workflow start) and ones ``mailnode ingest`` materialised without the durable executor
    (their Butler trigger is still owed). Returns how many were found; a workflow already running is found,
    not started twice (its id is the receipt's)."""
    node = runtime.current_node()
    t = ingress_receipts.c
    with node.read() as conn:
        ids = [r.id for r in conn.execute(
            select(t.id).where(or_(t.materialised_at.is_(None), t.workflow_done_at.is_(None)))
            .order_by(t.received_at).limit(limit)).all()]
    if ids:
        log.info("materialise.scan found=%d", len(ids))
        start(ids)
    return len(ids)


@DBOS.workflow()
def scheduled_scan(scheduled_at: datetime, context: object) -> None:
    """The schedule's entry point (DBOS passes the scheduled time and a context)."""
    scan_unmaterialised()
