"""The local Resend server itself follows spec/resend.md §13, so transport tests against it mean something."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.support.resend_emulator import EmulatorConfig, ResendEmulator

KEY = {"Authorization": "Bearer re_test_full", "User-Agent": "test"}
EMAIL = {"from": "Ops <ops@acme.test>", "to": ["ann@example.test"], "subject": "Hi", "text": "Hello"}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, 23, 59, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def emulator_api(resend_server: Callable[..., ResendEmulator]) -> AsyncIterator[Callable[..., object]]:
    clients: list[httpx.AsyncClient] = []

    def make(config: EmulatorConfig | None = None, clock: Clock | None = None):  # type: ignore[no-untyped-def]
        emulator = resend_server(config, clock)
        client = httpx.AsyncClient(base_url=emulator.base_url, headers=KEY)
        clients.append(client)
        return emulator, client

    yield make
    for client in clients:
        await client.aclose()


def body(**overrides: object) -> bytes:
    return json.dumps({**EMAIL, **overrides}).encode()


@pytest.mark.parametrize(
    ("overrides", "status", "name", "needle"),
    [
        ({"to": None}, 422, "missing_required_field", "Missing `to` field."),
        ({"subject": ""}, 422, "missing_required_field", "Missing `subject` field."),
        ({"text": None, "_drop_text": True}, 422, "missing_required_field", "Missing `html` or `text` field."),
        ({"template": {"id": "t"}}, 422, "validation_error", "template"),
        ({"from": "nobody"}, 422, "validation_error", "Invalid `from` field."),
        ({"to": "a@example.test, b@example.test"}, 422, "validation_error", "`to`"),
        ({"to": ["ok@example.test", "broken"]}, 422, "validation_error", "`to`"),
        ({"to": [f"r{i}@example.test" for i in range(51)]}, 422, "validation_error", "`to`"),
        ({"headers": {"X-Count": 5}}, 422, "validation_error", "headers"),
        ({"attachments": [{"filename": "a.txt"}]}, 422, "invalid_attachment", "content"),
        ({"tags": [{"name": "bad tag", "value": "x"}]}, 422, "validation_error", "tags"),
    ],
)
async def test_validation_errors_by_name(emulator_api, overrides: dict, status: int, name: str, needle: str) -> None:
    emulator, client = emulator_api()
    payload = {**EMAIL, **{k: v for k, v in overrides.items() if not k.startswith("_")}}
    payload = {k: v for k, v in payload.items() if v is not None}
    response = await client.post("/emails", json=payload)
    assert (response.status_code, response.json()["name"]) == (status, name)
    assert list(response.json()) == ["statusCode", "message", "name"]
    assert response.json()["statusCode"] == status and needle in response.json()["message"]
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert emulator.emails == {}


async def test_idempotency_replay_conflict_and_window(emulator_api) -> None:
    clock = Clock()
    emulator, client = emulator_api(clock=clock)
    first = await client.post("/emails", content=body(), headers={"Idempotency-Key": "k/1"})
    replay = await client.post("/emails", content=body(), headers={"Idempotency-Key": "k/1"})
    assert replay.content == first.content and len(emulator.emails) == 1
    changed = await client.post("/emails", content=body(subject="Other"), headers={"Idempotency-Key": "k/1"})
    assert (changed.status_code, changed.json()["name"]) == (409, "invalid_idempotent_request")
    clock.now += timedelta(hours=24)
    later = await client.post("/emails", content=body(), headers={"Idempotency-Key": "k/1"})
    assert later.json()["id"] != first.json()["id"] and len(emulator.emails) == 2
    for bad in ("", "x" * 257):
        refused = await client.post("/emails", content=body(), headers={"Idempotency-Key": bad})
        assert (refused.status_code, refused.json()["name"]) == (400, "invalid_idempotency_key")


async def test_errors_release_the_key_unless_told_to_store_them(emulator_api) -> None:
    emulator, client = emulator_api(EmulatorConfig(daily_limit=0))
    refused = await client.post("/emails", content=body(), headers={"Idempotency-Key": "k/2"})
    assert refused.json()["name"] == "daily_quota_exceeded"
    emulator.config.daily_limit = 5
    accepted = await client.post("/emails", content=body(), headers={"Idempotency-Key": "k/2"})
    assert accepted.status_code == 200


async def test_daily_quota_resets_at_utc_midnight_and_headers_count_the_request(emulator_api) -> None:
    clock = Clock()
    _emulator, client = emulator_api(EmulatorConfig(daily_limit=2), clock)
    a = await client.post("/emails", content=body())
    b = await client.post("/emails", content=body(cc=["c@example.test"]))
    assert a.headers["x-resend-daily-quota"] == "1" and b.status_code == 429
    assert b.json()["name"] == "daily_quota_exceeded"
    clock.now += timedelta(minutes=2)
    c = await client.post("/emails", content=body())
    assert c.status_code == 200 and c.headers["x-resend-daily-quota"] == "1"
    assert c.headers["x-resend-monthly-quota"] == "1"


async def test_keys_and_permissions(emulator_api) -> None:
    _emulator, client = emulator_api(EmulatorConfig(api_keys={"re_full": "full_access", "re_send": "sending_access"}))
    missing = await client.post("/emails", content=body(), headers={"Authorization": "Basic x"})
    unknown = await client.post("/emails", content=body(), headers={"Authorization": "Bearer re_nope"})
    unknown_get = await client.get("/emails", headers={"Authorization": "Bearer re_nope"})
    sent = await client.post("/emails", content=body(), headers={"Authorization": "Bearer re_send"})
    restricted = await client.get(f"/emails/{sent.json()['id']}", headers={"Authorization": "Bearer re_send"})
    full = await client.get(f"/emails/{sent.json()['id']}", headers={"Authorization": "Bearer re_full"})
    assert (missing.status_code, missing.json()["name"]) == (400, "validation_error")
    assert (unknown.status_code, unknown.json()["name"]) == (401, "validation_error")
    assert (unknown_get.status_code, unknown_get.json()["name"]) == (400, "validation_error")
    assert (restricted.status_code, restricted.json()["name"]) == (401, "restricted_api_key")
    email = full.json()
    assert email["object"] == "email" and email["to"] == ["ann@example.test"] and email["last_event"] == "sent"
    assert email["message_id"].startswith("<") and email["created_at"].endswith("+00")


async def test_custom_message_id_is_replaced_by_default(emulator_api) -> None:
    emulator, client = emulator_api()
    response = await client.post("/emails", content=body(headers={"Message-ID": "<mine@acme.test>"}))
    assert emulator.emails[response.json()["id"]]["message_id"] != "<mine@acme.test>"


async def test_batch_strict_and_permissive(emulator_api) -> None:
    emulator, client = emulator_api()
    items = [EMAIL, {**EMAIL, "from": "nobody"}]
    strict = await client.post("/emails/batch", json=items)
    assert strict.status_code == 422 and emulator.emails == {}
    permissive = await client.post("/emails/batch", json=items, headers={"x-batch-validation": "permissive"})
    assert permissive.status_code == 200
    assert len(permissive.json()["data"]) == 1 and permissive.json()["errors"][0]["index"] == 1
    assert (await client.post("/emails/batch", json=[])).status_code == 422


async def test_patch_reschedules_and_cancel_cancels(emulator_api) -> None:
    emulator, client = emulator_api()
    email_id = (await client.post("/emails", content=body())).json()["id"]
    patched = await client.patch(f"/emails/{email_id}", json={"scheduled_at": "2026-12-01T10:00:00Z"})
    assert patched.status_code == 200 and emulator.emails[email_id]["last_event"] == "scheduled"
    await client.post(f"/emails/{email_id}/cancel")
    assert (await client.get(f"/emails/{email_id}")).json()["last_event"] == "canceled"
    assert (await client.get("/emails/0000")).json()["name"] == "not_found"


async def test_emulator_webhooks_verify_with_mailnode(emulator_api) -> None:
    from mailnode.outbound.webhooks import EventKind, verify_resend_webhook

    secret = "whsec_" + "bWFpbG5vZGUtZW11bGF0b3Itc2VjcmV0LTAxMjM0NTY3"
    emulator, client = emulator_api()
    email_id = (await client.post("/emails", content=body(headers={"In-Reply-To": "<p@x.test>"}))).json()["id"]
    raw, headers = emulator.webhook(email_id, "email.bounced", secret, extra={
        "bounce": {"type": "Transient", "subType": "MailboxFull", "message": "full"}})
    event = verify_resend_webhook(raw, headers, secret)
    assert (event.kind, event.bounce_kind, event.provider_email_id) == (EventKind.BOUNCED, "soft", email_id)
    assert event.message_id == emulator.emails[email_id]["message_id"]
    assert emulator.emails[email_id]["last_event"] == "bounced"
    legacy, legacy_headers = emulator.webhook(email_id, "email.delivered", secret, legacy=True)
    assert verify_resend_webhook(legacy, legacy_headers, secret).message_id is None
