"""The provider reserve holds under concurrent dispatch (spec/transactional.md §2 "Reserve"; issue 17 item 2).

Against the local Resend server, with ``DISPATCH_CONCURRENCY`` sends dispatched at once: each provider request
is reserved on the provider row before it is made, with the requests in flight counted against the class's
ceiling, so concurrent workers never spend past it together; and an answer to an older request never
overwrites a newer reading or reopens a pause set after it was made.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mailnode import budgets
from mailnode.governance import provider_io
from mailnode.governance.provider import PauseKind, ProviderLimits
from mailnode.outbound import dispatch
from mailnode.transports.base import SubmitOutcome, SubmitState

from .conftest import T0, Org
from .test_reserve_per_recipient import _at_reading, _seal


def test_concurrent_correspondence_stops_at_its_ceiling_and_never_reaches_the_providers_429(
        org: Org, caplog: pytest.LogCaptureFixture) -> None:
    ceiling = budgets.PROVIDER_CORRESPONDENCE_CEILING_DEFAULT
    _at_reading(org, ceiling - 1, "correspondence")  # the 94 of 100, with 95 for correspondence
    sends = [_seal(org, [f"person{i}@remote.test"], "correspondence") for i in range(budgets.DISPATCH_CONCURRENCY)]
    before = org.requests()
    caplog.set_level(logging.INFO, logger="mailnode.provider")

    report = dispatch.sweep(org.node)

    assert len(report.results) == budgets.DISPATCH_CONCURRENCY
    made = org.emulator.sends()[before:]
    assert len(made) == 1, "one request fits under the correspondence ceiling; in-flight requests count"
    assert all(r.status == 200 for r in made), "the provider never answered 429"
    status = org.status()
    assert status.daily_used == ceiling and status.pause_kind is None
    states = sorted(org.send(s.id).state for s in sends)
    assert states.count("handed_over") == 1
    assert set(states) - {"handed_over"} <= {"awaiting", "throttled"}
    assert "provider.paused" not in caplog.text and "provider.reopened" not in caplog.text
    with org.node.read() as conn:
        assert provider_io.in_flight(conn, "resend", org.clock.now()) == 0, "every answered request is released"


def _outcome(state: SubmitState, error_name: str | None = None, quota: str | None = None) -> SubmitOutcome:
    headers = (("x-resend-daily-quota", quota),) if quota is not None else ()
    return SubmitOutcome(state=state, error_name=error_name, error_code=429 if error_name else None,
                         quota_headers=headers)


def test_a_success_answering_after_a_429_does_not_reopen_the_pause_it_placed(org: Org, caplog: Any) -> None:
    limits = ProviderLimits()
    with org.node.begin() as conn:
        older = provider_io.reserve(conn, "resend", "correspondence", T0, limits, lease_seconds=60)
        newer = provider_io.reserve(conn, "resend", "correspondence", T0, limits, lease_seconds=60)
        assert provider_io.in_flight(conn, "resend", T0) == 2
    assert older.ticket is not None and newer.ticket is not None and older.ticket < newer.ticket
    caplog.set_level(logging.INFO, logger="mailnode.provider")
    with org.node.begin() as conn:
        provider_io.record(conn, "resend", _outcome(SubmitState.THROTTLED, "daily_quota_exceeded"), T0, limits,
                           ticket=newer.ticket, request_id=newer.request_id)
        # The older request's success answers after the 429: its request was made before the pause.
        after = provider_io.record(conn, "resend", _outcome(SubmitState.HANDED_OVER, quota="97"), T0, limits,
                                   ticket=older.ticket, request_id=older.request_id)
    assert after.pause_kind is PauseKind.DAILY_QUOTA, "the pause stays"
    assert after.daily_used == limits.daily_limit, "the pinned reading is not lowered by an older answer"
    assert "provider.reopened" not in caplog.text
    # A request made after the pause (a probe once it ends) does reopen it.
    with org.node.begin() as conn:
        probe = provider_io.reserve(conn, "resend", "deferrable", T0.replace(day=11, hour=0, minute=1), limits,
                                    lease_seconds=60)
        assert probe.decision.allowed and probe.ticket is not None and probe.ticket > newer.ticket
        reopened = provider_io.record(conn, "resend", _outcome(SubmitState.HANDED_OVER, quota="1"),
                                      T0.replace(day=11, hour=0, minute=2), limits, ticket=probe.ticket,
                                      request_id=probe.request_id)
        assert provider_io.in_flight(conn, "resend", T0.replace(day=11, hour=0, minute=2)) == 0
    assert reopened.pause_kind is None and reopened.daily_used == 1
