"""``PATCH /api/settings/retention`` takes strict integers of seconds up to ``RETENTION_SECONDS_MAX`` and
writes nothing when it refuses; a stored value above the maximum (written before the bound, or by hand) is
read as the maximum with a loud log, so no retention pass can overflow (issue 9 follow-up, an adversarial
test: ``true`` was stored as 1 second, and a ceiling of 2**63-1 made every pass raise ``OverflowError``)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from sqlalchemy import update

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.retention import io as retention_io
from mailnode.retention import rules as retention
from mailnode.schema.retention import retention_settings
from tests.retention.conftest import Retained

DAY = 86_400
MAX = budgets.RETENTION_SECONDS_MAX
DEFAULTS = {"inbound_raw_seconds": 7 * DAY, "sealed_body_seconds": 7 * DAY, "ceiling_seconds": 14 * DAY}


# --- the pure checks, as tables ----------------------------------------------------------------------


@pytest.mark.parametrize(("value", "code"), [
    (True, "E_RETENTION_SETTING_NOT_INTEGER"),
    (False, "E_RETENTION_SETTING_NOT_INTEGER"),
    ("10", "E_RETENTION_SETTING_NOT_INTEGER"),
    (10.0, "E_RETENTION_SETTING_NOT_INTEGER"),
    (MAX + 1, "E_BUDGET_EXCEEDED"),
    (2**63 - 1, "E_BUDGET_EXCEEDED"),
    (2**63, "E_BUDGET_EXCEEDED"),
    (MAX, None),
    (1, None),
    (0, None),  # positivity is RetentionSettings' coherence check
])
def test_setting_refusal(value: object, code: str | None) -> None:
    refusal = retention.setting_refusal("ceiling_seconds", value)
    assert (refusal.code if refusal else None) == code
    if refusal is not None:
        assert refusal.status == 422 and refusal.detail["field"] == "ceiling_seconds"


@pytest.mark.parametrize(("changes", "outcome"), [
    ({"ceiling_seconds": 30 * DAY, "inbound_raw_seconds": None}, {"ceiling_seconds": 30 * DAY}),
    ({}, {}),
    ({"inbound_raw_seconds": True}, "E_RETENTION_SETTING_NOT_INTEGER"),
    ({"sealed_body_seconds": "10"}, "E_RETENTION_SETTING_NOT_INTEGER"),
    ({"ceiling_seconds": 9223372036854775807}, "E_BUDGET_EXCEEDED"),
    ({"ceiling_days": 3}, "E_REQUEST_INVALID"),
])
def test_check_changes(changes: dict[str, object], outcome: dict[str, int] | str) -> None:
    if isinstance(outcome, dict):
        assert retention.check_changes(changes) == outcome
    else:
        with pytest.raises(MailnodeError) as refused:
            retention.check_changes(changes)
        assert refused.value.code == outcome


def test_retention_settings_never_hold_a_period_past_the_maximum() -> None:
    kinds = {retention.ContentKind.INBOUND_RAW: DAY, retention.ContentKind.SEALED_BODY: DAY}
    with pytest.raises(MailnodeError) as refused:
        retention.RetentionSettings(kinds, 2**63 - 1)
    assert refused.value.code == "E_BUDGET_EXCEEDED" and refused.value.detail["field"] == "ceiling_seconds"
    with pytest.raises(MailnodeError) as not_int:
        retention.RetentionSettings({**kinds, retention.ContentKind.SEALED_BODY: True}, 2 * DAY)
    assert not_int.value.code == "E_RETENTION_SETTING_NOT_INTEGER"
    assert not_int.value.detail["field"] == "sealed_body_seconds"
    assert retention.RetentionSettings(kinds, MAX).ceiling_seconds == MAX


@pytest.mark.parametrize(("stored", "clamped"), [
    ({"inbound_raw_seconds": DAY, "sealed_body_seconds": DAY, "ceiling_seconds": 2**63 - 1},
     {"ceiling_seconds": 2**63 - 1}),
    ({"inbound_raw_seconds": 2**62, "sealed_body_seconds": DAY, "ceiling_seconds": 2**63 - 1},
     {"inbound_raw_seconds": 2**62, "ceiling_seconds": 2**63 - 1}),
    ({"inbound_raw_seconds": DAY, "sealed_body_seconds": DAY, "ceiling_seconds": MAX}, {}),
])
def test_settings_from_stored_clamps_what_is_above_the_maximum(stored: dict[str, int],
                                                               clamped: dict[str, int]) -> None:
    read = retention.settings_from_stored(**stored)
    assert dict(read.clamped) == clamped
    assert read.settings.ceiling_seconds == min(stored["ceiling_seconds"], MAX)
    assert read.settings.content_seconds[retention.ContentKind.INBOUND_RAW] == min(stored["inbound_raw_seconds"], MAX)


# --- the route ------------------------------------------------------------------------------------------


def _unchanged(org: Retained, api: Any) -> None:
    got = api.get("/api/settings/retention", headers=org.admin.headers)
    assert got.status_code == 200 and got.json()["retention"] == DEFAULTS
    assert org.entries("retention.settings_changed") == []


@pytest.mark.parametrize("value", [True, False, "10", "604800", 604800.0, 1.5, [604800]])
def test_a_setting_that_is_not_a_json_integer_is_refused_and_nothing_is_written(
        org: Retained, api: Any, value: object) -> None:
    r = api.patch("/api/settings/retention", json={"inbound_raw_seconds": value}, headers=org.admin.headers)
    assert r.status_code == 422, r.text
    got = r.json()
    assert got["error"] == "E_REQUEST_INVALID"
    assert got["detail"]["problems"][0]["field"] == "inbound_raw_seconds"
    _unchanged(org, api)


@pytest.mark.parametrize("ceiling", [9223372036854775807, 2**63, 10**30, MAX + 1])
def test_a_ceiling_past_the_maximum_is_refused_naming_the_limit_and_nothing_is_written(
        org: Retained, api: Any, ceiling: int) -> None:
    r = api.patch("/api/settings/retention", json={"ceiling_seconds": ceiling, "inbound_raw_seconds": DAY},
                  headers=org.admin.headers)
    assert r.status_code == 422, r.text
    got = r.json()
    assert got["error"] == "E_BUDGET_EXCEEDED"
    assert got["detail"] == {"limit_name": "RETENTION_SECONDS_MAX", "limit": MAX, "observed": ceiling,
                             "field": "ceiling_seconds"}
    assert f"RETENTION_SECONDS_MAX is {MAX}" in got["message"]
    assert "at most" in got["fix"] and "POST /api/holds" in got["fix"]
    _unchanged(org, api)
    # The pass after the refusal runs as before.
    retention_io.run_pass(org.node, org.node.clock.now())


def test_each_setting_is_bounded_not_only_the_ceiling(org: Retained, api: Any) -> None:
    r = api.patch("/api/settings/retention", json={"sealed_body_seconds": 2**63}, headers=org.admin.headers)
    assert r.status_code == 422 and r.json()["detail"]["field"] == "sealed_body_seconds", r.text
    _unchanged(org, api)


def test_the_maximum_itself_is_accepted_stored_and_swept(org: Retained, api: Any) -> None:
    r = api.patch("/api/settings/retention", json={"ceiling_seconds": MAX, "inbound_raw_seconds": MAX,
                                                   "sealed_body_seconds": MAX}, headers=org.admin.headers)
    assert r.status_code == 200, r.text
    assert r.json()["retention"] == {"inbound_raw_seconds": MAX, "sealed_body_seconds": MAX, "ceiling_seconds": MAX}
    _sid, digest = org.send("kept for fifty years", at=org.ago(20 * DAY))
    report = retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id]
    assert report.purged == () and org.blob_exists(digest)


# --- a stored value past the maximum cannot break the sweep ------------------------------------------


def test_a_stored_ceiling_past_the_maximum_is_read_as_the_maximum_and_logged(
        org: Retained, api: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The largest the column holds: 2**63-1 on SQLite (what the attack stored), 2**31-1 on PostgreSQL (INTEGER).
    huge = 2**63 - 1 if org.node.engine.dialect.name == "sqlite" else 2**31 - 1
    assert api.patch("/api/settings/retention", json={"sealed_body_seconds": 2 * DAY},
                     headers=org.admin.headers).status_code == 200
    with org.node.begin() as conn:
        conn.execute(update(retention_settings).where(retention_settings.c.org_id == org.org_id)
                     .values(ceiling_seconds=huge))
    sid, digest = org.send("three days old", at=org.ago(3 * DAY))
    with caplog.at_level(logging.ERROR, logger="mailnode.retention.rules"):
        report = retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id]
    assert report.purged == (sid,) and not org.blob_exists(digest)
    lines = [r for r in caplog.records if r.getMessage().startswith("retention.setting_clamped")]
    assert lines and lines[0].levelno == logging.ERROR
    assert f"setting=ceiling_seconds stored={huge} used={MAX}" in lines[0].getMessage()
    got = api.get("/api/settings/retention", headers=org.admin.headers)
    assert got.status_code == 200 and got.json()["retention"]["ceiling_seconds"] == MAX


@pytest.mark.parametrize(("changes", "code"), [
    ({"ceiling_days": 3}, "E_REQUEST_INVALID"),
    ({"inbound_raw_seconds": True}, "E_RETENTION_SETTING_NOT_INTEGER"),
    ({"ceiling_seconds": 2**63}, "E_BUDGET_EXCEEDED"),
])
def test_a_caller_other_than_the_route_is_held_to_the_same_rules(org: Retained, api: Any, changes: dict[str, Any],
                                                                 code: str) -> None:
    with pytest.raises(MailnodeError) as refused, org.node.begin() as conn:
        retention_io.update_settings(conn, org_id=org.org_id, actor_id=org.i.user_id, changes=changes,
                                     now=org.node.clock.now())
    assert refused.value.code == code
    _unchanged(org, api)
