"""Resend webhooks: every corpus payload verifies and maps; re-serialised, stale or forged ones are refused."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from svix.webhooks import Webhook

from mailnode.errors import MailnodeError
from mailnode.outbound.webhooks import (
    DELIVERY_STATE_FOR,
    RESEND_EVENT_KINDS,
    RESEND_IGNORED_TYPES,
    EventKind,
    bounce_kind_of,
    normalise_event_type,
    parse_event,
    verify_resend_webhook,
)
from tests.corpus import corpus

CORPUS = corpus() / "webhooks"
SECRET = "whsec_" + base64.b64encode(b"mailnode-test-secret-0123456789ab").decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"someone-else-secret-0123456789ab").decode()


def resend_entries() -> list[dict[str, Any]]:
    lines = (CORPUS / "index.jsonl").read_text(encoding="utf-8").splitlines()
    return [e for e in (json.loads(line) for line in lines if line.strip()) if e["esp"] == "resend"]


def signed_headers(body: bytes, msg_id: str, *, secret: str = SECRET, at: datetime | None = None) -> dict[str, str]:
    when = at or datetime.now(UTC)
    signature = Webhook(secret).sign(msg_id, when, body.decode("utf-8"))
    return {"svix-id": msg_id, "svix-timestamp": str(int(when.timestamp())), "svix-signature": signature}


ENTRIES = resend_entries()


def test_the_corpus_has_the_six_resend_payloads() -> None:
    assert len(ENTRIES) == 6


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_corpus_payload_verifies_and_maps_to_its_indexed_event(entry: dict[str, Any]) -> None:
    body = (CORPUS / entry["file"]).read_bytes()
    msg_id = entry["http_headers"]["svix-id"]
    event = verify_resend_webhook(body, signed_headers(body, msg_id), SECRET)
    assert event.kind is not None and event.kind.value == entry["expected_event"]
    assert event.event_id == msg_id
    payload = json.loads(body)
    assert event.provider_type == payload["type"]
    assert event.provider_email_id == payload["data"]["email_id"]
    assert event.occurred_at is not None and event.occurred_at.tzinfo is not None
    if entry["recipient_asserted"]:
        assert entry["recipient"] in event.recipients
    assert all("<" not in r for r in event.recipients)
    if event.kind is EventKind.BOUNCED:
        assert event.bounce_kind == "hard"
        assert event.reason is not None and "suppressed" in event.reason


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_reserialised_payload_is_refused(entry: dict[str, Any]) -> None:
    body = (CORPUS / entry["file"]).read_bytes()
    headers = signed_headers(body, entry["http_headers"]["svix-id"])
    reserialised = json.dumps(json.loads(body)).encode()
    assert reserialised != body
    with pytest.raises(MailnodeError) as caught:
        verify_resend_webhook(reserialised, headers, SECRET)
    assert (caught.value.code, caught.value.status) == ("E_WEBHOOK_SIGNATURE_INVALID", 401)


def _refused(body: bytes, headers: dict[str, str]) -> MailnodeError:
    with pytest.raises(MailnodeError) as caught:
        verify_resend_webhook(body, headers, SECRET)
    return caught.value


BODY = (CORPUS / "resend" / "delivered_event.json").read_bytes()


@pytest.mark.parametrize(
    "make_headers",
    [
        pytest.param(lambda: signed_headers(BODY, "msg_1", at=datetime.now(UTC) - timedelta(minutes=6)), id="stale"),
        pytest.param(lambda: signed_headers(BODY, "msg_1", at=datetime.now(UTC) + timedelta(minutes=6)), id="future"),
        pytest.param(lambda: signed_headers(BODY, "msg_1", secret=OTHER_SECRET), id="wrong-secret"),
        pytest.param(lambda: {**signed_headers(BODY, "msg_1"), "svix-id": "msg_2"}, id="other-id"),
        pytest.param(lambda: {**signed_headers(BODY, "msg_1"), "svix-signature": "garbage"}, id="garbage"),
        pytest.param(lambda: {**signed_headers(BODY, "msg_1"), "svix-signature": "v1,abc"}, id="bad-base64"),
        pytest.param(lambda: {**signed_headers(BODY, "msg_1"), "svix-signature": "v1,a,b"}, id="two-commas"),
        pytest.param(lambda: {**signed_headers(BODY, "msg_1"), "svix-timestamp": "soon"}, id="bad-timestamp"),
        pytest.param(lambda: {k: v for k, v in signed_headers(BODY, "msg_1").items() if k != "svix-signature"},
                     id="missing-signature"),
        pytest.param(dict, id="no-headers"),
    ],
)
def test_forged_or_stale_webhooks_are_refused(make_headers: Any) -> None:
    err = _refused(BODY, make_headers())
    assert (err.code, err.status) == ("E_WEBHOOK_SIGNATURE_INVALID", 401)


def test_any_matching_v1_signature_passes_and_header_case_does_not_matter() -> None:
    headers = signed_headers(BODY, "msg_1")
    wrong = signed_headers(BODY, "msg_1", secret=OTHER_SECRET)["svix-signature"]
    rotated = {"Svix-Id": "msg_1", "Svix-Timestamp": headers["svix-timestamp"],
               "Svix-Signature": f"{wrong} {headers['svix-signature']}"}
    assert verify_resend_webhook(BODY, rotated, SECRET).kind is EventKind.DELIVERED


def test_non_utf8_body_is_refused() -> None:
    body = b"\xff\xfe{}"
    headers = signed_headers(b"{}", "msg_1")
    assert _refused(body, headers).code == "E_WEBHOOK_SIGNATURE_INVALID"


def test_signed_body_that_is_not_an_event_is_refused() -> None:
    body = b"[1, 2, 3]"
    assert _refused(body, signed_headers(body, "msg_1")).code == "E_WEBHOOK_SIGNATURE_INVALID"


def test_missing_secret_is_an_endpoint_not_configured() -> None:
    with pytest.raises(MailnodeError) as caught:
        verify_resend_webhook(BODY, signed_headers(BODY, "msg_1"), "")
    assert (caught.value.code, caught.value.status) == ("E_WEBHOOK_NOT_CONFIGURED", 404)


def test_delivery_state_map_is_total_over_the_event_kinds() -> None:
    assert set(DELIVERY_STATE_FOR) == set(EventKind)
    assert set(DELIVERY_STATE_FOR.values()) == {"accepted", "bounced", "deferred", "failed", "rejected", None}
    assert DELIVERY_STATE_FOR[EventKind.COMPLAINED] is None


@pytest.mark.parametrize(
    ("provider_type", "kind"),
    [
        ("email.sent", "sent"),
        ("email.delivered", "delivered"),
        ("email.delivery_delayed", "deferred"),
        ("email.bounced", "bounced"),
        ("email.complained", "complained"),
        ("email.failed", "failed"),
        ("email.suppressed", "rejected"),
        ("email.opened", "opened"),
        ("email.clicked", "clicked"),
        ("email.scheduled", "scheduled"),
        ("email.received", None),
        ("domain.updated", None),
        ("contact.created", None),
        ("inbox.message.created", None),
    ],
)
def test_event_type_map(provider_type: str, kind: str | None) -> None:
    result = normalise_event_type(provider_type)
    assert (result.value if result else None) == kind


def test_every_known_type_is_either_mapped_or_ignored_never_both() -> None:
    assert not set(RESEND_EVENT_KINDS) & RESEND_IGNORED_TYPES


@pytest.mark.parametrize("provider_type", ["email.teleported", "EMAIL.DELIVERED", "", "delivered"])
def test_unknown_event_types_fail_closed(provider_type: str) -> None:
    with pytest.raises(MailnodeError) as caught:
        normalise_event_type(provider_type)
    assert (caught.value.code, caught.value.status) == ("E_WEBHOOK_EVENT_UNKNOWN", 422)


def test_verified_event_of_unknown_type_fails_closed() -> None:
    body = b'{"type":"email.teleported","created_at":"2026-11-30T10:00:00.000Z","data":{}}'
    with pytest.raises(MailnodeError) as caught:
        verify_resend_webhook(body, signed_headers(body, "msg_9"), SECRET)
    assert caught.value.code == "E_WEBHOOK_EVENT_UNKNOWN"


@pytest.mark.parametrize(
    ("bounce", "kind"),
    [
        ({"type": "Permanent", "subType": "General"}, "hard"),
        ({"type": "Transient", "subType": "MailboxFull"}, "soft"),
        ({"type": "Temporary"}, "soft"),
        ({"type": "Undetermined"}, "soft"),
        ({"type": "Sideways"}, "soft"),
        ({"message": "rejected"}, "hard"),
        (None, "hard"),
    ],
)
def test_bounce_kind(bounce: dict | None, kind: str) -> None:
    data = {} if bounce is None else {"bounce": bounce}
    assert bounce_kind_of(EventKind.BOUNCED, data) == kind
    assert bounce_kind_of(EventKind.DELIVERED, data) is None


def test_current_payload_shape_with_message_id_and_diagnostics() -> None:
    payload = {
        "type": "email.bounced",
        "created_at": "2026-11-30T10:00:02.120Z",
        "data": {
            "email_id": "6f9a0000-0000-4000-8000-000000000000",
            "created_at": "2026-11-30T10:00:00.500Z",
            "message_id": "<6f9a@mail.example>",
            "from": "Ops <ops@acme.test>",
            "to": ["bounced@resend.dev"],
            "subject": "Hi",
            "bounce": {"type": "Permanent", "subType": "General", "message": "Rejected permanently.",
                       "diagnosticCode": ["smtp; 550 5.1.1 unknown user"]},
        },
    }
    event = parse_event("msg_x", payload)
    assert (event.kind, event.bounce_kind, event.message_id) == (EventKind.BOUNCED, "hard", "<6f9a@mail.example>")
    assert event.recipients == ("bounced@resend.dev",)
    assert event.occurred_at == datetime(2026, 11, 30, 10, 0, 2, 120000, tzinfo=UTC)
    assert event.reason == "Rejected permanently."
