"""The webhook pass as a DBOS scheduled workflow (``server.schedules``; ``app_events.scan``, ``.deliver``).

The schedule fires every ``settings.webhook_pass_interval_seconds`` (default
``budgets.WEBHOOK_PASS_INTERVAL_SECONDS``). The pass scans each organisation's new events into deliveries
(one recorded step: a resumed workflow does not scan twice for one tick; a second process scanning the same
facts writes nothing, by the deliveries' unique key), then attempts the due deliveries (a second step; each
claim is leased, so a crash mid-attempt leaves the delivery due again, at least once to the receiver, who
deduplicates on ``webhook-id``).
"""

from __future__ import annotations

from datetime import datetime

from dbos import DBOS
from sqlalchemy import select

from mailnode import runtime
from mailnode.app_events import deliver, scan
from mailnode.node import Node
from mailnode.schema.app_events import webhook_endpoints


def scan_once(node: Node) -> int:
    """One scan of every organisation with an enabled endpoint; the deliveries written."""
    now = node.clock.now()
    with node.read() as conn:
        org_ids = sorted(set(conn.execute(select(webhook_endpoints.c.org_id)
                                          .where(webhook_endpoints.c.disabled_at.is_(None))).scalars().all()))
    written = 0
    for org_id in org_ids:
        with node.begin() as conn:
            written += len(scan.scan_org(conn, org_id, now))
    return written


@DBOS.step()
def webhook_scan_step() -> int:
    """``scan_once`` as a recorded step."""
    return scan_once(runtime.current_node())


@DBOS.step()
def webhook_deliver_step() -> dict[str, int]:
    """``deliver.deliver_due`` as a recorded step."""
    return deliver.deliver_due(runtime.current_node())


@DBOS.workflow()
@runtime.drained_on_stop
def scheduled_webhook_pass(scheduled_at: datetime, context: object) -> None:
    """The schedule's entry point (DBOS passes the scheduled time and a context)."""
    webhook_scan_step()
    webhook_deliver_step()
