"""Verification codes over HTTP (spec/transactional.md §4) and the application mail API (§6), against the
local Resend server, which counts every request."""

from __future__ import annotations

import re
from typing import Any

from mailnode import budgets
from mailnode.outbound import sweeper
from tests.conftest import bearer
from tests.support.resend_emulator import Fault

from .conftest import Org


def _code(org: Org) -> str:
    body = org.emulator.sends()[-1].body.decode()
    found = re.search(r"code is (\d+)", body)
    assert found, body
    return found.group(1)


def _me(api: Any, org: Org) -> dict[str, Any]:
    r = api.get("/api/me", headers=bearer(org.installed.token))
    assert r.status_code == 200, r.text
    return dict(r.json()["me"])


def test_verification_sends_awaits_and_verifies(api: Any, org: Org) -> None:
    h = bearer(org.installed.token)
    assert _me(api, org)["contact_email_verified"] is False
    r = api.post("/api/me/contact-email", json={"address": "alex.home@remote.test"}, headers=h)
    assert r.status_code == 200, r.text
    assert org.requests() == 1
    r = api.post("/api/me/contact-email/verify", json={"code": "000000" if _code(org) != "000000" else "111111"},
                 headers=h)
    assert r.status_code == 422 and r.json()["error"] == "E_VERIFICATION_CODE_WRONG"
    r = api.post("/api/me/contact-email/verify", json={"code": _code(org)}, headers=h)
    assert r.status_code == 200, r.text
    me = _me(api, org)
    assert me["contact_email"] == "alex.home@remote.test" and me["contact_email_verified"] is True
    # The code is spent: checking again says the address is verified, not "request a new code".
    r = api.post("/api/me/contact-email/verify", json={"code": _code(org)}, headers=h)
    assert r.status_code == 409 and r.json()["error"] == "E_CONTACT_EMAIL_ALREADY_VERIFIED", r.text
    assert _me(api, org)["contact_email_verified"] is True and org.requests() == 1


def test_verification_during_a_shut_breaker_costs_zero_provider_requests(api: Any, org: Org) -> None:
    org.emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    org.deferrable()
    sweeper.run_pass(org.node)
    before = org.requests()
    h = bearer(org.installed.token)
    for _ in range(5):
        r = api.post("/api/me/contact-email", json={"address": "alex.home@remote.test"}, headers=h)
        assert r.status_code == 503 and r.json()["error"] == "E_VERIFICATION_UNAVAILABLE"
        assert "quota" not in r.text.lower()
    assert org.requests() == before
    # Nothing was minted, written or armed: no record, so verify asks for a new code.
    r = api.post("/api/me/contact-email/verify", json={"code": "123456"}, headers=h)
    assert r.status_code == 409 and r.json()["error"] == "E_VERIFICATION_REQUEST_NEW"


def test_a_failed_send_leaves_a_cooldown_with_its_code_cleared_and_spends_no_attempt(api: Any, org: Org) -> None:
    h = bearer(org.installed.token)
    org.emulator.add_fault(Fault(status=500, name="application_error"))
    r = api.post("/api/me/contact-email", json={"address": "alex.home@remote.test"}, headers=h)
    assert r.status_code == 503 and r.json()["error"] == "E_VERIFICATION_UNAVAILABLE"
    r = api.post("/api/me/contact-email", json={"address": "alex.home@remote.test"}, headers=h)
    assert r.status_code == 429 and r.json()["error"] == "E_VERIFICATION_COOLDOWN"
    for _ in range(budgets.VERIFICATION_MAX_ATTEMPTS + 1):
        r = api.post("/api/me/contact-email/verify", json={"code": "123456"}, headers=h)
        assert r.status_code == 409 and r.json()["error"] == "E_VERIFICATION_REQUEST_NEW"
    org.clock.advance(budgets.VERIFICATION_COOLDOWN_SECONDS)
    r = api.post("/api/me/contact-email", json={"address": "alex.home@remote.test"}, headers=h)
    assert r.status_code == 200, r.text
    assert api.post("/api/me/contact-email/verify", json={"code": _code(org)}, headers=h).status_code == 200


def test_codes_expire_and_attempts_run_out(api: Any, org: Org) -> None:
    h = bearer(org.installed.token)
    assert api.post("/api/me/contact-email", json={"address": "a@remote.test"}, headers=h).status_code == 200
    good = _code(org)
    wrong = "999999" if good != "999999" else "888888"
    for _ in range(budgets.VERIFICATION_MAX_ATTEMPTS - 1):
        assert api.post("/api/me/contact-email/verify", json={"code": wrong}, headers=h).status_code == 422
    r = api.post("/api/me/contact-email/verify", json={"code": wrong}, headers=h)
    assert r.json()["error"] == "E_VERIFICATION_ATTEMPTS_EXHAUSTED"
    r = api.post("/api/me/contact-email/verify", json={"code": good}, headers=h)
    assert r.json()["error"] == "E_VERIFICATION_REQUEST_NEW"
    org.clock.advance(budgets.VERIFICATION_COOLDOWN_SECONDS)
    assert api.post("/api/me/contact-email", json={"address": "a@remote.test"}, headers=h).status_code == 200
    org.clock.advance(budgets.VERIFICATION_CODE_TTL_SECONDS)
    r = api.post("/api/me/contact-email/verify", json={"code": _code(org)}, headers=h)
    assert r.json()["error"] == "E_VERIFICATION_CODE_EXPIRED"


