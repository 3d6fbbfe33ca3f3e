"""Verification codes (spec/transactional.md §4): requesting, sending, checking, as tables."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from mailnode import budgets
from mailnode.codes.verification import (
    VAGUE_UNAVAILABLE_MESSAGE,
    RequestOutcome,
    VerificationRecord,
    VerifyOutcome,
    after_send_failed,
    error_for,
    hash_code,
    issue,
    may_request,
    mint_code,
    verify,
)
from mailnode.governance.provider import TOKEN_REALTIME_REFUSED_ON_RESERVE, PauseKind, ProviderStatus

T0 = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
SECRET = b"node-secret-for-tests"
USER = "usr_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A"
ADDR = "ann@example.test"
OPEN = ProviderStatus("resend")
SHUT = ProviderStatus(
    "resend", pause_kind=PauseKind.SYSTEMIC, paused_at=T0, unavailable_until=T0 + timedelta(minutes=15)
)
AT_94 = ProviderStatus("resend", daily_used=94, daily_observed_at=T0)


def record(code: str = "123456", at: datetime = T0) -> VerificationRecord:
    return issue(USER, ADDR, code, at, secret=SECRET)


def test_mint_code_is_digits_of_the_budgeted_length() -> None:
    codes = {mint_code() for _ in range(200)}
    assert all(len(c) == budgets.VERIFICATION_CODE_DIGITS and c.isdigit() for c in codes)
    assert len(codes) > 150  # drawn from 10^6: a repeat in 200 draws is rare, 50 repeats impossible
    with pytest.raises(ValueError):
        mint_code(0)


def test_only_a_keyed_hash_is_stored() -> None:
    r = record("424242")
    assert "424242" not in repr(r)
    assert r.code_hash == hash_code("424242", secret=SECRET, user_id=USER, address=ADDR)
    assert r.code_hash != hash_code("424242", secret=b"other", user_id=USER, address=ADDR)
    assert r.code_hash != hash_code("424242", secret=SECRET, user_id=USER, address="bob@example.test")
    assert (r.sent_at, r.expires_at, r.attempts) == (T0, T0 + timedelta(hours=24), 0)


@pytest.mark.parametrize(
    ("existing", "status", "at", "outcome"),
    [
        (None, OPEN, T0, RequestOutcome.ALLOWED),
        (None, SHUT, T0 + timedelta(minutes=1), RequestOutcome.PROVIDER_UNAVAILABLE),
        (None, AT_94, T0, RequestOutcome.PROVIDER_UNAVAILABLE),
        ("live", OPEN, T0 + timedelta(seconds=59), RequestOutcome.COOLDOWN),
        ("live", OPEN, T0 + timedelta(seconds=60), RequestOutcome.ALLOWED),
        ("failed", OPEN, T0 + timedelta(seconds=30), RequestOutcome.COOLDOWN),
        ("failed", OPEN, T0 + timedelta(seconds=61), RequestOutcome.ALLOWED),
        # The breaker is read first: a shut breaker answers the vague 503 even inside a cooldown.
        ("live", SHUT, T0 + timedelta(seconds=10), RequestOutcome.PROVIDER_UNAVAILABLE),
    ],
)
def test_may_request(
    existing: str | None, status: ProviderStatus, at: datetime, outcome: RequestOutcome
) -> None:
    rec = None if existing is None else record() if existing == "live" else after_send_failed(record())
    assert may_request(rec, status, at).outcome is outcome


def test_a_cooldown_says_how_long() -> None:
    decision = may_request(record(), OPEN, T0 + timedelta(seconds=20, milliseconds=500))
    assert decision.retry_after_seconds == 40


def test_a_refusal_on_the_reserve_alone_is_logged_for_verification_too() -> None:
    decision = may_request(None, AT_94, T0)
    assert decision.outcome is RequestOutcome.PROVIDER_UNAVAILABLE
    assert [e.token for e in decision.logs] == [TOKEN_REALTIME_REFUSED_ON_RESERVE]


def test_a_failed_send_leaves_a_cooldown_without_a_code() -> None:
    failed = after_send_failed(record())
    assert failed.code_hash is None and failed.expires_at is None
    assert failed.sent_at == T0
    result = verify(failed, "123456", T0 + timedelta(seconds=5), secret=SECRET)
    assert result.outcome is VerifyOutcome.REQUEST_NEW
    assert result.record == failed  # no attempt spent, nothing to write


@pytest.mark.parametrize(
    ("start", "submitted", "at", "outcome", "attempts_after", "code_kept"),
    [
        (0, "123456", T0 + timedelta(minutes=3), VerifyOutcome.VERIFIED, None, False),
        (0, " 123456 ", T0 + timedelta(minutes=3), VerifyOutcome.VERIFIED, None, False),
        (0, "654321", T0 + timedelta(minutes=3), VerifyOutcome.WRONG_CODE, 1, True),
        (3, "654321", T0 + timedelta(minutes=3), VerifyOutcome.WRONG_CODE, 4, True),
        (4, "654321", T0 + timedelta(minutes=3), VerifyOutcome.ATTEMPTS_EXHAUSTED, 5, False),
        (4, "123456", T0 + timedelta(minutes=3), VerifyOutcome.VERIFIED, None, False),
        (5, "123456", T0 + timedelta(minutes=3), VerifyOutcome.ATTEMPTS_EXHAUSTED, 5, False),
        (0, "123456", T0 + timedelta(hours=24), VerifyOutcome.EXPIRED, 0, False),
        (0, "123456", T0 + timedelta(hours=24) - timedelta(seconds=1), VerifyOutcome.VERIFIED, None, False),
        (2, "nonsense", T0 + timedelta(hours=25), VerifyOutcome.EXPIRED, 2, False),
    ],
)
def test_verify(
    start: int,
    submitted: str,
    at: datetime,
    outcome: VerifyOutcome,
    attempts_after: int | None,
    code_kept: bool,
) -> None:
    rec = replace(record("123456"), attempts=start)
    result = verify(rec, submitted, at, secret=SECRET)
    assert result.outcome is outcome
    if attempts_after is None:
        assert result.record is None and result.verified_address == ADDR
    else:
        assert result.record is not None
        assert result.record.attempts == attempts_after
        assert (result.record.code_hash is not None) is code_kept
        assert result.record.sent_at == T0  # the cooldown survives every outcome
        assert result.verified_address is None


def test_no_record_is_request_new() -> None:
    result = verify(None, "123456", T0, secret=SECRET)
    assert result.outcome is VerifyOutcome.REQUEST_NEW and result.record is None


def test_a_new_request_replaces_the_old_code() -> None:
    old = record("111111")
    new = issue(USER, ADDR, "222222", T0 + timedelta(minutes=2), secret=SECRET)
    assert verify(new, "111111", T0 + timedelta(minutes=3), secret=SECRET).outcome is VerifyOutcome.WRONG_CODE
    assert verify(old, "111111", T0 + timedelta(minutes=3), secret=SECRET).outcome is VerifyOutcome.VERIFIED


@pytest.mark.parametrize("outcome", [*RequestOutcome, *VerifyOutcome])
def test_every_outcome_maps_to_an_error_or_success(outcome: RequestOutcome | VerifyOutcome) -> None:
    error = error_for(outcome)
    success = outcome in (RequestOutcome.ALLOWED, VerifyOutcome.VERIFIED)
    assert (error is None) is success
    if error is not None:
        assert error.code.startswith("E_VERIFICATION_") and error.fix


def test_the_503_is_vague() -> None:
    error = error_for(RequestOutcome.PROVIDER_UNAVAILABLE)
    assert error is not None and error.status == 503 and error.what == VAGUE_UNAVAILABLE_MESSAGE
    words = f"{error.what} {error.why} {error.fix}".lower()
    for telling in ("quota", "key", "domain", "resend", "provider"):
        assert telling not in words


def test_seed_numbers() -> None:
    assert budgets.VERIFICATION_CODE_TTL_SECONDS == 24 * 3600
    assert budgets.VERIFICATION_COOLDOWN_SECONDS == 60
    assert budgets.VERIFICATION_MAX_ATTEMPTS == 5
