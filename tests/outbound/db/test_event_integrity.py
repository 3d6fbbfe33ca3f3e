"""Recording an event treats only its dedup index as "already recorded": a foreign-key violation re-raises
(issue 14 item 9), on the real database of the run (SQLite, or PostgreSQL with MAILNODE_TEST_DB=postgres)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError

from mailnode.outbound import events, provider_events
from mailnode.outbound.webhooks import EventKind, ProviderEvent


def _record(conn: Any, org_id: str, source_event_id: str, at: Any) -> str | None:
    return events.record(conn, org_id=org_id, event="bounced", attribution=None, recipient="ann@remote.test",
                         status="5.1.1", source="dsn", source_event_id=source_event_id, at=at)


def test_a_repeated_event_is_recorded_once(node: Any, installed: Any) -> None:
    with node.begin() as conn:
        first = _record(conn, installed.org_id, "<m1@remote.test>:ann@remote.test", node.clock.now())
        again = _record(conn, installed.org_id, "<m1@remote.test>:ann@remote.test", node.clock.now())
    assert first is not None and again is None


def test_a_foreign_key_violation_is_not_taken_for_a_duplicate(node: Any, installed: Any) -> None:
    with pytest.raises(IntegrityError) as raised, node.begin() as conn:
        _record(conn, "org_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B", "<m2@remote.test>:ann@remote.test", node.clock.now())
    assert "foreign key" in str(raised.value.orig).lower()


def test_a_provider_observation_with_a_foreign_key_violation_re_raises(node: Any, installed: Any) -> None:
    event = ProviderEvent(event_id="msg_fk_1", provider_type="email.opened", kind=EventKind.OPENED,
                          provider_email_id=None, recipients=("ann@remote.test",), message_id=None,
                          occurred_at=None, bounce_kind=None, reason=None, raw={})
    with node.begin() as conn:
        assert provider_events._observation(conn, installed.org_id, event, None, "ann@remote.test",
                                            node.clock.now(), {}) is not None
        assert provider_events._observation(conn, installed.org_id, event, None, "ann@remote.test",
                                            node.clock.now(), {}) is None
    with pytest.raises(IntegrityError) as raised, node.begin() as conn:
        other = ProviderEvent(**{**event.__dict__, "event_id": "msg_fk_2"})
        provider_events._observation(conn, "org_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B", other, None, "ann@remote.test",
                                     node.clock.now(), {})
    assert "foreign key" in str(raised.value.orig).lower()