def _app(api: Any, org: Org) -> str:
    r = api.post("/api/apps", json={"name": "research-pipeline"}, headers=bearer(org.installed.token))
    assert r.status_code == 201, r.text
    app_id, token = r.json()["application"]["id"], r.json()["token"]
    r = api.post("/api/access", json={"subject_id": app_id, "relation": "send.propose",
                                      "object_id": org.installed.mailbox_id}, headers=bearer(org.installed.token))
    assert r.status_code in (200, 201), r.text
    return str(token)


def _mail(org: Org, cls: str, key: str, to: str = "researcher@remote.test") -> dict[str, Any]:
    return {"mailbox_id": org.installed.mailbox_id, "class": cls, "to": [to], "subject": "Upload failed",
            "text": "Your upload stopped arriving.", "idempotency_key": key}


def test_the_app_mail_api_realtime_200_deferrable_202_and_one_send_per_key(api: Any, org: Org) -> None:
    h = bearer(_app(api, org))
    r = api.post("/api/mail", json=_mail(org, "realtime", "k-rt"), headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["mail"]["state"] == "handed_over" and org.requests() == 1
    again = api.post("/api/mail", json=_mail(org, "realtime", "k-rt"), headers=h)
    assert again.status_code == 200 and again.json()["mail"]["id"] == r.json()["mail"]["id"]
    assert org.requests() == 1
    d = api.post("/api/mail", json=_mail(org, "deferrable", "k-df"), headers=h)
    assert d.status_code == 202 and d.json()["mail"]["state"] == "held"
    d2 = api.post("/api/mail", json=_mail(org, "deferrable", "k-df"), headers=h)
    assert d2.status_code == 202 and d2.json()["mail"]["id"] == d.json()["mail"]["id"]
    sweeper.run_pass(org.node)
    got = api.get(f"/api/mail/{d.json()['mail']['id']}", headers=h)
    assert got.status_code == 200 and got.json()["mail"]["state"] == "handed_over"
    assert org.requests() == 2


def test_the_app_mail_api_realtime_503_is_vague_and_terminal(api: Any, org: Org) -> None:
    h = bearer(_app(api, org))
    org.emulator.add_fault(Fault(status=500, name="application_error"))
    r = api.post("/api/mail", json=_mail(org, "realtime", "k-fail"), headers=h)
    assert r.status_code == 503 and r.json()["error"] == "E_SEND_UNAVAILABLE"
    send_id = r.json()["detail"]["send_id"]
    got = api.get(f"/api/mail/{send_id}", headers=h).json()["mail"]
    assert (got["state"], got["state_reason"]) == ("outcome_unknown", "realtime_not_retried")
    sweeper.run_pass(org.node)
    assert org.requests() == 1, "realtime mail is never retried"


def test_an_app_without_send_propose_may_not_send(api: Any, org: Org) -> None:
    r = api.post("/api/apps", json={"name": "nobody"}, headers=bearer(org.installed.token))
    h = bearer(r.json()["token"])
    r = api.post("/api/mail", json=_mail(org, "deferrable", "k"), headers=h)
    assert r.status_code == 404 and r.json()["error"] == "E_MAY_NOT_SEND_AS_MAILBOX"


def test_provider_status_and_metrics(api: Any, org: Org) -> None:
    org.emulator.config.forced_daily_quota = "85"
    org.deferrable()
    sweeper.run_pass(org.node)
    h = bearer(org.installed.token)
    r = api.get("/api/provider-status", headers=h)
    assert r.status_code == 200, r.text
    resend = next(p for p in r.json()["providers"] if p["transport"] == "resend")
    assert resend["state"] == "open" and resend["daily_used"] == 85 and resend["quota_percent"] == 85.0
    m = api.get("/metrics", headers=h)
    assert m.status_code == 200
    text = m.text
    assert 'mailnode_provider_quota_percent{transport="resend"} 85.0' in text
    assert 'mailnode_provider_breaker{state="open",transport="resend"} 1.0' in text
    assert 'mailnode_sends{mail_class="deferrable",state="handed_over"} 1.0' in text
    assert "mailnode_sweeper_rows_total" in text and "mailnode_breaker_tripped" in text


def test_doctor_lists_users_whose_notices_go_to_an_unverified_address(api: Any, org: Org) -> None:
    from mailnode.doctor.checks import run_checks

    h = bearer(org.installed.token)
    org.emulator.add_fault(Fault(status=500, name="application_error"))
    assert api.post("/api/me/contact-email", json={"address": "typo@remote.test"}, headers=h).status_code == 503
    [finding] = run_checks(org.node, org.installed.org_id, ["unverified_contact_addresses"])
    assert not finding.ok and finding.data["unverified"] == [{"user_id": org.installed.user_id,
                                                              "address": "typo@remote.test"}]
