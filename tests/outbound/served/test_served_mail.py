"""The application mail API on a real ``mailnode serve`` whose transport is the local Resend server
(spec/transactional.md §3, §6): the notify sweeper's own DBOS schedule hands deferrable mail over with no
test calling it, a provider quota pause keeps deferrable mail's attempts, and realtime mail answers only
after the provider did (200), or the vague 503 without a provider request while the breaker is shut."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mailnode.outbound.realtime import VAGUE_SEND_UNAVAILABLE
from tests.support.resend_emulator import Fault, ResendEmulator
from tests.support.served import Served

from .conftest import SWEEPER_SECONDS, Client, app_token, mail, metric_samples, wait_for

pytestmark = pytest.mark.slow


def _clients(served: Served) -> tuple[Client, Client]:
    """The administrator and a freshly created, granted application."""
    base = f"http://127.0.0.1:{served.http}"
    _, token = app_token(served)
    return Client(base, served.installed["token"]), Client(base, token)


def _mail_state(app: Client, send_id: str) -> dict[str, Any]:
    r = app.call("GET", f"/api/mail/{send_id}")
    assert r.status_code == 200, r.text
    return dict(r.json()["mail"])


def _counter(admin: Client, name: str, label: str, value: str) -> float:
    """One sample of a counter as the served process exposes it on /metrics (0 when absent)."""
    r = admin.call("GET", "/metrics")
    assert r.status_code == 200, r.text
    return metric_samples(r.text).get((name, ((label, value),)), 0.0)


def _sweeper_passes(admin: Client, send_mode: str) -> float:
    """``mailnode_sweeper_passes_total{send_mode}`` of the served process."""
    return _counter(admin, "mailnode_sweeper_passes_total", "send_mode", send_mode)


def _resend(admin: Client) -> dict[str, Any]:
    r = admin.call("GET", "/api/provider-status")
    assert r.status_code == 200, r.text
    return dict(next(p for p in r.json()["providers"] if p["transport"] == "resend"))


def test_the_sweepers_own_schedule_re_drives_deferrable_mail_to_handed_over(
        served: Served, emulator: ResendEmulator) -> None:
    # The first hand-over fails (a 5xx: it may have reached the provider). A deferrable send that has spent
    # an attempt is the notify sweeper's alone (the dispatch sweep takes at most its first hand-over), so
    # what hands it over below is the sweeper's DBOS schedule: nothing in this test sweeps.
    emulator.add_fault(Fault(status=500, name="application_error"))
    served.start()
    admin, app = _clients(served)
    r = app.call("POST", "/api/mail", json=mail(served, "deferrable", "upload-7-stopped"))
    assert r.status_code == 202, r.text
    sent = r.json()["mail"]
    assert sent["id"].startswith("snd_") and sent["mail_class"] == "deferrable" and sent["state"] == "held"

    done = wait_for("the deferrable send handed over by the scheduled sweeper",
                    lambda: (m := _mail_state(app, sent["id"]))["state"] == "handed_over" and m,
                    seconds=max(30.0, 10 * SWEEPER_SECONDS))
    assert done["attempts"] == 2
    assert [(x["address"], x["submission_state"]) for x in done["recipients"]] == [
        ("researcher@remote.test", "handed_over")]
    assert [q.status for q in emulator.sends()] == [500, 200]
    assert len(emulator.emails) == 1 and b"Your upload stopped" in emulator.sends()[1].body
    assert _sweeper_passes(admin, "all") >= 1
    assert _counter(admin, "mailnode_sweeper_rows_total", "verdict", "send") >= 1


def test_a_daily_quota_pause_shows_in_provider_status_and_keeps_deferrable_attempts(
        served: Served, emulator: ResendEmulator) -> None:
    emulator.config.daily_limit = 0  # every send is answered 429 daily_quota_exceeded
    served.start()
    admin, app = _clients(served)
    assert _resend(admin)["state"] == "open"
    r = app.call("POST", "/api/mail", json=mail(served, "deferrable", "quota-day"))
    assert r.status_code == 202, r.text
    send_id = r.json()["mail"]["id"]

    status = wait_for("the provider pause", lambda: (p := _resend(admin))["state"] == "shut" and p)
    now = datetime.now(UTC)
    midnight = datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
    assert status["pause_kind"] == "daily_quota"
    assert datetime.fromisoformat(status["unavailable_until"]) == midnight
    assert len(emulator.sends()) == 1 and emulator.sends()[0].status == 429
    first = _mail_state(app, send_id)
    assert (first["state"], first["attempts"]) == ("throttled", 1)

    # Several more scheduled passes see the breaker shut: they send nothing and spend no attempt.
    before = _sweeper_passes(admin, "none")
    wait_for("three more sweeper passes", lambda: _sweeper_passes(admin, "none") >= before + 3)
    later = _mail_state(app, send_id)
    assert (later["state"], later["attempts"]) == ("throttled", 1)
    assert len(emulator.sends()) == 1
    assert _resend(admin)["state"] == "shut"


def test_realtime_answers_200_only_after_the_provider_accepted(served: Served, emulator: ResendEmulator) -> None:
    served.start()
    _, app = _clients(served)
    # The provider stores the mail, then takes 1.5 s to answer: the node's answer waits for it.
    emulator.add_fault(Fault(delay_after_accept=1.5))
    started = time.monotonic()
    r = app.call("POST", "/api/mail", json=mail(served, "realtime", "code-1", to="code@remote.test"))
    took = time.monotonic() - started
    assert r.status_code == 200, r.text
    assert r.json()["mail"]["state"] == "handed_over"
    [request] = emulator.sends()
    assert request.status == 200, "the provider had answered before the node did"
    assert took >= 1.5
    assert len(emulator.emails) == 1


def test_realtime_answers_the_vague_503_with_no_provider_request_while_the_breaker_is_shut(
        served: Served, emulator: ResendEmulator) -> None:
    served.start()
    admin, app = _clients(served)
    emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    first = app.call("POST", "/api/mail", json=mail(served, "realtime", "code-1", to="code@remote.test"))
    assert first.status_code == 503 and first.json()["error"] == "E_SEND_UNAVAILABLE"
    assert len(emulator.sends()) == 1
    assert _resend(admin)["state"] == "shut"

    for n in range(3):
        r = app.call("POST", "/api/mail", json=mail(served, "realtime", f"code-{n + 2}", to="code@remote.test"))
        assert r.status_code == 503, r.text
        body = r.json()
        assert body["error"] == "E_SEND_UNAVAILABLE" and VAGUE_SEND_UNAVAILABLE in r.text
        assert "quota" not in r.text.lower() and "resend" not in r.text.lower()
    assert len(emulator.sends()) == 1, "a shut breaker costs zero provider requests"
