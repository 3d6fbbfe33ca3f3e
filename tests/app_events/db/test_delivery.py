"""Delivery on the node's frozen clock with the default retry schedule: a receiver down for an hour gets the
event once it is back; one down for the whole schedule has its endpoint disabled and administrators told."""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from mailnode import budgets
from mailnode.app_events import deliver
from mailnode.ids import new_id
from mailnode.schema.app_events import webhook_deliveries, webhook_endpoints
from mailnode.schema.notices import notices
from tests.api.conftest import Cast
from tests.app_events.served.conftest import Answer, Receiver


def _pending(node: Any, org_id: str, endpoint_id: str) -> str:
    did = new_id("whd")
    with node.begin() as conn:
        conn.execute(webhook_deliveries.insert().values(
            id=did, org_id=org_id, endpoint_id=endpoint_id, event_id=new_id("evt"), event_key=f"test:{did}",
            event_type="mail.handed_over", payload={"type": "mail.handed_over", "created_at": "x", "data": {}},
            state="pending", attempts=0, next_attempt_at=node.clock.now(), created_at=node.clock.now()))
    return did


def _row(node: Any, table: Any, row_id: str) -> Any:
    with node.read() as conn:
        return conn.execute(select(table).where(table.c.id == row_id)).one()


def test_down_for_an_hour_then_up_and_down_for_a_day(cast: Cast, node: Any, clock: Any) -> None:
    receiver = Receiver("127.0.0.2")
    try:
        receiver.answer = Answer(503, b"down")
        made = cast.api.post("/api/webhooks/endpoints", json={"url": receiver.url}, headers=cast.app).json()
        eid = made["endpoint"]["id"]
        first = _pending(node, cast.installed.org_id, eid)

        # Down for an hour: attempts at 0 s, 5 s, 5 min 5 s and 35 min 5 s; nothing more is due in that hour.
        for wait in (0, *budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS[:3]):
            clock.advance(wait)
            assert deliver.deliver_due(node) == {"pending": 1}
        clock.advance(3600 - sum(budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS[:3]))
        assert deliver.deliver_due(node) == {} and len(receiver.seen) == 4
        # Back up: the next attempt (2 h after the fourth) delivers the same event.
        receiver.answer = Answer(204, b"")
        clock.advance(budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS[3])
        assert deliver.deliver_due(node) == {"delivered": 1}
        row = _row(node, webhook_deliveries, first)
        assert row.state == "delivered" and row.attempts == 5 and row.last_status_code == 204
        assert len({s.headers["webhook-id"] for s in receiver.seen}) == 1

        # Down for the whole schedule: after the last attempt, failed, the endpoint disabled, the others parked.
        receiver.answer = Answer(500, b"broken")
        second = _pending(node, cast.installed.org_id, eid)
        assert deliver.deliver_due(node) == {"pending": 1}
        third = _pending(node, cast.installed.org_id, eid)
        for wait in budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS:
            clock.advance(wait)
            deliver.deliver_due(node)
        assert _row(node, webhook_deliveries, second).state == "failed"
        assert _row(node, webhook_deliveries, second).attempts == len(budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS) + 1
        assert _row(node, webhook_deliveries, third).state == "disabled"
        endpoint = _row(node, webhook_endpoints, eid)
        assert endpoint.disabled_at == clock.now() and second in endpoint.disabled_reason
        with node.read() as conn:
            told = conn.execute(select(notices).where(notices.c.kind == "webhook_disabled")).all()
        assert [(n.recipient_user_id, n.address) for n in told] == [(cast.installed.user_id, "alex@example.test")]
        assert eid in told[0].body and receiver.url in told[0].body
        # Nothing more goes to a disabled endpoint.
        seen = len(receiver.seen)
        clock.advance(budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS[-1])
        assert deliver.deliver_due(node) == {} and len(receiver.seen) == seen
    finally:
        receiver.close()


def test_a_closed_port_is_a_failed_attempt_retried_later(cast: Cast, node: Any, clock: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
    # Nobody listens on the port now: the connection is refused.
    made = cast.api.post("/api/webhooks/endpoints", json={"url": f"http://127.0.0.2:{port}/in"}, headers=cast.app)
    did = _pending(node, cast.installed.org_id, made.json()["endpoint"]["id"])
    assert deliver.deliver_due(node) == {"pending": 1}
    row = _row(node, webhook_deliveries, did)
    assert row.attempts == 1 and row.last_status_code is None and "ConnectError" in row.last_error
    assert row.next_attempt_at == clock.now() + timedelta(seconds=budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS[0])
