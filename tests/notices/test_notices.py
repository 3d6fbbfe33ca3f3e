"""The notice sweep (issue 9 "Notices"): one notice per kind, episode and person; the bounce storm;
breaker trip episodes; ``retain_until`` for what an undelivered notice is about."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode import audit
from mailnode.ids import new_id
from mailnode.notices import io as notices_io
from mailnode.retention import io as retention_io
from mailnode.schema.governance import breaker_limits
from mailnode.schema.notices import notices
from mailnode.schema.outbound import send_manifests, send_recipient_events
from mailnode.schema.retention import retained_content
from tests.governance.conftest import World


@pytest.fixture
def org(node: Any, installed: Any) -> World:
    """A builder over an installed node."""
    return World(node, installed)


def _notices(org: World, kind: str | None = None) -> list[Any]:
    with org.node.read() as conn:
        return list(notices_io.notices_of(conn, org.org_id, None if kind is None else [kind]))


def _audit(org: World, action: str, subject: str, detail: dict[str, Any]) -> None:
    with org.node.begin() as conn:
        audit.append(conn, org_id=org.org_id, at=org.node.clock.now(), action=action, actor_id=None,
                     subject=subject, detail=detail)


def test_a_domain_pause_tells_each_administrator_once_and_seals_deferrable_system_mail(org: World) -> None:
    second = org.admin_person("blake@example.test")
    pause_id = new_id("dpz")
    _audit(org, "domain.pause_placed", pause_id, {"pause_id": pause_id, "domain": "example.test"})
    first = notices_io.run_pass(org.node)[org.org_id]
    assert len(first.written) == 2 and sorted(first.sealed) == sorted(first.written)
    again = notices_io.run_pass(org.node)[org.org_id]
    assert again.written == [] and again.sealed == []
    rows = _notices(org, "domain_pause_placed")
    assert {r.recipient_user_id for r in rows} == {org.i.user_id, second.id}
    assert {r.address for r in rows} == {"alex@example.test", "blake@example.test"}
    with org.node.read() as conn:
        sends = conn.execute(select(send_manifests).where(send_manifests.c.id.in_([r.send_id for r in rows]))).all()
    assert {s.mail_class for s in sends} == {"deferrable"}
    assert {s.auto_submitted for s in sends} == {"auto-generated"}
    assert {s.envelope_from for s in sends} == {org.i.mailbox_address}
    assert {s.state for s in sends} == {"held"}


def test_a_refused_send_tells_its_author_once_and_a_lifted_pause_is_its_own_episode(org: World) -> None:
    sid, _ = org.manifest(state="refused", author_id=org.i.user_id)
    _audit(org, "send.refused", sid, {})
    pause_id = new_id("dpz")
    _audit(org, "domain.pause_placed", pause_id, {"domain": "example.test"})
    _audit(org, "domain.pause_lifted", pause_id, {"domain": "example.test"})
    notices_io.run_pass(org.node)
    notices_io.run_pass(org.node)
    assert [r.about for r in _notices(org, "send_failed")] == [[sid]]
    assert len(_notices(org, "domain_pause_placed")) == 1
    assert len(_notices(org, "domain_pause_lifted")) == 1


def test_a_butler_pause_tells_the_administrators(org: World) -> None:
    _audit(org, "butler.paused", new_id("btl"), {"pause_id": new_id("bpz"), "name": "triage", "said": "a loop"})
    notices_io.run_pass(org.node)
    notices_io.run_pass(org.node)
    assert [r.recipient_user_id for r in _notices(org, "butler_paused")] == [org.i.user_id]


def test_the_bounce_storm_four_bouncing_notices_are_four_events_and_no_new_notice(org: World) -> None:
    for n in range(3):
        org.admin_person(f"admin{n}@example.test")
    _audit(org, "domain.pause_placed", new_id("dpz"), {"domain": "example.test"})
    notices_io.run_pass(org.node)
    rows = _notices(org)
    assert len(rows) == 4 and len({r.address for r in rows}) == 4
    for r in rows:
        org.event("bounced", manifest_id=r.send_id)
        _audit(org, "send.refused", r.send_id, {})
    report = notices_io.run_pass(org.node)[org.org_id]
    assert report.written == []
    assert len(_notices(org)) == 4
    with org.node.read() as conn:
        events = conn.execute(select(func.count()).select_from(send_recipient_events).where(
            send_recipient_events.c.manifest_id.in_([r.send_id for r in rows]))).scalar()
    assert events == 4


def test_a_bounce_of_a_persons_send_tells_them_once_however_many_recipients_bounce(org: World) -> None:
    sid, _ = org.manifest(state="handed_over", recipients=3)
    for _ in range(3):
        org.event("bounced", manifest_id=sid)
    notices_io.run_pass(org.node)
    notices_io.run_pass(org.node)
    assert [r.episode for r in _notices(org, "send_failed")] == [sid]


def test_a_breaker_trip_tells_administrators_once_per_episode(org: World) -> None:
    with org.node.begin() as conn:
        conn.execute(breaker_limits.insert().values(org_id=org.org_id, volume_max_recipients=2,
                                                    updated_by=org.i.user_id, updated_at=org.node.clock.now()))
    org.handed_over(3)
    first = notices_io.run_pass(org.node)[org.org_id]
    assert len(first.episodes_opened) == 1
    notices_io.run_pass(org.node)
    assert len(_notices(org, "breaker_tripped")) == 1
    # The window passes (the breaker clears), then a long quiet, then a new trip: a new episode.
    org.node.clock.advance(2 * 3600)  # type: ignore[attr-defined]
    notices_io.run_pass(org.node)
    org.node.clock.advance(2 * 3600)  # type: ignore[attr-defined]
    org.handed_over(3)
    notices_io.run_pass(org.node)
    assert len(_notices(org, "breaker_tripped")) == 2


def test_retain_until_is_written_for_what_an_undelivered_notice_is_about(org: World) -> None:
    sid, _ = org.manifest(state="refused", author_id=org.i.user_id)
    with org.node.begin() as conn:
        retention_io.enrol(conn, org_id=org.org_id)
    _audit(org, "send.withheld", sid, {"reason": "gave_up"})
    report = notices_io.run_pass(org.node)[org.org_id]
    assert report.extended == 1
    with org.node.read() as conn:
        until = conn.execute(select(retained_content.c.retain_until)
                             .where(retained_content.c.source_id == sid)).scalar()
        body = conn.execute(select(notices.c.body).where(notices.c.kind == "send_failed")).scalar()
    assert until is not None and until > org.node.clock.now()
    assert "gave_up" in body
    # The half-window floor: the next pass does not rewrite it.
    assert notices_io.run_pass(org.node)[org.org_id].extended == 0
