"""``POST /api/webhooks/resend`` with every corpus payload, signed in the test: each maps to its indexed
event and is attributed to the recipient it names; forged, stale and re-serialised bodies get 401 and
change nothing; a repeated event id changes nothing; an event for no send of ours is kept unattributed."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update
from svix.webhooks import Webhook

from mailnode.config import Settings
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.outbound import send_recipient_events, send_recipients
from tests.corpus import corpus

CORPUS = corpus() / "webhooks"
SECRET = "whsec_" + base64.b64encode(b"mailnode-outbound-db-test-secret").decode()
OTHER = "whsec_" + base64.b64encode(b"not-the-endpoint-secret-at-all!!").decode()
ENTRIES = [e for e in (json.loads(line) for line in (CORPUS / "index.jsonl").read_text().splitlines() if line.strip())
           if e["esp"] == "resend"]
#: What each normalised event does to the recipient's delivery_state.
DELIVERY_STATE = {"delivered": "accepted", "bounced": "bounced", "deferred": "deferred", "complained": None,
                  "sent": None, "clicked": None}


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    """The node's settings with the endpoint's signing secret."""
    return Settings(data_dir=tmp_path / "node", database_url=database_url, resend_webhook_secret=SECRET)


def signed(body: bytes, msg_id: str, secret: str = SECRET, at: datetime | None = None) -> dict[str, str]:
    when = at or datetime.now(UTC)
    return {"svix-id": msg_id, "svix-timestamp": str(int(when.timestamp())),
            "svix-signature": Webhook(secret).sign(msg_id, when, body.decode()), "content-type": "application/json"}


def events_count(node: Any) -> int:
    with node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(send_recipient_events)).scalar_one())


def handed_over_to(node: Any, installed: Any, address: str, email_id: str) -> str:
    """Seal a send to ``address`` and record it as the provider accepting it under ``email_id``."""
    sealed = seal(node, org_id=installed.org_id, author_id=installed.user_id, request=SealRequest(
        mailbox_id=installed.mailbox_id, to=[address], subject="Hello", body="Hi"))
    with node.begin() as conn:
        conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == sealed.id).values(
            submission_state="handed_over", transport_message_id=email_id))
    return sealed.id


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_each_corpus_payload_maps_and_is_attributed(api: Any, node: Any, installed: Any, entry: dict[str, Any]) -> None:
    body = (CORPUS / entry["file"]).read_bytes()
    payload = json.loads(body)
    recipient = payload["data"]["to"][0].rpartition("<")[2].rstrip(">")
    send_id = handed_over_to(node, installed, recipient, payload["data"]["email_id"])
    msg_id = entry["http_headers"]["svix-id"]

    for forged in (json.dumps(payload).encode(),):
        r = api.post("/api/webhooks/resend", content=forged, headers=signed(body, msg_id))
        assert (r.status_code, r.json()["error"]) == (401, "E_WEBHOOK_SIGNATURE_INVALID")
    r = api.post("/api/webhooks/resend", content=body,
                 headers=signed(body, msg_id, at=datetime.now(UTC) - timedelta(minutes=10)))
    assert r.status_code == 401
    r = api.post("/api/webhooks/resend", content=body, headers=signed(body, msg_id, secret=OTHER))
    assert r.status_code == 401
    assert events_count(node) == 0

    r = api.post("/api/webhooks/resend", content=body, headers=signed(body, msg_id))
    assert r.status_code == 200, r.text
    event = r.json()["event"]
    assert event["kind"] == entry["expected_event"] and event["recorded"] and event["attributed"]
    got = api.get(f"/api/sends/{send_id}", headers={"Authorization": f"Bearer {installed.token}"}).json()["send"]
    assert [e["event_type"] for e in got["events"]] == [entry["expected_event"]]
    assert got["recipients"][0]["delivery_state"] == DELIVERY_STATE[entry["expected_event"]]

    again = api.post("/api/webhooks/resend", content=body, headers=signed(body, msg_id)).json()["event"]
    assert again["duplicate"] is True and events_count(node) == 1


def test_an_event_for_no_send_of_ours_is_kept_unattributed(api: Any, node: Any, installed: Any) -> None:
    body = (CORPUS / "resend" / "delivered_event.json").read_bytes()
    r = api.post("/api/webhooks/resend", content=body, headers=signed(body, "msg_unattributed_1"))
    assert r.status_code == 200 and r.json()["event"]["attributed"] is False
    with node.read() as conn:
        row = conn.execute(select(send_recipient_events)).one()
    assert row.manifest_id is None and row.event_type == "delivery_report"
