"""``GET /metrics`` as a scraper sees it (spec/transactional.md §2 "Alerting cannot be mail";
docs/operations.md "Prometheus metrics and alert rules"): administrators only, Prometheus text that
``prometheus_client``'s own parser accepts, and on a real ``mailnode serve`` the provider breaker and quota
reading, the rate breakers, sends by state, the sweeper's outcomes and Butler runs by state. A quota with no
reading today is absent, never 0; an unarmed rate breaker says ``armed 0`` and has no observed, tripped or
percent sample (never a green 0); the sweeper's counters start at an observed 0 for every verdict, with no
``_created`` series beside them."""

from __future__ import annotations

import json
import smtplib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from mailnode.cli import app as cli_app
from mailnode.config import Settings
from mailnode.governance import breakers
from mailnode.metrics import breaker_samples
from mailnode.outbound.sweeper_rules import SendMode, SweepVerdict
from tests.conftest import bearer
from tests.support.resend_emulator import Fault, ResendEmulator
from tests.support.served import Served

from .conftest import Client, app_token, mail, metric_samples, wait_for

MAILBOX = "support@example.test"


def _sample(samples: dict[Any, float], name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def _names(samples: dict[Any, float]) -> set[str]:
    return {name for name, _ in samples}


def test_metrics_are_for_administrators_only(api: Any, installed: Any, settings: Settings) -> None:
    nobody = api.get("/metrics")
    assert nobody.status_code == 401 and nobody.json()["error"] == "E_UNAUTHENTICATED"
    wrong = api.get("/metrics", headers=bearer("mn_not-a-token"))
    assert wrong.status_code == 401 and wrong.json()["error"] == "E_UNAUTHENTICATED"
    assert api.post("/api/users", json={"email": "sam@example.test"},
                    headers=bearer(installed.token)).status_code == 201
    minted = CliRunner().invoke(cli_app, ["token", "create", "--user", "sam@example.test", "--json",
                                          "--data-dir", str(settings.data_dir)],
                                env={"MAILNODE_DATABASE_URL": settings.database_url})
    assert minted.exit_code == 0, minted.output
    person = api.get("/metrics", headers=bearer(json.loads(minted.stdout)["token"]))
    assert person.status_code == 403 and person.json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    assert "mailnode_" not in person.text
    admin = api.get("/metrics", headers=bearer(installed.token))
    assert admin.status_code == 200
    assert admin.headers["content-type"].startswith("text/plain; version=")  # the text exposition format
    assert metric_samples(admin.text), "the parser read samples"


NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _rate(observed: int, observations: int) -> breakers.Reading:
    return breakers.read_rate(breakers.Breaker.BOUNCE_RATE, observed=observed, observations=observations,
                              max_percent=30, min_observations=20, oldest=None, now=NOW, basis="events")


@pytest.mark.parametrize(("reading", "samples"), [
    (_rate(0, 0), {"armed": 0.0}),                         # nothing observed: armed 0, nothing else
    (_rate(3, 3), {"armed": 0.0}),                         # too few: still no observed/tripped/percent
    (_rate(0, 20), {"armed": 1.0, "observed": 0.0, "tripped": 0.0, "percent": 0.0}),  # a real, armed 0 %
    (_rate(7, 20), {"armed": 1.0, "observed": 7.0, "tripped": 1.0, "percent": 35.0}),
    (breakers.read_volume(observed=0, limit=500, oldest=None, now=NOW),
     {"armed": 1.0, "observed": 0.0, "tripped": 0.0}),     # volume is always armed and has no percent
])
def test_breaker_samples(reading: breakers.Reading, samples: dict[str, float]) -> None:
    assert breaker_samples(reading) == samples


def test_a_scrape_has_no_reassuring_zero_for_an_unarmed_breaker_and_no_created_series(
        api: Any, installed: Any) -> None:
    r = api.get("/metrics", headers=bearer(installed.token))
    assert r.status_code == 200, r.text
    assert "_created" not in r.text, "prometheus_client's created-timestamp series are off on /metrics"
    samples = metric_samples(r.text)
    org = installed.org_id
    assert _sample(samples, "mailnode_breaker_armed", org_id=org, breaker="volume") == 1.0
    assert _sample(samples, "mailnode_breaker_tripped", org_id=org, breaker="volume") == 0.0
    for breaker in ("bounce_rate", "complaint_rate"):
        assert _sample(samples, "mailnode_breaker_armed", org_id=org, breaker=breaker) == 0.0, breaker
        for name in ("mailnode_breaker_observed", "mailnode_breaker_tripped", "mailnode_breaker_percent"):
            assert _sample(samples, name, org_id=org, breaker=breaker) is None, (name, breaker)
    # Present from the start (a counter absent until its first increment would miss the first give-up); the
    # counters are the process's, so an earlier test in this process may have moved it past 0.
    assert _sample(samples, "mailnode_sweeper_rows_total", verdict="give_up") is not None


def _scrape(admin: Client) -> dict[Any, float]:
    r = admin.call("GET", "/metrics")
    assert r.status_code == 200, r.text
    return metric_samples(r.text)


@pytest.mark.slow
def test_a_fresh_node_shows_its_breakers_open_unarmed_rates_and_no_quota_reading(served: Served) -> None:
    served.start()
    admin = Client(f"http://127.0.0.1:{served.http}", served.installed["token"])
    org = served.installed["org_id"]
    # After at least one scheduled sweeper pass, so the zeros below are observations, not a process not yet run.
    samples = wait_for("a sweeper pass", lambda: (s := _scrape(admin))
                       and (_sample(s, "mailnode_sweeper_passes_total", send_mode="all") or 0) >= 1 and s)

    assert _sample(samples, "mailnode_provider_breaker", transport="resend", state="open") == 1.0
    assert _sample(samples, "mailnode_provider_breaker", transport="resend", state="shut") == 0.0
    # No reading today: absent, never a reassuring 0 (docs/operations.md).
    assert {"mailnode_provider_quota_percent", "mailnode_provider_quota_used", "mailnode_provider_paused",
            "mailnode_provider_unavailable_until_seconds"}.isdisjoint(_names(samples))
    for verdict in SweepVerdict:
        assert _sample(samples, "mailnode_sweeper_rows_total", verdict=verdict.value) == 0.0, verdict
    for mode in SendMode:
        assert _sample(samples, "mailnode_sweeper_passes_total", send_mode=mode.value) is not None, mode
    assert _sample(samples, "mailnode_breaker_tripped", org_id=org, breaker="volume") == 0.0
    assert _sample(samples, "mailnode_breaker_observed", org_id=org, breaker="volume") == 0.0
    for breaker in ("bounce_rate", "complaint_rate"):
        # Unarmed ("cannot trip" on GET /api/breakers): armed 0, and no observed or tripped 0 to read as green.
        assert _sample(samples, "mailnode_breaker_armed", org_id=org, breaker=breaker) == 0.0
        assert _sample(samples, "mailnode_breaker_tripped", org_id=org, breaker=breaker) is None
        assert _sample(samples, "mailnode_breaker_observed", org_id=org, breaker=breaker) is None
    assert not any(name.endswith("_created") for name in _names(samples))
    assert {"mailnode_sends", "mailnode_butler_runs"}.isdisjoint(_names(samples)), "nothing to count yet"


def _butler_program() -> dict[str, Any]:
    """A Butler that looks up the new mail's case and assigns it to itself."""
    return {"apiVersion": "mailnode/v1", "kind": "Butler", "metadata": {"name": "assigns", "owner": "team:test"},
            "capabilities": [{"action": a, "resource": f"mailbox:{MAILBOX}"}
                             for a in ("mailbox.metadata.read", "send.propose")],
            "trigger": {"event": "mail.received", "mailbox": MAILBOX}, "entry": "read",
            "nodes": [{"id": "read", "type": "lookup", "entity": "case", "entityId": "${event.case_id}", "as": "c",
                       "next": "take"},
                      {"id": "take", "type": "case.assign", "caseId": "${steps.c.id}", "assignee": "${butler.id}",
                       "next": None}]}


@pytest.mark.slow
def test_a_scrape_reads_the_quota_sends_runs_sweeper_outcomes_and_a_pause(
        served: Served, emulator: ResendEmulator) -> None:
    emulator.config.forced_daily_quota = "85"
    served.start()
    base = f"http://127.0.0.1:{served.http}"
    admin = Client(base, served.installed["token"])
    _, token = app_token(served)
    app = Client(base, token)

    # Its first hand-over fails, so the one that succeeds is the notify sweeper's re-drive (the dispatch
    # sweep takes at most a deferrable send's first hand-over): the sweeper's outcomes count it.
    emulator.add_fault(Fault(status=500, name="application_error"))
    first = app.call("POST", "/api/mail", json=mail(served, "deferrable", "first")).json()["mail"]["id"]
    wait_for("the first send handed over",
             lambda: app.call("GET", f"/api/mail/{first}").json()["mail"]["state"] == "handed_over")
    served.publish(_butler_program(), "send.propose", "mailbox.metadata.read")
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("customer@remote.test", [MAILBOX], b"From: c@remote.test\r\nTo: support@example.test\r\n"
                   b"Subject: where is it\r\nMessage-ID: <m1@remote.test>\r\n\r\nhi\r\n")
    served.run(lambda r: r["state"] == "finished")

    s = _scrape(admin)
    assert _sample(s, "mailnode_provider_quota_used", transport="resend") == 85.0
    assert _sample(s, "mailnode_provider_quota_percent", transport="resend") == 85.0
    assert _sample(s, "mailnode_provider_breaker", transport="resend", state="open") == 1.0
    assert _sample(s, "mailnode_sends", state="handed_over", mail_class="deferrable") == 1.0
    assert (_sample(s, "mailnode_sweeper_rows_total", verdict="send") or 0) >= 1
    assert _sample(s, "mailnode_butler_runs", state="finished") == 1.0

    # The provider's quota runs out: the pause, when it ends, and the reading pinned at the limit.
    emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    second = app.call("POST", "/api/mail", json=mail(served, "deferrable", "second")).json()["mail"]["id"]
    # The breaker shuts in the transaction that records the 429; the send is marked throttled in the one
    # after it, so the scrape waits for both (a scrape between the two found no throttled send).
    wait_for("the second send throttled", lambda: app.call("GET", f"/api/mail/{second}").json()["mail"]["state"]
             == "throttled")
    s = wait_for("the pause on /metrics", lambda: (x := _scrape(admin))
                 and _sample(x, "mailnode_provider_breaker", transport="resend", state="shut") == 1.0 and x)
    now = datetime.now(UTC)
    midnight = datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
    assert _sample(s, "mailnode_provider_breaker", transport="resend", state="open") == 0.0
    assert _sample(s, "mailnode_provider_paused", transport="resend", kind="daily_quota") == 1.0
    assert _sample(s, "mailnode_provider_unavailable_until_seconds", transport="resend") == midnight.timestamp()
    assert _sample(s, "mailnode_provider_quota_used", transport="resend") == 100.0
    assert _sample(s, "mailnode_provider_quota_percent", transport="resend") == 100.0
    assert _sample(s, "mailnode_sends", state="throttled", mail_class="deferrable") == 1.0
    assert app.call("GET", f"/api/mail/{second}").json()["mail"]["state"] == "throttled"
    sent = _sample(s, "mailnode_sweeper_rows_total", verdict="send")
    wait_for("two passes that send nothing while the breaker is shut",
             lambda: (_sample(_scrape(admin), "mailnode_sweeper_passes_total", send_mode="none") or 0) >= 2)
    assert _sample(_scrape(admin), "mailnode_sweeper_rows_total", verdict="send") == sent
