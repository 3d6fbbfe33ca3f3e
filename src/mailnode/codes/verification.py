"""Verification codes for a person's contact address: a pure state machine over ``VerificationRecord``.

spec/transactional.md §4 (seed 002, "Verification is now synchronous" and "The verification record is the
rate limit, so it stays"). The flow the I/O layer runs:

1. ``may_request(record, status, now, codes_today=n)``: the provider breaker (realtime class, one
   request), the person's daily cap (``daily_cap_reached``: ``budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY``
   per UTC day) and the cooldown are read before anything is minted, written or armed; a shut breaker
   answers the vague 503 and costs zero provider requests, the cap a 429 saying when it resets.
2. ``mint_code()`` then ``issue(...)``: write the record (a keyed hash of the code, never the code), then
   send the code as ``realtime`` mail and await the provider's answer.
3. On a failed send, ``after_send_failed(record)``: the record survives as a cooldown with its code
   cleared, and the caller answers the vague 503 (``VAGUE_UNAVAILABLE_MESSAGE``).
4. ``verify(record, submitted, now, secret)``: constant-time comparison of keyed hashes, an attempt limit,
   expiry; a record with no code answers "request a new one" without spending an attempt.

One record per person: a new request replaces it, whatever the address, so changing the address does not
escape the cooldown. Pure: no I/O; ``mint_code`` alone reads the operating system's random source.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from mailnode import budgets
from mailnode.clock import utc
from mailnode.errors import MailnodeError
from mailnode.governance.provider import (
    DEFAULT_LIMITS,
    ProviderLimits,
    ProviderStatus,
    may_send,
    next_utc_midnight,
)
from mailnode.log_events import LogEvent
from mailnode.vocabulary.mail_classes import MailClass

#: What a person reads when a code cannot be sent: the same words for a quota, a revoked key and an
#: unverified domain, because none of it is theirs to act on (seed 002; spec/transactional.md §4).
VAGUE_UNAVAILABLE_MESSAGE = "Verification codes cannot be sent at the moment. Please try again later."


@dataclass(frozen=True)
class VerificationRecord:
    """One person's verification state (one row per user).

    Attributes:
        user_id: the person (``usr_...``).
        address: the contact address the code was for (normalised).
        code_hash: hex HMAC-SHA256 of the code (``hash_code``), or None when cleared (failed send, expiry,
            attempts used up): the record is then only a cooldown.
        sent_at: when the last code was requested (aware UTC); the cooldown counts from here.
        expires_at: when the code stops working (aware UTC), or None when there is no code.
        attempts: wrong guesses spent on the current code.
    """

    user_id: str
    address: str
    code_hash: str | None
    sent_at: datetime
    expires_at: datetime | None
    attempts: int = 0


@dataclass(frozen=True)
class VerificationRules:
    """The numbers (defaults from budgets: seed 002's 24 h, 60 s and 5 attempts; 6 digits and the daily
    cap per person sized)."""

    code_digits: int = budgets.VERIFICATION_CODE_DIGITS
    ttl_seconds: int = budgets.VERIFICATION_CODE_TTL_SECONDS
    cooldown_seconds: int = budgets.VERIFICATION_COOLDOWN_SECONDS
    max_attempts: int = budgets.VERIFICATION_MAX_ATTEMPTS
    codes_per_day: int = budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY


DEFAULT_RULES = VerificationRules()


def mint_code(digits: int = budgets.VERIFICATION_CODE_DIGITS) -> str:
    """A new code of ``digits`` decimal digits from ``secrets`` (the OS's cryptographic random source)."""
    if digits < 1:
        raise ValueError("a verification code needs at least one digit")
    return "".join(secrets.choice("0123456789") for _ in range(digits))


def hash_code(code: str, *, secret: bytes, user_id: str, address: str) -> str:
    """Hex HMAC-SHA256 of ``code`` bound to the person and the address, under the node's ``secret``.

    Keyed, because a 6-digit code hashed without a key is recovered from a leaked table in a million
    tries; bound to the person and address, so a code for one cannot verify another.
    """
    message = f"{user_id}\n{address}\n{code.strip()}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


class RequestOutcome(StrEnum):
    """The answer to "send me a code".

    - ``allowed``: mint, write the record (``issue``), send as realtime mail, await it.
    - ``provider_unavailable``: the breaker refuses realtime mail: 503 with the vague message, nothing
      minted, written or armed.
    - ``daily_cap``: the person already asked for ``codes_per_day`` codes this UTC day: 429 with
      ``resets_at`` (the next 00:00 UTC) and ``retry_after_seconds``.
    - ``cooldown``: a code was requested less than the cooldown ago: 429 with ``retry_after_seconds``.
    """

    ALLOWED = "allowed"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    DAILY_CAP = "daily_cap"
    COOLDOWN = "cooldown"


@dataclass(frozen=True)
class RequestDecision:
    """The answer of ``may_request``.

    Attributes:
        outcome: ``RequestOutcome``.
        retry_after_seconds: seconds until asking again can succeed (cooldown, daily cap), else None.
        resets_at: for ``daily_cap``, when the person's count starts again (aware UTC, the next 00:00 UTC).
        logs: lines to log (the breaker's).
    """

    outcome: RequestOutcome
    retry_after_seconds: int | None = None
    logs: tuple[LogEvent, ...] = ()
    resets_at: datetime | None = None


def utc_day_bounds(now: datetime) -> tuple[datetime, datetime]:
    """``(start, end)`` of the UTC day holding ``now`` (aware, 00:00 UTC to the next 00:00 UTC): the window
    the daily cap counts in. The provider's daily quota resets at 00:00 UTC too (spec/resend.md §7)."""
    end = next_utc_midnight(now)
    return end - timedelta(days=1), end


def daily_cap_reached(codes_today: int, rules: VerificationRules = DEFAULT_RULES) -> bool:
    """Whether a person who already asked for ``codes_today`` codes this UTC day may not ask for another.

    ``codes_today`` counts every code request that passed (sent or not: a failed send spent a provider
    request too). The cap is ``rules.codes_per_day``; a negative count (a damaged read) is refused, so
    the rule fails closed.
    """
    return codes_today < 0 or codes_today >= rules.codes_per_day


def may_request(
    record: VerificationRecord | None,
    status: ProviderStatus,
    now: datetime,
    rules: VerificationRules = DEFAULT_RULES,
    limits: ProviderLimits = DEFAULT_LIMITS,
    *,
    codes_today: int = 0,
) -> RequestDecision:
    """May the person be sent a new code at ``now``? Reads only; the breaker first.

    The provider breaker is asked for the ``realtime`` class and one request, the code (a refusal on the
    reserve alone carries its error-level log). Then the daily cap: ``codes_today`` (the person's code
    requests since 00:00 UTC, ``utc_day_bounds``) at ``rules.codes_per_day`` refuses until the next 00:00
    UTC. Then the cooldown: ``record.sent_at + cooldown`` still ahead refuses, whether the last send worked
    or not.
    """
    decision = may_send(status, MailClass.REALTIME, now, limits, requests=1)
    if not decision.allowed:
        return RequestDecision(RequestOutcome.PROVIDER_UNAVAILABLE, logs=decision.logs)
    if daily_cap_reached(codes_today, rules):
        resets = next_utc_midnight(now)
        wait = math.ceil((resets - utc(now)).total_seconds())
        return RequestDecision(RequestOutcome.DAILY_CAP, max(wait, 1), decision.logs, resets_at=resets)
    if record is not None:
        ends = utc(record.sent_at) + timedelta(seconds=rules.cooldown_seconds)
        if utc(now) < ends:
            wait = math.ceil((ends - utc(now)).total_seconds())
            return RequestDecision(RequestOutcome.COOLDOWN, max(wait, 1), decision.logs)
    return RequestDecision(RequestOutcome.ALLOWED, logs=decision.logs)


def issue(
    user_id: str,
    address: str,
    code: str,
    now: datetime,
    *,
    secret: bytes,
    rules: VerificationRules = DEFAULT_RULES,
) -> VerificationRecord:
    """The record to write before sending ``code``: its keyed hash, ``sent_at`` now, expiry, no attempts.

    It replaces any earlier record of the person (the old code stops working).
    """
    return VerificationRecord(
        user_id=user_id,
        address=address,
        code_hash=hash_code(code, secret=secret, user_id=user_id, address=address),
        sent_at=utc(now),
        expires_at=utc(now) + timedelta(seconds=rules.ttl_seconds),
        attempts=0,
    )


def after_send_failed(record: VerificationRecord) -> VerificationRecord:
    """The record after the provider did not take the code: a cooldown with the code cleared.

    ``sent_at`` stays, so the cooldown still bounds how often a person (or a loop on one session) can
    make the node spend a provider request; the code is cleared because nobody received it.
    """
    return replace(record, code_hash=None, expires_at=None, attempts=0)


class VerifyOutcome(StrEnum):
    """The answer to "here is my code".

    - ``verified``: the code matched; mark the address verified and delete the record.
    - ``wrong_code``: no match; one attempt spent, some left.
    - ``attempts_exhausted``: no match and that was the last attempt; the code is cleared.
    - ``expired``: the code's time ran out; the code is cleared, no attempt spent.
    - ``request_new``: there is no code (never requested, send failed, cleared); no attempt spent.
    """

    VERIFIED = "verified"
    WRONG_CODE = "wrong_code"
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"
    EXPIRED = "expired"
    REQUEST_NEW = "request_new"


@dataclass(frozen=True)
class VerifyResult:
    """The answer of ``verify``.

    Attributes:
        outcome: ``VerifyOutcome``.
        record: the record to write, or None to delete it (only for ``verified``). Unchanged when
            ``request_new`` (write nothing).
        verified_address: for ``verified``, the address to mark verified (only if it is still the person's
            contact address), else None.
        attempts_left: guesses left on the current code (0 when none).
    """

    outcome: VerifyOutcome
    record: VerificationRecord | None
    verified_address: str | None = None
    attempts_left: int = 0


def verify(
    record: VerificationRecord | None,
    submitted: str,
    now: datetime,
    *,
    secret: bytes,
    rules: VerificationRules = DEFAULT_RULES,
) -> VerifyResult:
    """Check ``submitted`` against ``record`` at ``now``.

    A record without a code (or no record) answers ``request_new`` and spends nothing; an expired code is
    cleared and answers ``expired``; otherwise the keyed hash of ``submitted`` is compared with
    ``hmac.compare_digest`` (constant time) and a miss spends one attempt, the last miss clearing the code.
    """
    if record is None or record.code_hash is None:
        return VerifyResult(VerifyOutcome.REQUEST_NEW, record)
    if record.expires_at is None or utc(now) >= utc(record.expires_at):
        return VerifyResult(VerifyOutcome.EXPIRED, replace(record, code_hash=None, expires_at=None))
    if record.attempts >= rules.max_attempts:
        return VerifyResult(
            VerifyOutcome.ATTEMPTS_EXHAUSTED, replace(record, code_hash=None, expires_at=None)
        )
    candidate = hash_code(submitted, secret=secret, user_id=record.user_id, address=record.address)
    if hmac.compare_digest(candidate, record.code_hash):
        return VerifyResult(VerifyOutcome.VERIFIED, None, verified_address=record.address)
    attempts = record.attempts + 1
    if attempts >= rules.max_attempts:
        return VerifyResult(
            VerifyOutcome.ATTEMPTS_EXHAUSTED,
            replace(record, code_hash=None, expires_at=None, attempts=attempts),
        )
    return VerifyResult(
        VerifyOutcome.WRONG_CODE,
        replace(record, attempts=attempts),
        attempts_left=rules.max_attempts - attempts,
    )


#: The error each non-success outcome answers with (code, HTTP status, what, fix). Total over
#: ``RequestOutcome`` and ``VerifyOutcome`` minus their successes; ``error_for`` builds the error.
_ERRORS: dict[RequestOutcome | VerifyOutcome, tuple[str, int, str, str] | None] = {
    RequestOutcome.ALLOWED: None,
    RequestOutcome.PROVIDER_UNAVAILABLE: (
        "E_VERIFICATION_UNAVAILABLE",
        503,
        VAGUE_UNAVAILABLE_MESSAGE,
        "Try again in a little while: POST /api/me/contact-email.",
    ),
    RequestOutcome.DAILY_CAP: (
        "E_VERIFICATION_DAILY_CAP",
        429,
        ("You have asked for as many verification codes today as one person may "
         f"({budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY} per UTC day)."),
        ("Check the address you typed, then ask again after 00:00 UTC (detail.resets_at): "
         "POST /api/me/contact-email."),
    ),
    RequestOutcome.COOLDOWN: (
        "E_VERIFICATION_COOLDOWN",
        429,
        "A code was requested a moment ago.",
        "Wait the seconds in detail.retry_after_seconds, then POST /api/me/contact-email.",
    ),
    VerifyOutcome.VERIFIED: None,
    VerifyOutcome.WRONG_CODE: (
        "E_VERIFICATION_CODE_WRONG",
        422,
        "That code does not match.",
        "Check the code in the latest message and try again: POST /api/me/contact-email/verify.",
    ),
    VerifyOutcome.ATTEMPTS_EXHAUSTED: (
        "E_VERIFICATION_ATTEMPTS_EXHAUSTED",
        422,
        "Too many wrong codes; this code no longer works.",
        "Request a new code: POST /api/me/contact-email.",
    ),
    VerifyOutcome.EXPIRED: (
        "E_VERIFICATION_CODE_EXPIRED",
        422,
        "This code has expired.",
        "Request a new code: POST /api/me/contact-email.",
    ),
    VerifyOutcome.REQUEST_NEW: (
        "E_VERIFICATION_REQUEST_NEW",
        409,
        "There is no code to check.",
        "Request a new code: POST /api/me/contact-email.",
    ),
}


def error_for(outcome: RequestOutcome | VerifyOutcome, **detail: object) -> MailnodeError | None:
    """The ``MailnodeError`` for a refusing outcome (None for ``allowed`` and ``verified``).

    The 503 is deliberately vague: it never says whether a quota, a key or a domain stopped the send.
    """
    entry = _ERRORS[outcome]
    if entry is None:
        return None
    code, status, what, fix = entry
    why = (
        "Sending is unavailable for now."
        if status == 503
        else "Each code spends one of the node's limited daily sends, so a person's codes are capped per day."
        if outcome is RequestOutcome.DAILY_CAP
        else "Verification codes are limited in time, attempts and frequency."
    )
    return MailnodeError(code=code, what=what, why=why, fix=fix, status=status, detail=dict(detail))
