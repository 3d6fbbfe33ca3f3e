"""The Limits and health page over HTTP (``web.limits``) and its words (``web.limits_view``): breakers unarmed,
armed and tripped as a table, the provider breaker with its pause and reopening time, doctor's findings with
their fix links, the limits form for administrators only (refusals with their codes, nothing written), and the
audit chain's verdict, walked only when asked."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mailnode import audit
from mailnode.doctor.checks import CHECKS
from mailnode.doctor.findings import Finding, Severity
from mailnode.governance import provider_io
from mailnode.governance.breakers import Counts, Limits, read
from mailnode.governance.provider import PauseKind, ProviderStatus
from mailnode.web import limits as web_limits
from mailnode.web.limits_view import (
    FIX_PAGES,
    breaker_row,
    class_ceilings,
    fix_page,
    provider_state_words,
    quota_words,
)
from tests.search.conftest import World
from tests.web.conftest import csrf_of, sign_in

#: A reassuring zero: "0 %" not preceded by a digit (30 % is a limit, not a reading).
ZERO_PERCENT = re.compile(r"(?<![\d.])0(\.0)? ?%")
NOW = datetime(2026, 12, 3, 7, 0, tzinfo=UTC)


def _rows(counts: Counts, signals: str = "dsn") -> dict[str, Any]:
    state = read(counts, now=NOW, delivery_signals=signals)
    return {r.breaker.value: breaker_row(r, NOW) for r in state.readings}


@pytest.mark.parametrize(("counts", "breaker", "status", "reading", "release"), [
    # A fresh node: nothing observed, never a 0 %.
    (Counts(), "bounce_rate", "unarmed", "nothing observed: 0 of 20; no rate is given and it cannot trip", None),
    # Some observations, fewer than the minimum: the shortfall, not a percentage.
    (Counts(bounce_handed_over=12, bounce_n=5, bounce_oldest=NOW - timedelta(hours=1)), "bounce_rate", "unarmed",
     "too few observations: 12 of 20; no rate is given and it cannot trip", None),
    # Armed, under the limit.
    (Counts(bounce_handed_over=40, bounce_n=4, bounce_oldest=NOW - timedelta(hours=1)), "bounce_rate", "armed",
     "10 % (4 bounced of 40 observations)", None),
    # Tripped: the oldest bounce left 1 h into a 6 h window leaves in 5 h, the earliest the rate can fall.
    (Counts(bounce_handed_over=20, bounce_n=10, bounce_oldest=NOW - timedelta(hours=1)), "bounce_rate", "tripped",
     "50 % (10 bounced of 20 observations)",
     ("at 2026-12-03 12:00 UTC at the earliest (in 5 h), when the oldest bounced row leaves the window; "
      "the rate is read again then")),
    # The volume is a count: exact release when the oldest hand-over leaves the hour.
    (Counts(volume_n=3, volume_oldest=NOW - timedelta(minutes=50), limits=Limits(volume_max_recipients=2)), "volume",
     "tripped", "3 of 2 recipients handed over",
     "mail goes again at 2026-12-03 07:10 UTC (in 10 min), when the oldest hand-over leaves the window"),
    (Counts(volume_n=1, volume_oldest=NOW - timedelta(minutes=50)), "volume", "armed",
     "1 of 500 recipients handed over", None),
    # The complaint rate with no delivered events is unarmed whatever the transport.
    (Counts(complaint_n=3, complaint_oldest=NOW - timedelta(hours=2)), "complaint_rate", "unarmed",
     "nothing observed: 0 of 50; no rate is given and it cannot trip", None),
])
def test_a_breaker_reads_against_its_limit_and_says_when_it_lets_mail_go(
        counts: Counts, breaker: str, status: str, reading: str, release: str | None) -> None:
    row = _rows(counts)[breaker]
    assert (row.status, row.reading, row.release) == (status, reading, release)
    if status == "unarmed":
        assert "%" not in row.reading


def test_every_doctor_check_has_a_fix_page_entry_and_an_unknown_one_gets_no_link() -> None:
    assert set(FIX_PAGES) == set(CHECKS)
    assert fix_page("a_check_added_later") is None
    assert all(p is None or p.startswith(("/limits", "/butlers", "/people")) for p in FIX_PAGES.values())
    assert fix_page("domain_paused") == "/limits/pauses" and fix_page("database_reachable") is None


@pytest.mark.parametrize(("provider", "quota", "left"), [
    ({"daily_limit": 100, "daily_used": None, "quota_percent": None,
      "ceilings": {"realtime": 90, "correspondence": 95, "deferrable": 100}},
     "no reading today (of 100): the provider has not answered a hand-over today",
     ["not known: no reading today"] * 3),
    ({"daily_limit": 100, "daily_used": 93, "quota_percent": 93.0,
      "ceilings": {"realtime": 90, "correspondence": 95, "deferrable": 100}}, "93 of 100 (93.0 %)", ["0", "2", "7"]),
    ({"daily_limit": None, "daily_used": None, "quota_percent": None,
      "ceilings": {"realtime": 90, "correspondence": 95, "deferrable": None}},
     "no daily cap: the provider reports no daily quota", ["no daily cap"] * 3),
])
def test_the_provider_quota_and_each_class_ceiling_in_words(provider: dict[str, Any], quota: str,
                                                            left: list[str]) -> None:
    assert quota_words(provider) == quota
    assert [c.left for c in class_ceilings(provider)] == left


def test_an_unknown_provider_state_is_never_called_open() -> None:
    assert provider_state_words("open").startswith("open")
    assert "read it as shut" in provider_state_words("half_open")


@pytest.mark.parametrize(("form", "changes"), [
    ({"csrf_token": "x", "volume_max_recipients": "", "bounce_max_percent": " 25 "}, {"bounce_max_percent": 25}),
    ({"bounce_min_observations": "ten"}, {"bounce_min_observations": "ten"}),  # the service refuses it
    ({"reset_volume_max_recipients": "1", "volume_max_recipients": "7"}, {"volume_max_recipients": None}),
    ({"complaint_max_percent": "2.5"}, {"complaint_max_percent": "2.5"}),
    ({}, {}),
])
def test_the_limits_form_becomes_the_services_changes(form: dict[str, str], changes: dict[str, object]) -> None:
    assert web_limits.form_changes(form) == changes


def _page(world: World, token: str | None = None) -> str:
    r = sign_in(world.api, token or world.installed.token, "/limits")
    assert r.status_code == 200, r.text
    assert str(r.url).endswith("/limits")
    return str(r.text)


def _token(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def test_an_administrator_sees_every_section_on_a_fresh_node_with_no_reassuring_zero(world: World) -> None:
    text = _page(world)
    assert 'id="subnav-overview" aria-current="page"' in text and 'id="nav-limits" aria-current="page"' in text
    assert "nothing observed: 0 of 20; no rate is given and it cannot trip" in text
    assert not ZERO_PERCENT.search(text)
    assert 'id="provider-file"' in text and "no reading today (of 100)" in text  # never a 0 % quota
    assert 'id="limits-form"' in text and 'id="limit-bounce_min_observations"' in text
    assert 'id="doctor-verdict"' in text and 'id="finding-send_breakers"' in text
    assert 'id="finding-audit_chain_intact"' not in text  # the page does not walk the chain
    assert "never verified from this page" in text
    length = html.unescape(text).split('id="audit-length">')[1].split(" ")[0]
    with world.node.read() as conn:
        assert int(length) == audit.chain_length(conn, world.installed.org_id) > 0
    for sub in ("/limits/pauses", "/limits/holds", "/limits/retention", "/limits/suppressions"):
        assert f'href="{sub}"' in text


def test_the_page_never_walks_the_audit_chain(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    def walked(*_: Any, **__: Any) -> Any:
        raise AssertionError("the page walked the audit chain")

    monkeypatch.setattr(audit, "verify", walked)
    assert 'id="audit-length"' in _page(world)


def test_a_reader_of_one_mailbox_sees_the_breakers_but_not_the_provider_and_cannot_change_a_limit(
        world: World) -> None:
    _, h = world.person("reader@example.test", ("mailbox.content.read", world.installed.mailbox_id))
    text = _page(world, _token(h))
    assert 'id="breaker-bounce_rate"' in text and "nothing observed: 0 of 20" in text
    assert 'id="provider-refusal-code">E_NOT_AN_ADMINISTRATOR<' in text
    assert 'id="limits-readonly"' in text and 'id="limits-form"' not in text
    assert 'id="audit-refusal-code">E_NOT_AN_ADMINISTRATOR<' in text and 'id="audit-form"' not in text
    r = world.api.post("/limits/breaker-limits", data={"csrf_token": csrf_of(text), "bounce_max_percent": "99"})
    assert r.status_code == 403 and 'id="limits-refusal-code">E_NOT_AN_ADMINISTRATOR<' in r.text
    v = world.api.post("/limits/audit/verify", data={"csrf_token": csrf_of(text)})
    assert v.status_code == 403 and 'id="audit-verify-refusal-code">E_NOT_AN_ADMINISTRATOR<' in v.text
    limits = world.api.get("/api/breaker-limits", headers=world.admin).json()["breaker_limits"]["limits"]
    assert {x["name"]: x["overridden"] for x in limits}["bounce_max_percent"] is False


def test_a_person_without_any_mailbox_is_told_why_the_breakers_are_not_shown(world: World) -> None:
    _, h = world.person("outsider@example.test")
    text = _page(world, _token(h))
    assert 'id="breakers-refusal-code">E_BREAKERS_NOT_VISIBLE<' in text
    assert 'id="finding-send_breakers"' in text and "withheld" in text


def test_an_administrator_changes_a_limit_and_a_bad_value_is_refused_with_nothing_written(world: World) -> None:
    text = _page(world)
    token = csrf_of(text)
    r = world.api.post("/limits/breaker-limits", data={"csrf_token": token, "bounce_min_observations": "2"},
                       follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/limits?changed=1")
    shown = world.api.get("/limits?changed=1").text
    assert 'id="limits-changed"' in shown and "nothing observed: 0 of 2;" in shown
    assert '<td class="value">2 <span class="badge armed">set here</span>' in shown
    for value, code, status in (("0", "E_BREAKER_LIMIT_OUT_OF_RANGE", 422),
                                ("ten", "E_BREAKER_LIMIT_NOT_INTEGER", 422)):
        bad = world.api.post("/limits/breaker-limits", data={"csrf_token": token, "bounce_min_observations": value,
                                                             "bounce_max_percent": "10"})
        assert bad.status_code == status and f'id="limits-refusal-code">{code}<' in bad.text
        assert f'value="{value}"' in bad.text  # what was typed stays in the form
    limits = world.api.get("/api/breaker-limits", headers=world.admin).json()["breaker_limits"]["limits"]
    assert {x["name"]: x["value"] for x in limits}["bounce_max_percent"] == 30  # nothing half-written
    missing = world.api.post("/limits/breaker-limits", data={"bounce_max_percent": "10"})
    assert missing.status_code == 403 and "E_CSRF_INVALID" in missing.text


def test_a_paused_provider_shows_its_pause_kind_quota_and_reopening_time(world: World) -> None:
    node = world.node
    now = node.clock.now()
    until = now + timedelta(hours=3)
    with node.begin() as conn:
        provider_io.write_status(conn, ProviderStatus(
            transport="resend", daily_used=100, daily_observed_at=now, pause_kind=PauseKind.DAILY_QUOTA,
            paused_at=now, unavailable_until=until, pause_error="daily_quota_exceeded"), now)
    text = html.unescape(_page(world))
    part = text.split('id="provider-resend"')[1].split("</div>")[0]
    assert "shut: a pause is in force" in part and "<code>daily_quota</code>" in part
    assert "daily_quota_exceeded" in part and until.isoformat() in part
    assert "100 of 100 (100.0 %)" in part
    assert 'id="ceiling-resend-realtime"' in part


def test_doctor_findings_link_their_fix_page_and_an_unknown_finding_gets_none(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    findings = [Finding("send_breakers", Severity.DEGRADED, False, "bounce_rate tripped", "Find the cause."),
                Finding("a_check_added_later", Severity.DEGRADED, False, "something", "Do something."),
                Finding("domain_paused", Severity.REPORT, True, "no pause in force")]
    monkeypatch.setattr(web_limits, "run_checks", lambda node, org_id, names: findings)
    text = _page(world)
    row = text.split('id="finding-send_breakers"')[1].split("</tr>")[0]
    assert 'href="/limits#breakers"' in row and "Find the cause." in row
    assert "fix-link" not in text.split('id="finding-a_check_added_later"')[1].split("</tr>")[0]
    assert "fix-link" not in text.split('id="finding-domain_paused"')[1].split("</tr>")[0]  # ok: nothing to fix
    assert 'id="doctor-verdict" class="badge degraded">degraded<' in text


def test_verify_walks_the_chain_shows_the_verdict_and_the_page_then_shows_it_as_the_last(world: World) -> None:
    text = _page(world)
    with world.node.read() as conn:
        before = audit.chain_length(conn, world.installed.org_id)
    r = world.api.post("/limits/audit/verify", data={"csrf_token": csrf_of(text)})
    assert r.status_code == 200
    assert f"Verified just now: the chain is intact, {before} entries checked." in r.text
    again = world.api.get("/limits").text
    assert f"intact: {before} entries verified" in again and f'id="audit-length">{before + 1} entries' in again
    assert world.installed.user_id in again.split('id="audit-last"')[1].split("</dd>")[0]


def test_a_broken_chain_is_shown_broken_at_its_entry(world: World) -> None:
    from sqlalchemy import update

    with world.node.begin() as conn:
        conn.execute(update(audit.audit_entries).where(audit.audit_entries.c.org_id == world.installed.org_id,
                                                       audit.audit_entries.c.seq == 2).values(action="tampered"))
    text = _page(world)
    r = world.api.post("/limits/audit/verify", data={"csrf_token": csrf_of(text)})
    assert r.status_code == 200 and "the chain is broken at entry 2" in r.text
    assert "broken at entry 2 (1 entries before it verified)" in world.api.get("/limits").text
