"""The realtime reserve and the verification allowance attacked (spec/transactional.md §2 "Reserve", §4).

An outsider found that one realtime ``POST /api/mail`` with many recipients spent past the reserve kept for
deferrable notices (the breaker was asked once, each recipient is its own provider request), and that the
60 s cooldown alone let one person ask for 1,440 codes a day. The breaker now counts the requests a send
will make, a realtime call names at most ``REALTIME_RECIPIENTS_MAX`` recipients, and a person asks for at
most ``VERIFICATION_CODES_PER_PERSON_PER_DAY`` codes per UTC day. Tables for the pure rules; the API
against the local Resend server, which counts every request.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode import budgets
from mailnode.codes.verification import (
    RequestOutcome,
    VerificationRules,
    daily_cap_reached,
    may_request,
    utc_day_bounds,
)
from mailnode.directory.people import create_user
from mailnode.directory.tokens import create_token
from mailnode.governance.provider import (
    TOKEN_REALTIME_REFUSED_ON_RESERVE,
    ProviderStatus,
    Refusal,
    may_send,
)
from mailnode.outbound import sweeper
from mailnode.schema.outbound import send_manifests
from mailnode.vocabulary.mail_classes import MailClass
from tests.conftest import bearer
from tests.outbound.resend.conftest import T0
from tests.support.resend_emulator import Fault

from .conftest import Org, mail_body

NOW = datetime(2026, 3, 20, 15, 0, tzinfo=UTC)
FRESH = ProviderStatus(transport="resend")


def _read(reading: int) -> ProviderStatus:
    return replace(FRESH, daily_used=reading, daily_observed_at=NOW)


# --- the breaker counts requests (pure) -------------------------------------------------------------


@pytest.mark.parametrize(("reading", "requests", "realtime", "deferrable"), [
    (85, 1, True, True),
    (85, 5, True, True),      # 85 + 5 = 90: the last realtime request below the ceiling
    (85, 6, False, True),     # 91 would spend one of the reserve's sends
    (85, 100, False, False),  # past the daily limit too
    (89, 1, True, True),
    (89, 2, False, True),
    (90, 1, False, True),     # one request is ``reading >= ceiling``, as before
    (0, 90, True, True),
    (0, 91, False, True),
    (95, 5, False, True),
    (95, 6, False, False),
    (100, 1, False, False),
])
def test_the_ceiling_bounds_the_reading_after_the_send(
        reading: int, requests: int, realtime: bool, deferrable: bool) -> None:
    rt = may_send(_read(reading), MailClass.REALTIME, NOW, requests=requests)
    assert rt.allowed is realtime
    if not realtime:
        assert rt.reason is Refusal.QUOTA_CEILING
        assert rt.reopens_at == datetime(2026, 3, 21, tzinfo=UTC)
    assert may_send(_read(reading), MailClass.DEFERRABLE, NOW, requests=requests).allowed is deferrable


def test_a_refusal_on_the_reserve_alone_names_the_requests() -> None:
    decision = may_send(_read(85), MailClass.REALTIME, NOW, requests=6)
    assert decision.log_token == TOKEN_REALTIME_REFUSED_ON_RESERVE
    assert decision.logs[-1].detail["requests"] == 6


@pytest.mark.parametrize("requests", [0, -1])
def test_a_send_of_no_requests_is_a_callers_defect(requests: int) -> None:
    with pytest.raises(ValueError):
        may_send(FRESH, MailClass.REALTIME, NOW, requests=requests)


def test_without_a_reading_today_the_count_does_not_apply() -> None:
    assert may_send(FRESH, MailClass.REALTIME, NOW, requests=budgets.SEND_RECIPIENTS_MAX).allowed
    yesterday = replace(FRESH, daily_used=85, daily_observed_at=NOW - timedelta(days=1))
    assert may_send(yesterday, MailClass.REALTIME, NOW, requests=10).allowed


# --- the API's realtime path, against the local Resend server ----------------------------------------


def _manifests(org: Org) -> int:
    with org.node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(send_manifests)).scalar_one())


def _reading(org: Org, value: str) -> None:
    """Make the provider report ``value`` used today, through one deferrable hand-over."""
    org.emulator.config.forced_daily_quota = value
    org.deferrable(subject="Reading")
    sweeper.run_pass(org.node)
    assert org.status().daily_used == int(value)
    # A fresh one-second rate window (spec/resend.md §6) for what the test sends next.
    org.clock.advance(1)


def _people(n: int) -> list[str]:
    return [f"person{i}@remote.test" for i in range(n)]


def test_a_realtime_call_whose_recipients_would_spend_the_reserve_is_refused_before_anything_is_sealed(
        api: Any, org: Org, app_token: str) -> None:
    _reading(org, "87")
    before = (org.requests(), _manifests(org))
    # 87 + 4 = 91: within the per-call budget, but one request past the realtime ceiling of 90.
    r = api.post("/api/mail", json=mail_body(org, to=_people(4)), headers=bearer(app_token))
    assert (r.status_code, r.json()["error"]) == (503, "E_SEND_UNAVAILABLE")
    assert "quota" not in r.text.lower() and "send_id" not in r.json()["detail"]
    assert (org.requests(), _manifests(org)) == before, "refused before minting: no request, no send"
    # The reserve is still there for the deferrable notice.
    late = org.deferrable(subject="Your upload stopped arriving")
    sweeper.run_pass(org.node)
    assert org.send(late.id).state == "handed_over"


def test_a_realtime_call_that_fits_under_the_ceiling_goes(api: Any, org: Org, app_token: str) -> None:
    _reading(org, "85")
    before = org.requests()
    r = api.post("/api/mail", json=mail_body(org, to=_people(5)), headers=bearer(app_token))
    assert r.status_code == 200, r.text
    assert r.json()["mail"]["state"] == "handed_over"
    assert org.requests() == before + 5


def test_a_realtime_call_past_the_per_call_budget_is_422_and_sends_nothing(
        api: Any, org: Org, app_token: str) -> None:
    limit = budgets.REALTIME_RECIPIENTS_MAX
    r = api.post("/api/mail", json=mail_body(org, to=_people(limit - 1), cc=["copy@remote.test"],
                                             bcc=["hidden@remote.test"]), headers=bearer(app_token))
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "E_REALTIME_TOO_MANY_RECIPIENTS"
    assert body["detail"] == {"limit_name": "REALTIME_RECIPIENTS_MAX", "limit": limit, "observed": limit + 1}
    assert body["why"] and "deferrable" in body["fix"] and "POST /api/mail" in body["fix"]
    assert (org.requests(), _manifests(org)) == (0, 0)
    # At the budget, realtime goes (one provider request per recipient).
    ok = api.post("/api/mail", json=mail_body(org, key="k-2", to=_people(limit)), headers=bearer(app_token))
    assert ok.status_code == 200, ok.text
    assert org.requests() == limit
    # The same recipients as deferrable mail are fine: the sweeps spend them, under the deferrable ceiling.
    d = api.post("/api/mail", json=mail_body(org, "deferrable", key="k-3", to=_people(limit + 1)),
                 headers=bearer(app_token))
    assert d.status_code == 202, d.text


# --- the verification daily cap (pure) --------------------------------------------------------------


@pytest.mark.parametrize(("codes_today", "reached"), [
    (0, False),
    (1, False),
    (budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY - 1, False),
    (budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY, True),
    (budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY + 7, True),
    (-1, True),  # a damaged count fails closed
])
def test_the_daily_cap(codes_today: int, reached: bool) -> None:
    assert daily_cap_reached(codes_today) is reached


@pytest.mark.parametrize(("now", "start", "end"), [
    (datetime(2026, 3, 20, 15, 0, tzinfo=UTC), datetime(2026, 3, 20, tzinfo=UTC), datetime(2026, 3, 21, tzinfo=UTC)),
    (datetime(2026, 3, 20, 0, 0, tzinfo=UTC), datetime(2026, 3, 20, tzinfo=UTC), datetime(2026, 3, 21, tzinfo=UTC)),
    (datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC), datetime(2026, 12, 31, tzinfo=UTC),
     datetime(2027, 1, 1, tzinfo=UTC)),
])
def test_the_day_the_cap_counts_in_is_the_utc_day(now: datetime, start: datetime, end: datetime) -> None:
    assert utc_day_bounds(now) == (start, end)


@pytest.mark.parametrize(("status", "codes_today", "outcome"), [
    (FRESH, 0, RequestOutcome.ALLOWED),
    (FRESH, 4, RequestOutcome.ALLOWED),
    (FRESH, 5, RequestOutcome.DAILY_CAP),
    (_read(90), 5, RequestOutcome.PROVIDER_UNAVAILABLE),  # the breaker is read first
    (_read(89), 4, RequestOutcome.ALLOWED),               # one code is one request: 89 + 1 = 90
])
def test_may_request_reads_the_breaker_then_the_daily_cap(
        status: ProviderStatus, codes_today: int, outcome: RequestOutcome) -> None:
    decision = may_request(None, status, NOW, VerificationRules(codes_per_day=5), codes_today=codes_today)
    assert decision.outcome is outcome
    if outcome is RequestOutcome.DAILY_CAP:
        assert decision.resets_at == datetime(2026, 3, 21, tzinfo=UTC)
        assert decision.retry_after_seconds == 9 * 3600


# --- the verification daily cap over HTTP -------------------------------------------------------------


def _press(api: Any, org: Org, address: str = "alex.home@remote.test") -> Any:
    return api.post("/api/me/contact-email", json={"address": address}, headers=bearer(org.installed.token))


def test_at_the_daily_cap_a_press_is_429_with_when_it_resets_and_costs_no_provider_request(
        api: Any, org: Org) -> None:
    cap = budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY
    for i in range(cap):
        # A different address each time: changing the address does not escape the count either.
        r = _press(api, org, f"try{i}@remote.test")
        assert r.status_code == 200, r.text
        org.clock.advance(budgets.VERIFICATION_COOLDOWN_SECONDS)
    assert org.requests() == cap
    r = _press(api, org)
    assert r.status_code == 429, r.text
    body = r.json()
    assert body["error"] == "E_VERIFICATION_DAILY_CAP"
    assert body["message"] and body["why"] and "POST /api/me/contact-email" in body["fix"]
    assert "00:00 UTC" in body["fix"]
    midnight = datetime(T0.year, T0.month, T0.day, tzinfo=UTC) + timedelta(days=1)
    assert body["detail"]["resets_at"] == midnight.isoformat()
    assert body["detail"]["retry_after_seconds"] == int((midnight - org.clock.now()).total_seconds())
    assert (body["detail"]["limit"], body["detail"]["observed"]) == (cap, cap)
    assert org.requests() == cap, "at the cap nothing is minted and no provider request is made"
    # The code already sent still works: the refusal wrote nothing.
    me = api.get("/api/me", headers=bearer(org.installed.token)).json()["me"]
    assert me["contact_email"] == f"try{cap - 1}@remote.test"
    # It resets at 00:00 UTC, not 24 h after the first press.
    org.clock.set(midnight - timedelta(seconds=1))
    assert _press(api, org).status_code == 429
    org.clock.set(midnight)
    assert _press(api, org).status_code == 200
    assert org.requests() == cap + 1


def test_failed_sends_count_toward_the_cap(api: Any, org: Org) -> None:
    cap = budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY
    org.emulator.add_fault(Fault(status=500, name="application_error", times=cap))
    for _ in range(cap):
        r = _press(api, org)
        assert (r.status_code, r.json()["error"]) == (503, "E_VERIFICATION_UNAVAILABLE")
        org.clock.advance(budgets.VERIFICATION_COOLDOWN_SECONDS)
    spent = org.requests()
    r = _press(api, org)
    assert (r.status_code, r.json()["error"]) == (429, "E_VERIFICATION_DAILY_CAP")
    assert org.requests() == spent


def test_the_cap_is_per_person(api: Any, org: Org) -> None:
    cap = budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY
    for _ in range(cap):
        assert _press(api, org).status_code == 200
        org.clock.advance(budgets.VERIFICATION_COOLDOWN_SECONDS)
    assert _press(api, org).status_code == 429
    with org.node.begin() as conn:
        uid = create_user(conn, org_id=org.installed.org_id, actor_id=None, at=org.clock.now(),
                          email="bea@example.test")["id"]
        _, token = create_token(conn, org_id=org.installed.org_id, principal_id=uid, at=org.clock.now(),
                                actor_id=None, label="test")
    r = api.post("/api/me/contact-email", json={"address": "bea.home@remote.test"}, headers=bearer(token))
    assert r.status_code == 200, r.text
