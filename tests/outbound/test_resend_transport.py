"""The resend transport against the local Resend server: errors by name, idempotency, timeouts, quotas."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mailnode.transports.base import SubmitState
from mailnode.transports.resend import (
    ResendTransport,
    classify_resend,
    parse_retry_after,
    request_body,
)
from tests.support.resend_emulator import EmulatorConfig, Fault

from .conftest import free_port, make_message, make_submission

RID = "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B"
FROZEN = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def sub(recipient: str = "ann@example.test", rid: str = RID, **overrides):  # type: ignore[no-untyped-def]
    return make_submission(make_message(), recipient, rid, **overrides)


@pytest.mark.parametrize(
    ("status", "name", "state", "pause"),
    [
        (200, None, "handed_over", None),
        (429, "rate_limit_exceeded", "throttled", None),
        (429, "daily_quota_exceeded", "throttled", "daily_quota"),
        (429, "monthly_quota_exceeded", "throttled", "monthly_quota"),
        (429, None, "throttled", None),
        (422, "validation_error", "refused", None),
        (422, "missing_required_field", "refused", None),
        (422, "invalid_from_address", "refused", None),
        (400, "validation_error", "refused", None),
        (400, "invalid_idempotency_key", "refused", None),
        (403, "validation_error", "refused", None),
        (451, "security_error", "refused", None),
        (401, "missing_api_key", "throttled", "systemic"),
        (401, "restricted_api_key", "throttled", "systemic"),
        (401, "validation_error", "throttled", "systemic"),
        (403, "invalid_api_key", "throttled", "systemic"),
        (403, "restricted_api_key", "throttled", "systemic"),
        (403, "suspended_api_key", "throttled", "systemic"),
        (403, None, "throttled", "systemic"),
        (404, "not_found", "throttled", "systemic"),
        (405, "method_not_allowed", "throttled", "systemic"),
        (409, "concurrent_idempotent_requests", "outcome_unknown", None),
        (409, "invalid_idempotent_request", "outcome_unknown", None),
        (500, "application_error", "outcome_unknown", None),
        (500, "internal_server_error", "outcome_unknown", None),
        (503, "service_unavailable", "outcome_unknown", None),
        (502, None, "outcome_unknown", None),
        (418, "teapot", "refused", None),
        (302, None, "outcome_unknown", None),
    ],
)
def test_classification_uses_status_and_name_together(status: int, name: str | None, state: str,
                                                      pause: str | None) -> None:
    verdict = classify_resend(status, name)
    assert (verdict.state.value, verdict.pause_kind) == (state, pause)


def test_no_response_is_throttled_only_when_the_request_never_left() -> None:
    assert classify_resend(None, None, request_sent=False).state is SubmitState.THROTTLED
    assert classify_resend(None, None, request_sent=True).state is SubmitState.OUTCOME_UNKNOWN


@pytest.mark.parametrize(("value", "seconds"), [("2", 2.0), ("0.5", 0.5), (" 5 ", 5.0), ("-1", None),
                                                 ("soon", None), ("nan", None), (None, None)])
def test_retry_after_is_delta_seconds(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value) == seconds


def test_request_body_is_byte_identical_and_names_only_the_recipient() -> None:
    a, b = request_body(sub()), request_body(sub())
    assert a == b
    body = json.loads(a)
    assert body["to"] == ["ann@example.test"]
    assert "bcc" not in body and "cc" not in body
    assert body["from"] == "Acme Support <support@acme.test>"


async def test_accepted_send_reports_email_id_message_id_and_quota_headers(resend_server) -> None:
    emulator = resend_server()
    transport = ResendTransport(emulator.base_url, "re_test_full")
    outcome = await transport.submit(sub())
    await transport.aclose()
    assert outcome.state is SubmitState.HANDED_OVER
    stored = emulator.emails[outcome.transport_message_id]
    # Resend replaces our Message-ID; the one it reports is what replies and DSNs will quote.
    assert outcome.provider_message_id == stored["message_id"] != make_message().message_id
    assert dict(outcome.quota_headers)["x-resend-daily-quota"] == "1"
    assert dict(outcome.quota_headers)["x-resend-monthly-quota"] == "1"
    [request] = emulator.sends()
    assert request.headers["idempotency-key"] == f"{sub().manifest_id}/{RID}"
    assert request.headers["authorization"] == "Bearer re_test_full"


async def test_same_key_retry_returns_the_same_email_id_and_sends_nothing_new(resend_server) -> None:
    emulator = resend_server()
    transport = ResendTransport(emulator.base_url, "re_test_full")
    first = await transport.submit(sub())
    second = await transport.submit(sub())
    other = await transport.submit(sub("bob@example.test", "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9E"))
    await transport.aclose()
    assert first.transport_message_id == second.transport_message_id != other.transport_message_id
    assert len(emulator.emails) == 2


async def test_timeout_after_acceptance_is_outcome_unknown_and_the_retry_dedups(resend_server) -> None:
    emulator = resend_server()
    emulator.add_fault(Fault(delay_after_accept=1.5))
    transport = ResendTransport(emulator.base_url, "re_test_full", timeout=0.4)
    first = await transport.submit(sub())
    assert first.state is SubmitState.OUTCOME_UNKNOWN
    assert first.error_name == "timeout"
    assert first.transport_message_id is None
    # The provider did take it: this is exactly the case the idempotency key exists for.
    assert len(emulator.emails) == 1
    retry = await transport.submit(sub())
    await transport.aclose()
    assert retry.state is SubmitState.HANDED_OVER
    assert retry.transport_message_id == next(iter(emulator.emails))
    assert len(emulator.emails) == 1
    first_req, second_req = emulator.sends()
    assert first_req.body == second_req.body
    assert first_req.headers["idempotency-key"] == second_req.headers["idempotency-key"]


async def test_rate_limit_429_is_throttled_after_retry_after(resend_server) -> None:
    emulator = resend_server(EmulatorConfig(rate_limit_per_second=2), clock=lambda: FROZEN)
    # fetch_message_id off so each submit is exactly one request in the frozen second.
    transport = ResendTransport(emulator.base_url, "re_test_full", fetch_message_id=False)
    states = [await transport.submit(sub(f"r{i}@example.test", f"srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z{i}A")) for i in range(3)]
    await transport.aclose()
    assert [o.state for o in states] == [SubmitState.HANDED_OVER, SubmitState.HANDED_OVER, SubmitState.THROTTLED]
    limited = states[2]
    assert (limited.error_code, limited.error_name) == (429, "rate_limit_exceeded")
    assert limited.retry_after_seconds == 1.0
    assert limited.pause_kind is None and limited.quota_kind is None
    assert dict(limited.quota_headers)["ratelimit-remaining"] == "0"
    assert len(emulator.emails) == 2


async def test_daily_quota_429_is_throttled_with_its_kind(resend_server) -> None:
    emulator = resend_server(EmulatorConfig(daily_limit=1), clock=lambda: FROZEN)
    transport = ResendTransport(emulator.base_url, "re_test_full", fetch_message_id=False)
    await transport.submit(sub())
    over = await transport.submit(sub("bob@example.test", "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9E"))
    await transport.aclose()
    assert over.state is SubmitState.THROTTLED
    assert (over.error_name, over.pause_kind, over.quota_kind) == ("daily_quota_exceeded", "daily_quota", "daily")
    assert dict(over.quota_headers)["x-resend-daily-quota"] == "1"


async def test_monthly_quota_429_is_throttled_with_its_kind(resend_server) -> None:
    emulator = resend_server(EmulatorConfig(plan="paid", monthly_limit=1), clock=lambda: FROZEN)
    transport = ResendTransport(emulator.base_url, "re_test_full", fetch_message_id=False)
    first = await transport.submit(sub())
    over = await transport.submit(sub("bob@example.test", "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9E"))
    await transport.aclose()
    assert "x-resend-daily-quota" not in dict(first.quota_headers)
    assert (over.state, over.error_name, over.quota_kind) == (SubmitState.THROTTLED, "monthly_quota_exceeded",
                                                              "monthly")


async def test_validation_error_is_refused_for_that_send(resend_server) -> None:
    emulator = resend_server()
    transport = ResendTransport(emulator.base_url, "re_test_full")
    outcome = await transport.submit(sub(from_header="not an address"))
    await transport.aclose()
    assert (outcome.state, outcome.error_code, outcome.error_name) == (SubmitState.REFUSED, 422, "validation_error")
    assert "from" in outcome.detail
    assert emulator.emails == {}


async def test_unverified_domain_is_refused_not_systemic(resend_server) -> None:
    emulator = resend_server(EmulatorConfig(verified_domains={"other.test"}))
    transport = ResendTransport(emulator.base_url, "re_test_full")
    outcome = await transport.submit(sub())
    await transport.aclose()
    assert (outcome.state, outcome.error_code, outcome.pause_kind) == (SubmitState.REFUSED, 403, None)


@pytest.mark.parametrize(
    ("fault", "code", "name"),
    [
        (Fault(status=500, name="application_error"), 500, "application_error"),
        (Fault(status=503, name="service_unavailable"), 503, "service_unavailable"),
        (Fault(status=500, body=b""), 500, None),
        (Fault(status=502, body=b"<html>Bad gateway</html>"), 502, None),
    ],
)
async def test_5xx_is_outcome_unknown(resend_server, fault: Fault, code: int, name: str | None) -> None:
    emulator = resend_server()
    emulator.add_fault(fault)
    transport = ResendTransport(emulator.base_url, "re_test_full")
    outcome = await transport.submit(sub())
    await transport.aclose()
    assert (outcome.state, outcome.error_code, outcome.error_name) == (SubmitState.OUTCOME_UNKNOWN, code, name)


@pytest.mark.parametrize(
    ("config", "key", "code", "name"),
    [
        (EmulatorConfig(), "re_wrong", 401, "validation_error"),
        (EmulatorConfig(legacy_invalid_key=True), "re_wrong", 403, "invalid_api_key"),
    ],
)
async def test_bad_key_is_throttled_systemic(resend_server, config: EmulatorConfig, key: str, code: int,
                                             name: str) -> None:
    emulator = resend_server(config)
    transport = ResendTransport(emulator.base_url, key)
    outcome = await transport.submit(sub())
    await transport.aclose()
    assert (outcome.state, outcome.error_code, outcome.error_name, outcome.pause_kind) == (
        SubmitState.THROTTLED, code, name, "systemic")
    assert key not in outcome.detail


async def test_sending_only_key_is_handed_over_without_the_message_id(resend_server) -> None:
    emulator = resend_server(EmulatorConfig(api_keys={"re_send_only": "sending_access"}))
    transport = ResendTransport(emulator.base_url, "re_send_only")
    outcome = await transport.submit(sub())
    await transport.aclose()
    assert outcome.state is SubmitState.HANDED_OVER
    assert outcome.provider_message_id is None
    assert "restricted_api_key" in outcome.detail


async def test_odd_quota_header_values_are_captured_raw(resend_server) -> None:
    emulator = resend_server(EmulatorConfig(forced_daily_quota="lots", forced_monthly_quota=None))
    transport = ResendTransport(emulator.base_url, "re_test_full", fetch_message_id=False)
    outcome = await transport.submit(sub())
    await transport.aclose()
    headers = dict(outcome.quota_headers)
    assert headers["x-resend-daily-quota"] == "lots"
    assert "x-resend-monthly-quota" not in headers


async def test_connection_refused_is_throttled() -> None:
    transport = ResendTransport(f"http://127.0.0.1:{free_port()}", "re_test_full")
    outcome = await transport.submit(sub())
    await transport.aclose()
    assert (outcome.state, outcome.error_name) == (SubmitState.THROTTLED, "connect_failed")


async def test_emulator_answers_unknown_paths_and_methods_in_resend_shape(resend_server) -> None:
    import httpx

    emulator = resend_server()
    async with httpx.AsyncClient(base_url=emulator.base_url,
                                 headers={"Authorization": "Bearer re_test_full"}) as client:
        missing = await client.get("/domains-nope")
        wrong = await client.delete("/emails")
        bare = await client.post("/emails", json={}, headers={"Authorization": ""})
    assert missing.json() == {"statusCode": 404, "message": "The requested endpoint does not exist.",
                              "name": "not_found"}
    assert wrong.json()["name"] == "method_not_allowed"
    assert bare.status_code == 400
    assert all("ratelimit-limit" in r.headers for r in (missing, wrong, bare))


async def test_success_without_an_email_id_is_not_called_handed_over(resend_server) -> None:
    emulator = resend_server()
    emulator.add_fault(Fault(status=200, body=b'{"object":"email"}', content_type="application/json"))
    transport = ResendTransport(emulator.base_url, "re_test_full")
    outcome = await transport.submit(sub())
    await transport.aclose()
    assert (outcome.state, outcome.error_name) == (SubmitState.OUTCOME_UNKNOWN, "missing_id")


async def test_connection_dropped_after_acceptance_is_outcome_unknown_then_dedups(resend_server) -> None:
    emulator = resend_server()
    emulator.add_fault(Fault(drop_after_accept=True))
    transport = ResendTransport(emulator.base_url, "re_test_full")
    first = await transport.submit(sub())
    assert (first.state, first.error_name) == (SubmitState.OUTCOME_UNKNOWN, "disconnected")
    retry = await transport.submit(sub())
    await transport.aclose()
    assert retry.state is SubmitState.HANDED_OVER
    assert list(emulator.emails) == [retry.transport_message_id]


async def test_same_key_while_the_first_is_in_flight_is_outcome_unknown(resend_server) -> None:
    import asyncio

    emulator = resend_server()
    emulator.add_fault(Fault(hold_before_accept=0.8))
    transport = ResendTransport(emulator.base_url, "re_test_full", fetch_message_id=False)
    slow = asyncio.create_task(transport.submit(sub()))
    # The second request goes once the emulator's log shows the first held in flight, not after a guessed time.
    deadline = asyncio.get_running_loop().time() + 10
    while not any(r.held for r in emulator.sends()):
        assert asyncio.get_running_loop().time() < deadline, "the first request never reached the emulator"
        await asyncio.sleep(0.01)
    concurrent = await transport.submit(sub())
    first = await slow
    await transport.aclose()
    assert (concurrent.state, concurrent.error_code, concurrent.error_name) == (
        SubmitState.OUTCOME_UNKNOWN, 409, "concurrent_idempotent_requests")
    assert first.state is SubmitState.HANDED_OVER and len(emulator.emails) == 1


def test_request_body_carries_the_html_part_and_attachments() -> None:
    # Issue 15: Resend rebuilds the mail from fields, so a send's HTML part and attachments must be fields too.
    body = json.loads(request_body(sub(html="<p>Hi</p>", attachments=(("inv.pdf", "application/pdf", b"%PDF"),))))
    assert body["html"] == "<p>Hi</p>"
    assert body["attachments"] == [{"filename": "inv.pdf", "content_type": "application/pdf", "content": "JVBERg=="}]
    assert "html" not in json.loads(request_body(sub())) and "attachments" not in json.loads(request_body(sub()))


def test_request_body_carries_reply_to_custom_headers_and_html_alone() -> None:
    # Application mail (issue 20): Reply-To as Resend's reply_to, custom headers beside the threading ones,
    # and HTML-only mail without a text field (it has no text part; an empty one would add one).
    body = json.loads(request_body(sub(text="", html="<p>Hi</p>", reply_to=("Help <help@acme.test>",),
                                       headers=(("X-Order-Id", "42"),))))
    assert body["reply_to"] == ["Help <help@acme.test>"]
    assert body["headers"] == {"X-Order-Id": "42"}
    assert "text" not in body and body["html"] == "<p>Hi</p>"
    plain = json.loads(request_body(sub()))
    assert "reply_to" not in plain and "text" in plain
