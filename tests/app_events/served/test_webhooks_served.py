"""Webhooks to applications on a real node: a real smarthost, real DSNs over SMTP, local HTTP receivers.

Each event is checked the way an application would: the receiver verifies the signature with the
``standardwebhooks`` library and reads the JSON it was sent.
"""

from __future__ import annotations

import json
import smtplib
from collections.abc import Callable
from typing import Any

from standardwebhooks.webhooks import Webhook

from mailnode import budgets
from tests.app_events.served.conftest import (
    ALLOWED_HOST,
    Answer,
    Receiver,
    administrator,
    application,
    send_deferrable,
    wait_for,
)
from tests.outbound.db.conftest import Sink
from tests.outbound.db.test_pipeline import dsn
from tests.support.served import Served


def _delivery(app: Any, endpoint_id: str, event_type: str, state: str | None = None) -> dict[str, Any] | None:
    for d in app.deliveries(endpoint_id):
        if d["event_type"] == event_type and (state is None or d["state"] == state):
            return dict(d)
    return None


def _verified(receiver: Receiver, secret: str, event_type: str) -> dict[str, Any] | None:
    """The first request the receiver took for ``event_type``, verified with standardwebhooks; else None."""
    for seen in receiver.seen:
        if json.loads(seen.body)["type"] == event_type:
            verified = Webhook(secret).verify(seen.body, seen.headers)
            assert isinstance(verified, dict)
            return verified
    return None


def test_handed_over_and_bounced_events_arrive_signed_and_only_their_application_reads_them(
        node: Served, smarthost: Sink, receivers: Callable[..., Receiver]) -> None:
    receiver = receivers()
    app = application(node, "research-pipeline")
    other = application(node, "billing")
    made = app.ok("POST", "/api/webhooks/endpoints", json={"url": receiver.url})
    endpoint, secret = made["endpoint"], made["secret"]
    assert secret.startswith("whsec_") and endpoint["enabled"] is True
    assert "secret" not in app.ok("GET", f"/api/webhooks/endpoints/{endpoint['id']}")["endpoint"]

    mail_id = send_deferrable(app, node, "upload-7")
    handed = wait_for("a handed_over delivery", lambda: _delivery(app, endpoint["id"], "mail.handed_over",
                                                                  "delivered"))
    event = wait_for("the signed handed_over request", lambda: _verified(receiver, secret, "mail.handed_over"))
    assert event["type"] == "mail.handed_over" and event["id"] == handed["event_id"]
    assert event["data"]["mail_id"] == mail_id and event["data"]["recipient"] == "researcher@remote.test"
    assert event["data"]["state"] == "handed_over"
    seen = next(s for s in receiver.seen if json.loads(s.body)["type"] == "mail.handed_over")
    assert seen.headers["webhook-id"] == handed["event_id"]
    assert handed["attempt_log"][0]["status_code"] == 200 and handed["attempt_log"][0]["address"] == ALLOWED_HOST

    # A DSN over SMTP to the VERP address the smarthost saw bounces the recipient.
    verp = smarthost.handler.received[0].mail_from
    with smtplib.SMTP("127.0.0.1", node.smtp, timeout=30) as smtp:
        smtp.sendmail("", [verp], dsn("researcher@remote.test", "unrelated@elsewhere.test", verp))
    bounced = wait_for("the signed bounced request", lambda: _verified(receiver, secret, "mail.bounced"))
    assert bounced["data"]["mail_id"] == mail_id and bounced["data"]["state"] == "bounced"
    assert "550 5.1.1 user unknown" in bounced["data"]["reason"] and bounced["data"]["bounce_type"] == "hard"

    # Another application neither reads the endpoint nor its deliveries, nor resends one; the admin reads all.
    assert other.call("GET", f"/api/webhooks/endpoints/{endpoint['id']}").status_code == 404
    assert other.call("GET", f"/api/webhooks/endpoints/{endpoint['id']}/deliveries").status_code == 404
    assert other.call("POST", f"/api/webhooks/deliveries/{handed['id']}/resend").status_code == 404
    assert other.ok("GET", "/api/webhooks/endpoints")["endpoints"] == []
    admin = administrator(node)
    assert [e["id"] for e in admin.ok("GET", "/api/webhooks/endpoints")["endpoints"]] == [endpoint["id"]]


