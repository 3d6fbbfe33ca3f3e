"""Webhook endpoints through the API on a real database, and the event scan over recorded facts: who may
register and read, the refusals, and which endpoint gets which event (in process, the node's clock frozen)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from mailnode.app_events import deliver, scan
from mailnode.outbound import dispatch
from mailnode.schema.app_events import webhook_deliveries
from tests.api.conftest import Cast
from tests.app_events.served.conftest import Receiver
from tests.outbound.db.conftest import running_sink


def _endpoint(cast: Cast, who: dict[str, str], **body: Any) -> Any:
    return cast.api.post("/api/webhooks/endpoints", json={"url": "https://hooks.example.com/in", **body}, headers=who)


def test_who_may_register_and_read(cast: Cast) -> None:
    mine = _endpoint(cast, cast.app)
    assert mine.status_code == 201, mine.text
    eid = mine.json()["endpoint"]["id"]
    assert mine.json()["endpoint"]["owner_id"] == cast.app_id
    # A person who is not an administrator may not register one, nor see the application's.
    refused = _endpoint(cast, cast.person)
    assert refused.status_code == 403 and refused.json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    assert cast.api.get(f"/api/webhooks/endpoints/{eid}", headers=cast.person).status_code == 404
    # Another application sees nothing of it; the administrator sees and changes it.
    other = cast.api.post("/api/apps", json={"name": "crm"}, headers=cast.admin).json()["token"]
    hdr = {"Authorization": f"Bearer {other}"}
    assert cast.api.get(f"/api/webhooks/endpoints/{eid}", headers=hdr).json()["error"] == "E_NO_SUCH_WEBHOOK_ENDPOINT"
    assert cast.api.patch(f"/api/webhooks/endpoints/{eid}", json={"enabled": False}, headers=hdr).status_code == 404
    assert cast.api.delete(f"/api/webhooks/endpoints/{eid}", headers=hdr).status_code == 404
    changed = cast.api.patch(f"/api/webhooks/endpoints/{eid}", headers=cast.admin,
                             json={"enabled": False, "tag_filter": ["welcome"], "event_types": ["mail.bounced"]})
    assert changed.status_code == 200, changed.text
    got = changed.json()["endpoint"]
    assert got["enabled"] is False and got["tag_filter"] == ["welcome"] and got["event_types"] == ["mail.bounced"]
    cleared = cast.api.patch(f"/api/webhooks/endpoints/{eid}", json={"tag_filter": None}, headers=cast.app)
    assert cleared.json()["endpoint"]["tag_filter"] is None
    assert cast.api.delete(f"/api/webhooks/endpoints/{eid}", headers=cast.app).status_code == 204
    assert cast.api.get(f"/api/webhooks/endpoints/{eid}", headers=cast.admin).status_code == 404


def test_refusals_store_nothing(cast: Cast) -> None:
    for body, code in (({"url": "ftp://x/y"}, "E_WEBHOOK_URL_MALFORMED"),
                       ({"event_types": ["mail.sent"]}, "E_WEBHOOK_EVENT_TYPE_UNKNOWN"),
                       ({"tag_filter": []}, "E_WEBHOOK_TAG_FILTER_MALFORMED")):
        r = _endpoint(cast, cast.app, **body)
        assert r.status_code == 422 and r.json()["error"] == code, r.text
    assert cast.api.get("/api/webhooks/endpoints", headers=cast.admin).json()["endpoints"] == []
    assert cast.api.get("/api/webhooks/endpoints/whe_x", headers=cast.admin).json()["error"] == "E_ID_MALFORMED"
    assert cast.api.post("/api/webhooks/deliveries/whd_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A/resend",
                         headers=cast.admin).status_code == 404


def test_the_scan_gives_each_endpoint_the_events_it_asked_for(cast: Cast, node: Any) -> None:
    admin_ep = _endpoint(cast, cast.admin).json()["endpoint"]["id"]
    app_ep = _endpoint(cast, cast.app, event_types=["mail.handed_over"]).json()["endpoint"]["id"]
    tagged = _endpoint(cast, cast.app, tag_filter=["welcome"]).json()["endpoint"]["id"]
    bounces_only = _endpoint(cast, cast.app, event_types=["mail.bounced"]).json()["endpoint"]["id"]
    crm = cast.api.post("/api/apps", json={"name": "crm"}, headers=cast.admin).json()["token"]
    others = _endpoint(cast, {"Authorization": f"Bearer {crm}"}).json()["endpoint"]["id"]
    granted = cast.api.post("/api/access", headers=cast.admin, json={
        "subject_id": cast.app_id, "relation": "send.propose", "object_id": cast.installed.mailbox_id})
    assert granted.status_code == 201, granted.text
    sent = cast.api.post("/api/mail", headers=cast.app, json={
        "mailbox_id": cast.installed.mailbox_id, "class": "deferrable", "to": ["a@remote.test"], "subject": "Hi",
        "text": "Hello.", "idempotency_key": "k1"})
    assert sent.status_code == 202, sent.text
    # A person's correspondence gives no event to anyone.
    held = cast.api.patch(f"/api/mailboxes/{cast.installed.mailbox_id}", json={"hold_window_seconds": 0},
                          headers=cast.admin)
    assert held.status_code == 200, held.text
    own = cast.api.post("/api/sends", headers=cast.admin, json={
        "mailbox_id": cast.installed.mailbox_id, "to": ["b@remote.test"], "subject": "Hello", "body": "Hi."})
    assert own.status_code == 201, own.text
    with running_sink() as sink:
        dispatch.sweep(node, transport=sink.transport())
    own_id = own.json()["send"]["id"]
    assert cast.api.get(f"/api/sends/{own_id}", headers=cast.admin).json()["send"]["state"] == "handed_over"
    with node.begin() as conn:
        written = scan.scan_org(conn, cast.installed.org_id, node.clock.now())
    with node.read() as conn:
        rows = conn.execute(select(webhook_deliveries)).all()
    assert sorted((r.endpoint_id, r.event_type) for r in rows) == sorted(
        [(admin_ep, "mail.handed_over"), (app_ep, "mail.handed_over")])
    assert len(written) == 2 and len({r.event_id for r in rows}) == 2
    payload = next(r.payload for r in rows if r.endpoint_id == app_ep)
    assert payload["data"]["mail_id"] == sent.json()["mail"]["id"] and payload["data"]["tags"] == []
    assert {tagged, bounces_only, others}.isdisjoint({r.endpoint_id for r in rows})
    # A second scan over the same facts writes nothing.
    with node.begin() as conn:
        assert scan.scan_org(conn, cast.installed.org_id, node.clock.now()) == []


def test_an_attempt_connects_to_the_address_it_checked_without_a_second_lookup() -> None:
    receiver = Receiver("127.0.0.2")
    try:
        port = receiver.server.server_address[1]
        lookups: list[str] = []

        def resolver(host: str, p: int) -> list[str]:
            lookups.append(host)
            return ["127.0.0.2"]

        # ``hooks.invalid`` resolves nowhere (RFC 6761): only the checked address can have been reached.
        result = deliver.attempt(f"http://hooks.invalid:{port}/in?x=1", '{"a":1}', {"webhook-id": "evt_1"},
                                 ["hooks.invalid"], resolver)
        assert result.status_code == 200 and result.address == "127.0.0.2" and lookups == ["hooks.invalid"]
        seen = receiver.seen[0]
        assert seen.path == "/in?x=1" and seen.headers["host"] == f"hooks.invalid:{port}" and seen.body == b'{"a":1}'
        # Not allowed: refused before any connection.
        refused = deliver.attempt(f"http://hooks.invalid:{port}/in", "{}", {}, [], resolver)
        assert refused.address is None and "loopback" in (refused.error or "") and len(receiver.seen) == 1
    finally:
        receiver.close()


def test_a_tag_filter_passes_only_mail_carrying_one_of_its_tags_and_a_suppression_says_why(cast: Cast,
                                                                                             node: Any) -> None:
    """The sends' own tags and metadata (``POST /api/mail``) reach the events; an endpoint's tag filter keeps
    only mail carrying one of its tags; a recipient on the suppression list gives ``mail.suppressed`` with
    the list's reason."""
    tagged = _endpoint(cast, cast.app, tag_filter=["welcome"]).json()["endpoint"]["id"]
    everything = _endpoint(cast, cast.app).json()["endpoint"]["id"]
    granted = cast.api.post("/api/access", headers=cast.admin, json={
        "subject_id": cast.app_id, "relation": "send.propose", "object_id": cast.installed.mailbox_id})
    assert granted.status_code == 201, granted.text
    listed = cast.api.post("/api/suppressions", json={"address": "gone@remote.test"}, headers=cast.admin)
    assert listed.status_code == 201, listed.text
    base = {"mailbox_id": cast.installed.mailbox_id, "class": "deferrable", "subject": "Hi", "text": "Hello."}
    welcome = cast.api.post("/api/mail", headers=cast.app, json={
        **base, "to": ["a@remote.test"], "tags": ["welcome"], "metadata": {"user_id": "42"}, "idempotency_key": "w"})
    other = cast.api.post("/api/mail", headers=cast.app, json={
        **base, "to": ["gone@remote.test"], "tags": ["invoice"], "idempotency_key": "i"})
    assert welcome.status_code == 202 and other.status_code == 202, (welcome.text, other.text)
    with running_sink() as sink:
        dispatch.sweep(node, transport=sink.transport())
    with node.begin() as conn:
        scan.scan_org(conn, cast.installed.org_id, node.clock.now())
    with node.read() as conn:
        rows = conn.execute(select(webhook_deliveries)).all()
    got = sorted((r.endpoint_id == tagged, r.event_type, r.payload["data"]["recipient"]) for r in rows)
    assert got == [(False, "mail.handed_over", "a@remote.test"), (False, "mail.suppressed", "gone@remote.test"),
                   (True, "mail.handed_over", "a@remote.test")]
    first = next(r.payload["data"] for r in rows if r.endpoint_id == tagged)
    assert first["tags"] == ["welcome"] and first["metadata"] == {"user_id": "42"}
    suppressed = next(r.payload["data"] for r in rows if r.event_type == "mail.suppressed")
    assert suppressed["reason"] == "manual" and suppressed["tags"] == ["invoice"]
    assert {r.endpoint_id for r in rows} == {tagged, everything}
