"""The pure decisions of webhooks to applications, as tables: the forgery verdict, the back-off, the event
vocabulary (total over the states it reads), who sees an event, the tag filter, and the refusals of input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailnode import budgets
from mailnode.app_events import rules
from mailnode.errors import MailnodeError
from mailnode.vocabulary.send_states import SendState


@pytest.mark.parametrize(("address", "refused"), [
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"),
    ("127.0.0.1", "loopback"),
    ("::1", "loopback"),
    ("fe80::1", "link-local"),
    ("fc00::1", "private"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("ff02::1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("100.64.0.1", "not globally reachable"),
    ("not-an-address", "not an IP address"),
    ("93.184.215.14", None),
    ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", None),
    ("172.32.0.1", None),
])
def test_the_forgery_verdict_of_each_address(address: str, refused: str | None) -> None:
    verdict = rules.ssrf_verdict("hooks.example.com", [address], allow_hosts=[])
    if refused is None:
        assert verdict == rules.Verdict(address, None)
    else:
        assert verdict.address is None and verdict.refusal is not None and refused in verdict.refusal


@pytest.mark.parametrize(("host", "addresses", "allow", "address"), [
    # An allowed host is reached at its first address, private or not; the comparison ignores case.
    ("Hooks.Internal", ["10.0.0.5"], ["hooks.internal"], "10.0.0.5"),
    ("127.0.0.2", ["127.0.0.2"], ["127.0.0.2"], "127.0.0.2"),
    # Another host, or an allowed host's address named directly, is not allowed.
    ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"], None),
    ("evil.example", ["10.0.0.5"], ["hooks.internal"], None),
    # One private address among public ones refuses the name: either could be used.
    ("split.example", ["93.184.215.14", "10.0.0.1"], [], None),
    ("nowhere.example", [], [], None),
])
def test_the_allow_list_and_names_with_several_addresses(host: str, addresses: list[str], allow: list[str],
                                                         address: str | None) -> None:
    assert rules.ssrf_verdict(host, addresses, allow).address == address


@pytest.mark.parametrize(("attempts", "delay"), [
    (0, None), (1, 5), (2, 300), (3, 1800), (4, 7200), (5, 18000), (6, 36000), (7, 36000), (8, None)])
def test_the_back_off_over_a_day_then_nothing(attempts: int, delay: int | None) -> None:
    assert rules.retry_delay(attempts, budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS) == delay


def test_the_default_schedule_spans_about_a_day() -> None:
    total = sum(budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS)
    assert 20 * 3600 <= total <= 30 * 3600
    assert list(budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS) == sorted(budgets.WEBHOOK_RETRY_SCHEDULE_SECONDS)


@pytest.mark.parametrize(("status", "ok"), [
    (200, True), (204, True), (299, True), (None, False), (301, False), (302, False), (404, False), (503, False)])
def test_only_a_2xx_delivers(status: int | None, ok: bool) -> None:
    assert rules.answered_ok(status) is ok


@pytest.mark.parametrize("state", list(SendState))
def test_the_submission_map_is_total(state: SendState) -> None:
    assert state in rules.EVENT_OF_SUBMISSION


def test_unknown_stored_values_give_no_event() -> None:
    assert rules.event_of_submission("sent") is None
    assert rules.event_of_recorded("delivery_report") is None
    assert rules.event_of_submission("handed_over") is rules.EventType.HANDED_OVER
    assert rules.event_of_recorded("rejected") is rules.EventType.FAILED


@pytest.mark.parametrize(("owner", "author", "sees"), [
    ("app_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A", "app_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A", True),
    ("app_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A", "app_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B", False),
    ("usr_01JDKZ8Q4M6V8R2T0W3X5Y7Z9C", "app_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B", True),
    ("usr_01JDKZ8Q4M6V8R2T0W3X5Y7Z9C", "usr_01JDKZ8Q4M6V8R2T0W3X5Y7Z9E", True),
    ("btl_01JDKZ8Q4M6V8R2T0W3X5Y7Z9D", "btl_01JDKZ8Q4M6V8R2T0W3X5Y7Z9D", False),
])
def test_who_sees_an_event(owner: str, author: str, sees: bool) -> None:
    assert rules.endpoint_sees(owner, author) is sees


@pytest.mark.parametrize(("tag_filter", "tags", "passes"), [
    (None, None, True), (None, ["a"], True), (["welcome"], ["welcome", "x"], True), (["welcome"], ["x"], False),
    (["welcome"], [], False), (["welcome"], None, False)])
def test_the_tag_filter(tag_filter: list[str] | None, tags: list[str] | None, passes: bool) -> None:
    assert rules.tags_match(tag_filter, tags) is passes


@pytest.mark.parametrize("url", ["ftp://hooks.example/x", "https:///x", "https://u:p@hooks.example/x",
                                 "https://hooks.example:0/x", "https://hooks.example:99999/x", "hooks.example/x",
                                 "https://hooks.example/" + "x" * budgets.WEBHOOK_URL_MAX_CHARS])
def test_urls_refused(url: str) -> None:
    with pytest.raises(MailnodeError) as caught:
        rules.parse_url(url)
    assert caught.value.code == "E_WEBHOOK_URL_MALFORMED"


def test_event_types_and_tag_filters_refused() -> None:
    with pytest.raises(MailnodeError) as caught:
        rules.parse_event_types(["mail.sent"])
    assert caught.value.code == "E_WEBHOOK_EVENT_TYPE_UNKNOWN" and caught.value.detail["unknown"] == ["mail.sent"]
    with pytest.raises(MailnodeError):
        rules.parse_event_types([])
    for bad in ([], [""], ["t"] * 0 + [f"t{i}" for i in range(budgets.WEBHOOK_TAG_FILTER_MAX + 1)]):
        with pytest.raises(MailnodeError) as caught:
            rules.parse_tag_filter(bad)
        assert caught.value.code == "E_WEBHOOK_TAG_FILTER_MALFORMED"
    assert rules.parse_event_types(["mail.bounced", "mail.handed_over", "mail.bounced"]) == [
        "mail.handed_over", "mail.bounced"]


def test_secrets_and_payloads() -> None:
    from standardwebhooks.webhooks import Webhook

    secret = rules.new_secret()
    assert secret.startswith("whsec_") and secret != rules.new_secret()
    Webhook(secret)  # the library accepts it
    at = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
    assert rules.payload(rules.EventType.BOUNCED, at, {"mail_id": "snd_x"}) == {
        "type": "mail.bounced", "created_at": "2026-03-20T09:00:00Z", "data": {"mail_id": "snd_x"}}
