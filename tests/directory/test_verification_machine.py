"""The verification state machine under arbitrary sequences of requests, sends, guesses and time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from mailnode import budgets
from mailnode.codes.verification import (
    RequestOutcome,
    VerificationRecord,
    VerifyOutcome,
    after_send_failed,
    issue,
    may_request,
    mint_code,
    verify,
)
from mailnode.governance.provider import PauseKind, ProviderStatus

SECRET = b"machine-secret"
USER = "usr_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A"
ADDRESSES = ("ann@example.test", "ann@typo.example")


class Verification(RuleBasedStateMachine):
    """A model of the endpoint pair: what the I/O layer does with each answer, and what must hold."""

    def __init__(self) -> None:
        super().__init__()
        self.now = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
        self.record: VerificationRecord | None = None
        self.code: str | None = None  # the code last delivered, if the send worked
        self.shut = False
        self.requests_while_shut = 0

    def status(self) -> ProviderStatus:
        if not self.shut:
            return ProviderStatus("resend")
        return ProviderStatus(
            "resend",
            pause_kind=PauseKind.SYSTEMIC,
            paused_at=self.now,
            unavailable_until=self.now + timedelta(minutes=15),
        )

    @rule(seconds=st.integers(0, 2 * budgets.VERIFICATION_CODE_TTL_SECONDS))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule(shut=st.booleans())
    def breaker(self, shut: bool) -> None:
        self.shut = shut

    @rule(address=st.sampled_from(ADDRESSES), delivered=st.booleans())
    def request_code(self, address: str, delivered: bool) -> None:
        before = self.record
        decision = may_request(self.record, self.status(), self.now)
        if self.shut:
            assert decision.outcome is RequestOutcome.PROVIDER_UNAVAILABLE
        if decision.outcome is not RequestOutcome.ALLOWED:
            assert self.record is before  # nothing minted, written or armed
            return
        if before is not None:
            assert self.now - before.sent_at >= timedelta(seconds=budgets.VERIFICATION_COOLDOWN_SECONDS)
        code = mint_code()
        self.record = issue(USER, address, code, self.now, secret=SECRET)
        if self.shut:
            self.requests_while_shut += 1
        if delivered:
            self.code = code
        else:
            self.record = after_send_failed(self.record)
            self.code = None

    @rule(right=st.booleans(), noise=st.text(max_size=8))
    def submit(self, right: bool, noise: str) -> None:
        guess = self.code if right and self.code is not None else noise
        before = self.record
        result = verify(self.record, guess, self.now, secret=SECRET)
        if result.outcome is VerifyOutcome.VERIFIED:
            assert before is not None and self.code is not None and guess.strip() == self.code
            assert before.expires_at is not None and self.now < before.expires_at
            assert before.attempts < budgets.VERIFICATION_MAX_ATTEMPTS
            assert result.verified_address == before.address and result.record is None
            self.code = None
        elif result.outcome is VerifyOutcome.REQUEST_NEW:
            assert before is None or before.code_hash is None
            assert result.record == before  # no attempt spent
        elif result.outcome is VerifyOutcome.WRONG_CODE:
            assert before is not None and result.record is not None
            assert result.record.attempts == before.attempts + 1
        else:
            assert result.record is not None and result.record.code_hash is None
            self.code = None
        if result.record is not None and before is not None:
            assert result.record.sent_at == before.sent_at  # the cooldown never moves on a guess
        self.record = result.record

    @invariant()
    def a_record_is_coherent(self) -> None:
        if self.record is None:
            return
        assert 0 <= self.record.attempts <= budgets.VERIFICATION_MAX_ATTEMPTS
        assert (self.record.code_hash is None) == (self.record.expires_at is None)
        if self.record.code_hash is not None:
            assert self.record.attempts < budgets.VERIFICATION_MAX_ATTEMPTS

    @invariant()
    def a_shut_breaker_costs_no_provider_requests(self) -> None:
        assert self.requests_while_shut == 0


TestVerificationMachine = Verification.TestCase
TestVerificationMachine.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
