"""The provider-availability breaker against the local Resend server (spec/transactional.md §2).

Every hand-over writes the transport's ``provider_status`` row through ``provider.record_outcome``; the
pause kinds reopen at their own times; the quota reading is bounded at write and read; the reserve keeps
the last sends of the day for deferrable mail.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mailnode.governance.provider import PauseKind
from mailnode.outbound import sweeper
from mailnode.outbound.realtime import send_realtime
from mailnode.outbound.seal import SealRequest
from tests.support.resend_emulator import Fault

from .conftest import T0, Org


def _realtime(org: Org, to: str = "code@remote.test") -> Any:
    return send_realtime(org.node, org_id=org.installed.org_id, author_id=org.installed.user_id,
                         request=SealRequest(mailbox_id=org.installed.mailbox_id, to=[to], subject="Your code",
                                             body="123456"))


def test_a_reading_of_94_blocks_realtime_on_the_reserve_while_deferrable_still_sends(
        org: Org, caplog: pytest.LogCaptureFixture) -> None:
    org.emulator.config.forced_daily_quota = "94"
    first = org.deferrable()
    sweeper.run_pass(org.node)
    assert org.send(first.id).state == "handed_over"
    assert org.status().daily_used == 94
    before = org.requests()
    with caplog.at_level(logging.ERROR, logger="mailnode.provider"), pytest.raises(Exception) as refused:
        _realtime(org)
    assert getattr(refused.value, "code", None) == "E_SEND_UNAVAILABLE"
    assert getattr(refused.value, "status", None) == 503
    assert org.requests() == before, "a refused realtime send costs no provider request"
    reserve = [r for r in caplog.records if "provider.realtime_refused_on_reserve" in r.getMessage()]
    assert reserve and reserve[0].levelno == logging.ERROR
    later = org.deferrable(subject="Still goes")
    sweeper.run_pass(org.node)
    assert org.send(later.id).state == "handed_over"
    assert org.requests() == before + 1


def test_daily_quota_exceeded_pauses_until_the_next_utc_midnight_and_pins_the_reading(org: Org) -> None:
    org.emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    sent = org.deferrable()
    sweeper.run_pass(org.node)
    status = org.status()
    assert status.pause_kind is PauseKind.DAILY_QUOTA
    assert status.unavailable_until == datetime(2026, 3, 11, tzinfo=UTC)
    assert status.daily_used == 100
    assert org.send(sent.id).state == "throttled"


def test_monthly_quota_exceeded_pauses_until_the_first_and_leaves_the_daily_reading_alone(org: Org) -> None:
    org.deferrable()
    sweeper.run_pass(org.node)
    assert org.status().daily_used == 1
    org.emulator.add_fault(Fault(status=429, name="monthly_quota_exceeded"))
    org.deferrable(subject="Second")
    sweeper.run_pass(org.node)
    status = org.status()
    assert status.pause_kind is PauseKind.MONTHLY_QUOTA
    assert status.unavailable_until == datetime(2026, 4, 1, tzinfo=UTC)
    assert status.daily_used == 1


def test_a_revoked_key_pauses_fifteen_minutes(org: Org) -> None:
    org.emulator.config.api_keys = {}
    org.deferrable()
    sweeper.run_pass(org.node)
    status = org.status()
    assert status.pause_kind is PauseKind.SYSTEMIC
    assert status.unavailable_until == T0 + timedelta(minutes=15)


def test_validation_error_pauses_nothing(org: Org) -> None:
    org.emulator.add_fault(Fault(status=422, name="validation_error"))
    sent = org.deferrable()
    sweeper.run_pass(org.node)
    assert org.send(sent.id).state == "refused"
    status = org.status()
    assert status.pause_kind is None and status.unavailable_until is None


def test_a_reading_above_the_daily_limit_is_refused_loudly_and_does_not_switch_verification_off(
        org: Org, caplog: pytest.LogCaptureFixture) -> None:
    org.emulator.config.forced_daily_quota = "1250"
    with caplog.at_level(logging.ERROR, logger="mailnode.provider"):
        org.deferrable()
        sweeper.run_pass(org.node)
    assert org.status().daily_used is None
    loud = [r for r in caplog.records if "provider.quota_reading_out_of_range" in r.getMessage()]
    assert loud and loud[0].levelno == logging.ERROR and "at=write" in loud[0].getMessage()
    # Realtime mail (verification codes) still goes.
    assert _realtime(org).id


def test_a_stored_reading_above_the_limit_is_ignored_at_the_read_with_a_loud_log(
        org: Org, caplog: pytest.LogCaptureFixture) -> None:
    from sqlalchemy import update

    from mailnode.schema.governance_provider import provider_status

    org.deferrable()
    sweeper.run_pass(org.node)
    with org.node.begin() as conn:
        conn.execute(update(provider_status).values(daily_used=1250))
    with caplog.at_level(logging.ERROR, logger="mailnode.provider"):
        assert _realtime(org).id
    assert any("provider.quota_reading_out_of_range" in r.getMessage() and "at=read" in r.getMessage()
               for r in caplog.records)


def test_a_success_after_the_pause_reopens_the_breaker(org: Org) -> None:
    org.emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    org.deferrable()
    sweeper.run_pass(org.node)
    org.clock.set(datetime(2026, 3, 11, 0, 10, tzinfo=UTC))
    report = sweeper.run_pass(org.node)
    assert report.plan is not None and report.plan.send_mode.value == "probe_one"
    status = org.status()
    assert status.pause_kind is None and status.last_success_at == org.clock.now()
