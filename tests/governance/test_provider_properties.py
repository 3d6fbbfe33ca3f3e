"""Properties of the provider breaker: a reading outside [0, limit] never lands, never closes anything."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from mailnode.governance.provider import (
    TOKEN_READING_MALFORMED,
    TOKEN_READING_OUT_OF_RANGE,
    ProviderLimits,
    ProviderStatus,
    bounded_reading,
    may_send,
    reading_today,
    record_outcome,
)
from mailnode.transports.base import SubmitOutcome, SubmitState
from mailnode.vocabulary.mail_classes import MailClass

NOW = datetime(2026, 3, 20, 14, 30, tzinfo=UTC)
limits_st = st.integers(min_value=0, max_value=10_000).flatmap(
    lambda limit: st.tuples(st.just(limit), st.integers(0, limit)).flatmap(
        lambda pair: st.integers(0, pair[1]).map(
            lambda realtime: ProviderLimits(
                daily_limit=pair[0], realtime_ceiling=realtime, correspondence_ceiling=pair[1]
            )
        )
    )
)


@given(value=st.integers(min_value=-(10**12), max_value=10**12), limits=limits_st)
def test_a_bounded_reading_is_in_range_or_refused_loudly(value: int, limits: ProviderLimits) -> None:
    assert limits.daily_limit is not None
    reading = bounded_reading(value, limits, at="write")
    if 0 <= value <= limits.daily_limit:
        assert reading.value == value and reading.log is None
    else:
        assert reading.value is None
        assert reading.log is not None and reading.log.token == TOKEN_READING_OUT_OF_RANGE


@given(raw=st.text(max_size=12) | st.integers(-500, 5000).map(str), limits=limits_st)
def test_no_header_value_stores_a_reading_outside_the_range(raw: str, limits: ProviderLimits) -> None:
    assert limits.daily_limit is not None
    outcome = SubmitOutcome(SubmitState.HANDED_OVER, quota_headers=(("x-resend-daily-quota", raw),))
    recorded = record_outcome(ProviderStatus("resend"), outcome, NOW, limits)
    used = recorded.status.daily_used
    assert used is None or 0 <= used <= limits.daily_limit
    if used is None:
        assert {e.token for e in recorded.logs} & {TOKEN_READING_OUT_OF_RANGE, TOKEN_READING_MALFORMED}


@given(stored=st.integers(-(10**9), 10**9), limits=limits_st, mail_class=st.sampled_from(list(MailClass)))
def test_a_stored_reading_outside_the_range_never_refuses(
    stored: int, limits: ProviderLimits, mail_class: MailClass
) -> None:
    assert limits.daily_limit is not None
    status = ProviderStatus("resend", daily_used=stored, daily_observed_at=NOW)
    decision = may_send(status, mail_class, NOW + timedelta(seconds=1), limits)
    if not 0 <= stored <= limits.daily_limit:
        assert decision.allowed
        assert reading_today(status, NOW, limits).value is None


@given(raw=st.integers(0, 10_000).map(str), limits=limits_st)
def test_realtime_never_sends_where_deferrable_would_not(raw: str, limits: ProviderLimits) -> None:
    # The reserve only ever takes sends away from realtime, never from deferrable mail.
    outcome = SubmitOutcome(SubmitState.HANDED_OVER, quota_headers=(("x-resend-daily-quota", raw),))
    status = record_outcome(ProviderStatus("resend"), outcome, NOW, limits).status
    realtime = may_send(status, MailClass.REALTIME, NOW, limits).allowed
    correspondence = may_send(status, MailClass.CORRESPONDENCE, NOW, limits).allowed
    deferrable = may_send(status, MailClass.DEFERRABLE, NOW, limits).allowed
    assert (not realtime or correspondence) and (not correspondence or deferrable)
