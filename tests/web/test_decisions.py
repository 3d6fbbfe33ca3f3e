"""The pure decisions of signing in, as tables: session state, the attempt limits, the refusal map, the next
page after sign-in and which requests are pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailnode import budgets
from mailnode.codes.signin import refusal_for
from mailnode.codes.verification import RequestOutcome, VerifyOutcome
from mailnode.directory.sessions import Session, SessionFacts, SessionState, decide, needs_touch
from mailnode.directory.signin_attempts import AttemptCount
from mailnode.directory.signin_attempts import decide as decide_attempts
from mailnode.directory.tokens import Principal
from mailnode.web.errors import is_page
from mailnode.web.signin import local_path

NOW = datetime(2026, 3, 10, 8, 0, tzinfo=UTC)
IDLE = budgets.WEB_SESSION_IDLE_SECONDS
ABSOLUTE = budgets.WEB_SESSION_ABSOLUTE_SECONDS


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


@pytest.mark.parametrize(("facts", "state"), [
    (None, SessionState.unknown),
    (SessionFacts(ago(10), ago(1), None, None), SessionState.live),
    (SessionFacts(ago(10), ago(1), ago(0), None), SessionState.signed_out),
    (SessionFacts(ago(10), ago(1), None, ago(0)), SessionState.token_revoked),
    (SessionFacts(ago(IDLE + 5), ago(IDLE - 1), None, None), SessionState.live),
    (SessionFacts(ago(IDLE + 5), ago(IDLE), None, None), SessionState.idle),
    (SessionFacts(ago(ABSOLUTE - 1), ago(1), None, None), SessionState.live),
    (SessionFacts(ago(ABSOLUTE), ago(1), None, None), SessionState.expired),
    # Ended wins over every clock: a signed-out session stays signed out.
    (SessionFacts(ago(ABSOLUTE), ago(IDLE), ago(0), ago(0)), SessionState.signed_out),
])
def test_session_state(facts: SessionFacts | None, state: SessionState) -> None:
    assert decide(facts, NOW) is state


@pytest.mark.parametrize(("last_seen", "touch"), [
    (0, False), (budgets.WEB_SESSION_TOUCH_SECONDS - 1, False), (budgets.WEB_SESSION_TOUCH_SECONDS, True),
    (IDLE - 1, True),
])
def test_a_request_records_itself_at_most_once_a_touch_interval(last_seen: int, touch: bool) -> None:
    session = Session(id="wss_1", principal=Principal("org_1", "usr_1", "tok_1"), csrf_token="x",
                      display_name="Alex", last_seen_at=ago(last_seen))
    assert needs_touch(session, NOW) is touch


PER_CLIENT = budgets.WEB_SIGNIN_ATTEMPTS_PER_CLIENT
PER_ADDRESS = budgets.WEB_SIGNIN_ATTEMPTS_PER_ADDRESS
WINDOW = budgets.WEB_SIGNIN_WINDOW_SECONDS


@pytest.mark.parametrize(("client", "address", "limit_name", "retry_after"), [
    (AttemptCount(0, None), None, None, None),
    (AttemptCount(PER_CLIENT - 1, ago(60)), None, None, None),
    (AttemptCount(PER_CLIENT, ago(60)), None, "WEB_SIGNIN_ATTEMPTS_PER_CLIENT", WINDOW - 60),
    (AttemptCount(0, None), AttemptCount(PER_ADDRESS - 1, ago(5)), None, None),
    (AttemptCount(3, ago(5)), AttemptCount(PER_ADDRESS, ago(100)), "WEB_SIGNIN_ATTEMPTS_PER_ADDRESS",
     WINDOW - 100),
    # The client is named first when both are reached.
    (AttemptCount(PER_CLIENT, ago(10)), AttemptCount(PER_ADDRESS, ago(10)), "WEB_SIGNIN_ATTEMPTS_PER_CLIENT",
     WINDOW - 10),
    # An attempt about to leave the window still waits one second, never zero.
    (AttemptCount(PER_CLIENT, ago(WINDOW)), None, "WEB_SIGNIN_ATTEMPTS_PER_CLIENT", 1),
])
def test_attempt_limits(client: AttemptCount, address: AttemptCount | None, limit_name: str | None,
                        retry_after: int | None) -> None:
    refusal = decide_attempts(client, address, NOW)
    if limit_name is None:
        assert refusal is None
        return
    assert refusal is not None and refusal.code == "E_SIGNIN_RATE_LIMITED" and refusal.status == 429
    assert refusal.detail["limit_name"] == limit_name and limit_name in refusal.what
    assert refusal.detail["retry_after_seconds"] == retry_after


@pytest.mark.parametrize("outcome", [*RequestOutcome, *VerifyOutcome])
def test_every_code_outcome_has_an_answer(outcome: RequestOutcome | VerifyOutcome) -> None:
    refusal = refusal_for(outcome)
    if outcome in (RequestOutcome.ALLOWED, VerifyOutcome.VERIFIED):
        assert refusal is None
    else:
        assert refusal is not None and refusal.code.startswith("E_SIGNIN_CODE_")
        assert refusal.what and refusal.why and refusal.fix


def test_the_unavailable_refusal_says_nothing_about_why() -> None:
    refusal = refusal_for(RequestOutcome.PROVIDER_UNAVAILABLE)
    assert refusal is not None and refusal.status == 503
    text = f"{refusal.what} {refusal.why} {refusal.fix}".lower()
    assert not any(word in text for word in ("quota", "key", "domain", "provider", "limit"))


@pytest.mark.parametrize(("given", "kept"), [
    (None, "/"), ("", "/"), ("/", "/"), ("/conversations/cnv_1?tab=notes", "/conversations/cnv_1?tab=notes"),
    ("//evil.test/", "/"), ("/\\evil.test", "/"), ("https://evil.test/", "/"), ("javascript:alert(1)", "/"),
])
def test_the_next_page_stays_on_the_node(given: str | None, kept: str) -> None:
    assert local_path(given) == kept


@pytest.mark.parametrize(("path", "page"), [
    ("/", True), ("/signin", True), ("/no-such-page", True), ("/api", False), ("/api/health", False),
    ("/docs", False), ("/openapi.json", False), ("/metrics", False), ("/static/app.js", False),
])
def test_which_unmatched_paths_are_pages(path: str, page: bool) -> None:
    assert is_page({"type": "http", "path": path}) is page