def test_a_receiver_down_gets_the_retries_then_the_endpoint_is_disabled_and_administrators_told(
        node: Served, receivers: Callable[..., Receiver]) -> None:
    receiver = receivers()
    receiver.answer = Answer(503, b"down for maintenance")
    app = application(node, "research-pipeline")
    made = app.ok("POST", "/api/webhooks/endpoints", json={"url": receiver.url, "event_types": ["mail.handed_over"]})
    eid, secret = made["endpoint"]["id"], made["secret"]

    # Down, then up: the same event is retried and delivered; the attempts show the 503 then the 200.
    send_deferrable(app, node, "first")
    wait_for("two failed attempts", lambda: len(receiver.seen) >= 2)
    receiver.answer = Answer(200, b"ok")
    first = wait_for("the retried delivery", lambda: _delivery(app, eid, "mail.handed_over", "delivered"))
    codes = [a["status_code"] for a in first["attempt_log"]]
    assert codes[:2] == [503, 503] and codes[-1] == 200
    assert len({s.headers["webhook-id"] for s in receiver.seen}) == 1
    assert Webhook(secret).verify(receiver.seen[-1].body, receiver.seen[-1].headers)["id"] == first["event_id"]

    # Down for good: after the last attempt of the schedule the delivery fails and the endpoint is disabled.
    receiver.answer = Answer(503, b"down")
    send_deferrable(app, node, "second", to="other@remote.test")
    failed = wait_for("the failed delivery", lambda: _delivery(app, eid, "mail.handed_over", "failed"))
    assert [a["status_code"] for a in failed["attempt_log"]] == [503] * 4
    ep = app.ok("GET", f"/api/webhooks/endpoints/{eid}")["endpoint"]
    assert ep["enabled"] is False and failed["id"] in ep["disabled_reason"]
    notices = wait_for("the administrators' notice", lambda: _notices(node, "webhook_disabled"))
    assert notices[0].address == "alex@example.test" and eid in notices[0].body
    # The notice sweep seals it as mail to the administrator, like every notice.
    wait_for("the notice sealed", lambda: all(n.send_id for n in _notices(node, "webhook_disabled")))

    # Resend: refused while disabled; once enabled and the receiver is up, delivered.
    r = app.call("POST", f"/api/webhooks/deliveries/{failed['id']}/resend")
    assert r.status_code == 409 and r.json()["error"] == "E_WEBHOOK_ENDPOINT_DISABLED"
    assert app.ok("PATCH", f"/api/webhooks/endpoints/{eid}", json={"enabled": True})["endpoint"]["enabled"] is True
    receiver.answer = Answer(200, b"ok")
    assert app.ok("POST", f"/api/webhooks/deliveries/{failed['id']}/resend")["delivery"]["state"] == "pending"
    again = wait_for("the resent delivery", lambda: _delivery(app, eid, "mail.handed_over", "delivered")
                     if any(d["id"] == failed["id"] and d["state"] == "delivered" for d in app.deliveries(eid))
                     else None)
    assert again is not None
    resent = next(d for d in app.deliveries(eid) if d["id"] == failed["id"])
    assert resent["attempt_log"][-1]["status_code"] == 200 and len(resent["attempt_log"]) == 5


def _notices(node: Served, kind: str) -> list[Any]:
    from sqlalchemy import select

    from mailnode.config import Settings
    from mailnode.node import Node
    from mailnode.schema.notices import notices

    opened = Node.open(Settings(data_dir=node.data_dir, database_url=node.env.get("MAILNODE_DATABASE_URL", "")),
                       migrate_to_head=False)
    try:
        with opened.read() as conn:
            return list(conn.execute(select(notices).where(notices.c.kind == kind)).all())
    finally:
        opened.close()


def test_a_private_address_not_allowed_is_never_contacted_no_redirect_is_followed_and_answers_are_capped(
        node: Served, receivers: Callable[..., Receiver]) -> None:
    forbidden = receivers("127.0.0.1")
    redirecting, target, chatty = receivers(), receivers(), receivers()
    redirecting.answer = Answer(302, b"", {"Location": target.url})
    chatty.answer = Answer(200, b"x" * (4 * budgets.WEBHOOK_RESPONSE_MAX_BYTES))
    app = application(node, "research-pipeline")
    ids = {name: app.ok("POST", "/api/webhooks/endpoints", json={"url": r.url, "event_types": ["mail.handed_over"]})
           ["endpoint"]["id"] for name, r in (("forbidden", forbidden), ("redirecting", redirecting),
                                             ("chatty", chatty))}
    send_deferrable(app, node, "guarded")

    refused = wait_for("the refused attempt", lambda: next(
        (d for d in app.deliveries(ids["forbidden"]) if d["attempt_log"]), None))
    attempt = refused["attempt_log"][0]
    assert attempt["address"] is None and attempt["status_code"] is None
    assert "refused" in attempt["error"] and "127.0.0.1 is a loopback address" in attempt["error"]
    assert forbidden.seen == []

    moved = wait_for("the redirect attempt", lambda: next(
        (d for d in app.deliveries(ids["redirecting"]) if d["attempt_log"]), None))
    assert moved["attempt_log"][0]["status_code"] == 302 and moved["state"] == "pending"
    assert "redirects are not followed" in moved["attempt_log"][0]["error"]
    assert len(redirecting.seen) >= 1 and target.seen == []

    capped = wait_for("the capped answer", lambda: _delivery(app, ids["chatty"], "mail.handed_over", "delivered"))
    assert capped["attempt_log"][0]["response_bytes"] == budgets.WEBHOOK_RESPONSE_MAX_BYTES
    assert len(capped["attempt_log"][0]["response_excerpt"]) == budgets.WEBHOOK_RESPONSE_KEPT_CHARS
    assert forbidden.seen == []
