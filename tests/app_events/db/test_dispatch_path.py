"""Issue 20, "Numbers": webhook delivery adds no statement to the dispatch path. A hand-over with an
endpoint waiting for it executes exactly the statements of one without, none of them about webhooks; the
event is found afterwards by the scan, and an endpoint registered after a fact is not sent it."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select, update

from mailnode.app_events import scan
from mailnode.outbound import dispatch
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.app_events import webhook_deliveries
from mailnode.schema.mail import mailboxes
from tests.api.conftest import Cast
from tests.outbound.db.conftest import running_sink


def _hand_over(node: Any, cast: Cast, key: str) -> Any:
    request = SealRequest(mailbox_id=cast.installed.mailbox_id, to=[f"{key}@remote.test"], subject="Hello",
                          body="Hi", mail_class="deferrable", idempotency_key=key)
    sealed = seal(node, org_id=cast.installed.org_id, author_id=cast.app_id, request=request)
    with running_sink() as sink, node.meter.measure(keep_sql=True) as measured:
        result = asyncio.run(dispatch.dispatch_one(node, sink.transport(), sealed.id))
    assert result.state == "handed_over"
    return measured


def test_a_hand_over_costs_the_same_statements_with_an_endpoint_waiting(cast: Cast, node: Any, clock: Any) -> None:
    with node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))
    cast.api.post("/api/access", headers=cast.admin, json={
        "subject_id": cast.app_id, "relation": "send.propose", "object_id": cast.installed.mailbox_id})
    # The node's first hand-over writes its first provider status; from the second on, each costs the same.
    _hand_over(node, cast, "warm")
    without = _hand_over(node, cast, "first")
    clock.advance(1)
    made = cast.api.post("/api/webhooks/endpoints", json={"url": "https://hooks.example.com/in"}, headers=cast.app)
    assert made.status_code == 201, made.text
    clock.advance(1)
    waiting = _hand_over(node, cast, "second")
    assert waiting.count == without.count, (without.statements, waiting.statements)
    assert not any("webhook" in s.lower() for s in waiting.statements)

    # The scan finds the second hand-over; the first happened before the endpoint existed and is not sent.
    with node.begin() as conn:
        scan.scan_org(conn, cast.installed.org_id, clock.now())
    with node.read() as conn:
        sent = [r.payload["data"]["recipient"] for r in conn.execute(select(webhook_deliveries)).all()]
    assert sent == ["second@remote.test"]
