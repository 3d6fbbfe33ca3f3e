"""The provider-availability breaker (spec/transactional.md §2) as tables: pause kinds, readings, ceilings."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.governance.provider import (
    PAUSE_KIND_BY_ERROR_NAME,
    TOKEN_PAUSED,
    TOKEN_READING_MALFORMED,
    TOKEN_READING_OUT_OF_RANGE,
    TOKEN_REALTIME_REFUSED_ON_RESERVE,
    TOKEN_REOPENED,
    BreakerState,
    PauseKind,
    ProviderLimits,
    ProviderStatus,
    Refusal,
    breaker_state,
    first_of_next_utc_month,
    may_send,
    next_utc_midnight,
    pause_kind_for,
    quota_alert,
    quota_percent,
    reading_today,
    record_outcome,
    reopens_at,
)
from mailnode.log_events import LogLevel
from mailnode.transports.base import SubmitOutcome, SubmitState
from mailnode.transports.resend import classify_resend
from mailnode.vocabulary.mail_classes import MailClass

NOW = datetime(2026, 3, 20, 14, 30, tzinfo=UTC)
FRESH = ProviderStatus(transport="resend")


def ok(daily: str | None = None) -> SubmitOutcome:
    headers = (("x-resend-daily-quota", daily),) if daily is not None else ()
    return SubmitOutcome(SubmitState.HANDED_OVER, transport_message_id="em_1", quota_headers=headers)


def refusal(
    status: int | None, name: str | None, state: SubmitState = SubmitState.THROTTLED, daily: str | None = None
) -> SubmitOutcome:
    headers = (("x-resend-daily-quota", daily),) if daily is not None else ()
    return SubmitOutcome(state, error_code=status, error_name=name, quota_headers=headers)


def tokens(logs) -> set[str]:  # type: ignore[no-untyped-def]
    return {event.token for event in logs}


# --- pause_kind_for ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "name", "kind"),
    [
        (429, "daily_quota_exceeded", PauseKind.DAILY_QUOTA),
        (429, "monthly_quota_exceeded", PauseKind.MONTHLY_QUOTA),
        # A revoked or invalid key, in each revision of Resend's errors page (spec/resend.md §3).
        (401, "validation_error", PauseKind.SYSTEMIC),
        (403, "invalid_api_key", PauseKind.SYSTEMIC),
        (401, "missing_api_key", PauseKind.SYSTEMIC),
        (401, "restricted_api_key", PauseKind.SYSTEMIC),
        (403, "restricted_api_key", PauseKind.SYSTEMIC),
        (403, "suspended_api_key", PauseKind.SYSTEMIC),
        (403, "invalid_permission", PauseKind.SYSTEMIC),
        (403, None, PauseKind.SYSTEMIC),
        (404, "not_found", PauseKind.SYSTEMIC),
        (405, "method_not_allowed", PauseKind.SYSTEMIC),
        # validation_error pauses nothing: an unverified domain and one malformed address look alike.
        (400, "validation_error", None),
        (403, "validation_error", None),
        (422, "validation_error", None),
        (429, "rate_limit_exceeded", None),
        (429, None, None),
        (409, "concurrent_idempotent_requests", None),
        (500, "application_error", None),
        (503, "service_unavailable", None),
        (None, "timeout", None),
        (None, None, None),
        (422, "missing_required_field", None),
    ],
)
def test_pause_kind_for(status: int | None, name: str | None, kind: PauseKind | None) -> None:
    assert pause_kind_for(name, status) is kind


def test_validation_error_is_not_in_the_name_table() -> None:
    assert "validation_error" not in PAUSE_KIND_BY_ERROR_NAME
    assert "rate_limit_exceeded" not in PAUSE_KIND_BY_ERROR_NAME


#: Every (status, name) pair spec/resend.md §5.2 documents, plus the bodiless replies of §5.1.
DOCUMENTED_REPLIES = [
    (400, "invalid_idempotency_key"),
    (400, "validation_error"),
    (401, "missing_api_key"),
    (401, "restricted_api_key"),
    (401, "validation_error"),
    (403, "invalid_api_key"),
    (403, "restricted_api_key"),
    (403, "suspended_api_key"),
    (403, "validation_error"),
    (403, "email_above_quota"),
    (403, "invalid_permission"),
    (422, "invalid_from_address"),
    (404, "not_found"),
    (405, "method_not_allowed"),
    (409, "concurrent_idempotent_requests"),
    (409, "invalid_idempotent_request"),
    (409, "resource_locked"),
    (422, "invalid_attachment"),
    (422, "invalid_parameter"),
    (422, "invalid_access"),
    (422, "invalid_region"),
    (422, "missing_required_field"),
    (422, "missing_required_parameter"),
    (422, "validation_error"),
    (429, "daily_quota_exceeded"),
    (429, "monthly_quota_exceeded"),
    (429, "rate_limit_exceeded"),
    (451, "security_error"),
    (500, "application_error"),
    (500, "internal_server_error"),
    (503, "service_unavailable"),
    (401, None),
    (403, None),
    (429, None),
    (500, None),
    (502, None),
]


@pytest.mark.parametrize(("status", "name"), DOCUMENTED_REPLIES)
def test_the_breaker_and_the_resend_transport_agree_on_every_pause(status: int, name: str | None) -> None:
    # The transport reports a pause kind on its outcome; the breaker derives its own from the same pair.
    # One table means the two never disagree on a reply Resend documents.
    assert pause_kind_for(name, status) == classify_resend(status, name).pause_kind


# --- reopening times ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "midnight"),
    [
        (datetime(2026, 3, 20, 14, 30, tzinfo=UTC), datetime(2026, 3, 21, tzinfo=UTC)),
        (datetime(2026, 3, 20, 23, 59, 59, tzinfo=UTC), datetime(2026, 3, 21, tzinfo=UTC)),
        (datetime(2026, 3, 20, 0, 0, tzinfo=UTC), datetime(2026, 3, 21, tzinfo=UTC)),
        (datetime(2026, 12, 31, 22, 0, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)),
        (datetime(2028, 2, 28, 12, 0, tzinfo=UTC), datetime(2028, 2, 29, tzinfo=UTC)),
        # 23:30 in New York on the 20th is 03:30 UTC on the 21st: the UTC day decides.
        (datetime(2026, 3, 21, 3, 30, tzinfo=UTC), datetime(2026, 3, 22, tzinfo=UTC)),
    ],
)
def test_next_utc_midnight(now: datetime, midnight: datetime) -> None:
    assert next_utc_midnight(now) == midnight


@pytest.mark.parametrize(
    ("now", "first"),
    [
        (datetime(2026, 3, 20, 14, 30, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)),
        (datetime(2026, 1, 31, 23, 59, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)),
        (datetime(2026, 12, 1, 0, 0, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)),
        (datetime(2026, 2, 1, 0, 0, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)),
    ],
)
def test_first_of_next_utc_month(now: datetime, first: datetime) -> None:
    assert first_of_next_utc_month(now) == first


@pytest.mark.parametrize("kind", list(PauseKind))
def test_every_pause_kind_has_a_reopening_time_after_now(kind: PauseKind) -> None:
    assert reopens_at(kind, NOW) > NOW


def test_reopening_times_per_kind() -> None:
    assert reopens_at(PauseKind.DAILY_QUOTA, NOW) == datetime(2026, 3, 21, tzinfo=UTC)
    assert reopens_at(PauseKind.MONTHLY_QUOTA, NOW) == datetime(2026, 4, 1, tzinfo=UTC)
    assert reopens_at(PauseKind.SYSTEMIC, NOW) == NOW + timedelta(
        seconds=budgets.PROVIDER_SYSTEMIC_PAUSE_SECONDS
    )
    assert budgets.PROVIDER_SYSTEMIC_PAUSE_SECONDS == 15 * 60


# --- the reserve ----------------------------------------------------------------------------------


def test_94_of_100_with_reserve_90_blocks_realtime_while_deferrable_still_sends() -> None:
    status = record_outcome(FRESH, ok("94"), NOW).status
    assert (status.daily_used, status.daily_observed_at) == (94, NOW)
    later = NOW + timedelta(minutes=5)
    realtime = may_send(status, MailClass.REALTIME, later)
    assert not realtime.allowed
    assert realtime.reason is Refusal.QUOTA_CEILING
    assert realtime.reopens_at == datetime(2026, 3, 21, tzinfo=UTC)
    # Refused on the reserve alone: alertable at error with a stable token.
    assert realtime.log_token == TOKEN_REALTIME_REFUSED_ON_RESERVE
    assert [(e.token, e.level) for e in realtime.logs] == [
        (TOKEN_REALTIME_REFUSED_ON_RESERVE, LogLevel.ERROR)
    ]
    assert may_send(status, MailClass.DEFERRABLE, later).allowed
    assert may_send(status, MailClass.CORRESPONDENCE, later).allowed


@pytest.mark.parametrize(
    ("reading", "realtime", "correspondence", "deferrable", "reserve_token"),
    [
        (0, True, True, True, False),
        (89, True, True, True, False),
        (90, False, True, True, True),
        (94, False, True, True, True),
        (95, False, False, True, True),
        (99, False, False, True, True),
        (100, False, False, False, False),
    ],
)
def test_ceilings_per_class(
    reading: int, realtime: bool, correspondence: bool, deferrable: bool, reserve_token: bool
) -> None:
    status = replace(FRESH, daily_used=reading, daily_observed_at=NOW)
    assert may_send(status, "realtime", NOW).allowed is realtime
    assert may_send(status, "correspondence", NOW).allowed is correspondence
    assert may_send(status, "deferrable", NOW).allowed is deferrable
    assert (may_send(status, "realtime", NOW).log_token == TOKEN_REALTIME_REFUSED_ON_RESERVE) is reserve_token


def test_a_reading_from_yesterday_says_nothing_about_today() -> None:
    status = replace(FRESH, daily_used=100, daily_observed_at=NOW - timedelta(days=1))
    assert reading_today(status, NOW).value is None
    assert may_send(status, MailClass.REALTIME, NOW).allowed
    assert quota_percent(status, NOW) is None


# --- pause kinds ----------------------------------------------------------------------------------


def test_daily_quota_exceeded_pauses_until_midnight_and_pins_the_reading() -> None:
    before = record_outcome(FRESH, ok("61"), NOW - timedelta(hours=1)).status
    recorded = record_outcome(before, refusal(429, "daily_quota_exceeded"), NOW)
    status = recorded.status
    assert status.pause_kind is PauseKind.DAILY_QUOTA
    assert status.unavailable_until == datetime(2026, 3, 21, tzinfo=UTC)
    assert (status.daily_used, status.daily_observed_at) == (100, NOW)
    assert TOKEN_PAUSED in tokens(recorded.logs)
    for mail_class in MailClass:
        decision = may_send(status, mail_class, NOW + timedelta(hours=9))
        assert not decision.allowed
        assert decision.reason is Refusal.PROVIDER_PAUSED
        assert decision.reopens_at == datetime(2026, 3, 21, tzinfo=UTC)
    # After midnight the pause has ended and the pinned reading is yesterday's: a probe may go.
    after = datetime(2026, 3, 21, 0, 0, 1, tzinfo=UTC)
    assert breaker_state(status, after) is BreakerState.PROBE_DUE
    probe = may_send(status, MailClass.DEFERRABLE, after)
    assert probe.allowed and probe.probe


def test_monthly_quota_exceeded_pauses_until_the_first_and_leaves_the_daily_reading_alone() -> None:
    before = record_outcome(FRESH, ok("40"), NOW - timedelta(hours=1)).status
    status = record_outcome(before, refusal(429, "monthly_quota_exceeded", daily="40"), NOW).status
    assert status.pause_kind is PauseKind.MONTHLY_QUOTA
    assert status.unavailable_until == datetime(2026, 4, 1, tzinfo=UTC)
    assert (status.daily_used, status.daily_observed_at) == (40, before.daily_observed_at)
    # Still shut at the next midnight: the daily reset does not reopen a monthly pause.
    assert not may_send(status, MailClass.DEFERRABLE, datetime(2026, 3, 21, 0, 1, tzinfo=UTC)).allowed
    assert may_send(status, MailClass.DEFERRABLE, datetime(2026, 4, 1, 0, 1, tzinfo=UTC)).allowed


@pytest.mark.parametrize(
    ("status_code", "name"),
    [
        (401, "validation_error"),
        (403, "invalid_api_key"),
        (403, "suspended_api_key"),
        (401, "missing_api_key"),
    ],
)
def test_a_revoked_key_pauses_fifteen_minutes(status_code: int, name: str) -> None:
    status = record_outcome(FRESH, refusal(status_code, name), NOW).status
    assert status.pause_kind is PauseKind.SYSTEMIC
    assert status.unavailable_until == NOW + timedelta(minutes=15)
    assert status.daily_used is None
    assert not may_send(status, MailClass.REALTIME, NOW + timedelta(minutes=14, seconds=59)).allowed
    assert may_send(status, MailClass.REALTIME, NOW + timedelta(minutes=15)).allowed


@pytest.mark.parametrize("status_code", [400, 403, 422])
def test_validation_error_pauses_nothing(status_code: int) -> None:
    recorded = record_outcome(FRESH, refusal(status_code, "validation_error", SubmitState.REFUSED), NOW)
    assert recorded.status == FRESH
    assert recorded.logs == ()
    assert may_send(recorded.status, MailClass.REALTIME, NOW).allowed


@pytest.mark.parametrize(
    ("status_code", "name", "state"),
    [
        (429, "rate_limit_exceeded", SubmitState.THROTTLED),
        (500, "application_error", SubmitState.OUTCOME_UNKNOWN),
        (None, "timeout", SubmitState.OUTCOME_UNKNOWN),
        (None, "connect_failed", SubmitState.THROTTLED),
    ],
)
def test_other_failures_leave_the_breaker_alone(
    status_code: int | None, name: str, state: SubmitState
) -> None:
    assert record_outcome(FRESH, refusal(status_code, name, state), NOW).status == FRESH


def test_a_success_reopens_a_pause() -> None:
    shut = record_outcome(FRESH, refusal(401, "validation_error"), NOW).status
    later = NOW + timedelta(minutes=16)
    recorded = record_outcome(shut, ok("12"), later)
    assert recorded.status.pause_kind is None and recorded.status.unavailable_until is None
    assert recorded.status.last_success_at == later
    assert recorded.status.daily_used == 12
    assert TOKEN_REOPENED in tokens(recorded.logs)
    assert breaker_state(recorded.status, later) is BreakerState.OPEN


def test_a_failed_probe_re_arms_the_pause() -> None:
    shut = record_outcome(FRESH, refusal(429, "daily_quota_exceeded"), NOW).status
    probe_at = datetime(2026, 3, 21, 0, 10, tzinfo=UTC)
    rearmed = record_outcome(shut, refusal(429, "daily_quota_exceeded"), probe_at).status
    assert rearmed.unavailable_until == datetime(2026, 3, 22, tzinfo=UTC)
    assert breaker_state(rearmed, probe_at) is BreakerState.SHUT


def test_a_shorter_pause_never_shortens_one_in_force() -> None:
    monthly = record_outcome(FRESH, refusal(429, "monthly_quota_exceeded"), NOW).status
    after = record_outcome(monthly, refusal(401, "validation_error"), NOW + timedelta(seconds=1)).status
    assert after == monthly


def test_a_longer_pause_replaces_a_shorter_one() -> None:
    systemic = record_outcome(FRESH, refusal(401, "validation_error"), NOW).status
    daily = record_outcome(systemic, refusal(429, "daily_quota_exceeded"), NOW + timedelta(seconds=1)).status
    assert daily.pause_kind is PauseKind.DAILY_QUOTA


def test_a_pause_kind_without_an_end_is_shut() -> None:
    damaged = replace(FRESH, pause_kind=PauseKind.SYSTEMIC, unavailable_until=None)
    assert breaker_state(damaged, NOW) is BreakerState.SHUT


# --- the bounded reading --------------------------------------------------------------------------


def test_1250_above_the_daily_limit_is_refused_at_write_and_verification_stays_on() -> None:
    before = record_outcome(FRESH, ok("30"), NOW - timedelta(minutes=1)).status
    recorded = record_outcome(before, ok("1250"), NOW)
    assert recorded.status.daily_used == 30
    assert recorded.status.daily_observed_at == before.daily_observed_at
    [event] = [e for e in recorded.logs if e.token == TOKEN_READING_OUT_OF_RANGE]
    assert event.level is LogLevel.ERROR
    assert dict(event.detail) == {"at": "write", "value": 1250, "daily_limit": 100}
    assert may_send(recorded.status, MailClass.REALTIME, NOW).allowed


def test_1250_stored_is_ignored_at_read_loudly_and_verification_stays_on() -> None:
    stored = replace(FRESH, daily_used=1250, daily_observed_at=NOW)
    decision = may_send(stored, MailClass.REALTIME, NOW)
    assert decision.allowed
    [event] = decision.logs
    assert (event.token, event.level, event.detail["at"]) == (
        TOKEN_READING_OUT_OF_RANGE,
        LogLevel.ERROR,
        "read",
    )
    assert quota_percent(stored, NOW) is None


@pytest.mark.parametrize("raw", ["-3", "9.5", "abc", "", " ", "0x10", "٣"])
def test_a_malformed_header_is_refused_loudly(raw: str) -> None:
    recorded = record_outcome(FRESH, ok(raw), NOW)
    assert recorded.status.daily_used is None
    assert TOKEN_READING_MALFORMED in tokens(recorded.logs)
    assert may_send(recorded.status, MailClass.REALTIME, NOW).allowed


@pytest.mark.parametrize("raw", ["0", "100", " 57 "])
def test_a_reading_inside_the_range_is_kept(raw: str) -> None:
    assert record_outcome(FRESH, ok(raw), NOW).status.daily_used == int(raw)


def test_an_absent_header_on_a_success_means_no_daily_cap() -> None:
    capped = record_outcome(FRESH, ok("94"), NOW).status
    uncapped = record_outcome(capped, ok(None), NOW + timedelta(minutes=1)).status
    assert uncapped.daily_used is None
    assert may_send(uncapped, MailClass.REALTIME, NOW + timedelta(minutes=1)).allowed


def test_a_header_on_a_refusal_is_checked_but_never_stored() -> None:
    # A 403 "domain not verified" was seen carrying a reading of 0 (spec/resend.md §7).
    before = record_outcome(FRESH, ok("80"), NOW - timedelta(minutes=1)).status
    after = record_outcome(before, refusal(403, "validation_error", SubmitState.REFUSED, daily="0"), NOW)
    assert after.status == before
    loud = record_outcome(before, refusal(403, "validation_error", SubmitState.REFUSED, daily="5000"), NOW)
    assert loud.status == before and TOKEN_READING_OUT_OF_RANGE in tokens(loud.logs)


def test_no_daily_cap_configured_ignores_every_reading() -> None:
    limits = ProviderLimits(daily_limit=None)
    status = record_outcome(FRESH, ok("99"), NOW, limits).status
    assert status.daily_used is None
    assert may_send(replace(FRESH, daily_used=99, daily_observed_at=NOW), "realtime", NOW, limits).allowed


# --- the rest -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["bulk", "", "REALTIME", None])
def test_an_unknown_class_is_refused(value: str | None) -> None:
    decision = may_send(FRESH, value, NOW)  # type: ignore[arg-type]
    assert not decision.allowed and decision.reason is Refusal.CLASS_NOT_CLASSIFIED
    assert decision.log_token is not None


@pytest.mark.parametrize(
    ("daily", "realtime", "correspondence"), [(100, 96, 95), (100, 90, 101), (100, -1, 50), (-5, 0, 0)]
)
def test_incoherent_limits_are_refused(daily: int, realtime: int, correspondence: int) -> None:
    with pytest.raises(MailnodeError) as caught:
        ProviderLimits(daily_limit=daily, realtime_ceiling=realtime, correspondence_ceiling=correspondence)
    assert caught.value.code == "E_PROVIDER_LIMITS_INCOHERENT"


def test_default_limits_follow_the_seed() -> None:
    limits = ProviderLimits()
    assert (limits.daily_limit, limits.realtime_ceiling) == (100, 90)
    assert [limits.ceiling_for(c) for c in MailClass] == [95, 90, 100]


@pytest.mark.parametrize(("reading", "alert"), [(79, False), (80, True), (100, True)])
def test_quota_alert_at_eighty_percent(reading: int, alert: bool) -> None:
    status = replace(FRESH, daily_used=reading, daily_observed_at=NOW)
    assert quota_alert(status, NOW) is alert
    assert quota_percent(status, NOW) == float(reading)


def test_no_reading_is_no_percent_not_zero() -> None:
    assert quota_percent(FRESH, NOW) is None
    assert not quota_alert(FRESH, NOW)


# --- tickets: an answer to an older request never overwrites a reading or a pause (issue 17 item 2) ----
#: A status after tickets 1..4 were issued and a pause set once 4 had been issued, its reading pinned then.
TICKETED = replace(FRESH, requests_issued=4, daily_used=50, daily_observed_at=NOW, reading_ticket=4,
                   pause_kind=PauseKind.DAILY_QUOTA, paused_at=NOW, unavailable_until=next_utc_midnight(NOW),
                   pause_error="daily_quota_exceeded", pause_ticket=4)
#: Open, its reading from ticket 2.
OPEN_TICKETED = replace(TICKETED, pause_kind=None, paused_at=None, unavailable_until=None, pause_error=None,
                        pause_ticket=None, reading_ticket=2)


@pytest.mark.parametrize(("status", "ticket", "reopened", "reading"), [
    (TICKETED, 3, False, 50),  # made before the pause, answered after it: neither reopens nor reads
    (TICKETED, 4, False, 50),  # the last request made before the pause
    (TICKETED, 5, True, 60),  # made after the pause (a probe): reopens, and its reading is the newest
    (TICKETED, None, True, 60),  # an answer without a ticket: as before tickets
    (OPEN_TICKETED, 1, False, 50),  # older than the reading's request: the reading stays
    (OPEN_TICKETED, 2, False, 50),  # the reading's own request again: newer only when strictly later
    (OPEN_TICKETED, 3, False, 60),
])
def test_an_answer_to_an_older_request_never_overwrites_the_reading_or_reopens_a_later_pause(
        status: ProviderStatus, ticket: int | None, reopened: bool, reading: int) -> None:
    recorded = record_outcome(status, ok("60"), NOW, ticket=ticket)
    was_paused = status.pause_kind is not None
    assert (was_paused and recorded.status.pause_kind is None) is reopened
    assert (TOKEN_REOPENED in tokens(recorded.logs)) is reopened
    assert recorded.status.daily_used == reading


def test_a_pause_records_the_requests_made_before_it() -> None:
    paused = record_outcome(replace(FRESH, requests_issued=7), refusal(429, "daily_quota_exceeded"), NOW).status
    assert paused.pause_ticket == 7 and paused.reading_ticket == 7


@pytest.mark.parametrize(("reading", "in_flight", "allowed"), [
    (94, 0, True), (94, 1, False), (93, 1, True), (93, 2, False), (None, 50, True),
])
def test_requests_in_flight_count_against_the_ceiling(reading: int | None, in_flight: int, allowed: bool) -> None:
    status = replace(FRESH, daily_used=reading, daily_observed_at=NOW if reading is not None else None)
    assert may_send(status, MailClass.CORRESPONDENCE, NOW, in_flight=in_flight).allowed is allowed
