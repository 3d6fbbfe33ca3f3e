"""The retention pass end to end: what it deletes, what it keeps, the paging past a retained head, a hold
beating the ceiling, shared blobs, and the settings routes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests
from mailnode.schema.retention import retained_content
from tests.retention.conftest import Retained

DAY = 86_400


def _ledger(org: Retained, sid: str) -> Any:
    with org.node.read() as conn:
        return conn.execute(select(retained_content).where(retained_content.c.source_id == sid)).one()


def test_the_retention_table_end_to_end(org: Retained, api: Any) -> None:
    now = org.node.clock.now()
    expired, d_expired = org.send("expired body", at=org.ago(8 * DAY))
    young, d_young = org.send("young body", at=org.ago(1 * DAY))
    pending, d_pending = org.send("pending body", at=org.ago(8 * DAY), state="awaiting")
    told, d_told = org.send("told body", at=org.ago(8 * DAY))
    ceiling, d_ceiling = org.send("ceiling body", at=org.ago(15 * DAY), state="awaiting")
    with org.node.begin() as conn:
        retention_io.enrol(conn, org_id=org.org_id)
        assert retention_io.extend(conn, source_ids=[told], now=now) == 1
        # The half-window floor: a second write right away is skipped.
        assert retention_io.extend(conn, source_ids=[told], now=now) == 0
    report = retention_io.run_pass(org.node, now).sweeps[org.org_id]
    assert sorted(report.purged) == sorted([expired, ceiling])
    for sid, digest in ((expired, d_expired), (ceiling, d_ceiling)):
        row = _ledger(org, sid)
        assert row.purged_at is not None and row.digests is None
        assert not org.blob_exists(digest)
    for sid, digest in ((young, d_young), (pending, d_pending), (told, d_told)):
        assert _ledger(org, sid).purged_at is None and org.blob_exists(digest)
    with org.node.read() as conn:
        assert conn.execute(select(send_manifests.c.id).where(send_manifests.c.id == expired)).first() is not None
    assert sorted(e["subject"] for e in org.entries("retention.deleted")) == sorted([expired, ceiling])


def test_a_retained_head_of_fifty_does_not_stop_row_fifty_one(org: Retained) -> None:
    head = [org.send(f"pending {n}", at=org.ago(9 * DAY - n), state="awaiting")[0] for n in range(50)]
    last, digest = org.send("the fifty-first", at=org.ago(8 * DAY))
    report = retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id]
    assert report.purged == (last,)
    assert report.examined == 51
    assert not org.blob_exists(digest)
    assert all(_ledger(org, sid).purged_at is None for sid in head)


def test_a_hold_blocks_a_deletion_the_ceiling_would_allow(org: Retained, api: Any) -> None:
    old, digest = org.send("evidence", at=org.ago(20 * DAY))
    placed = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id}, headers=org.admin.headers)
    assert placed.status_code == 201
    report = retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id]
    assert report.purged == () and report.hold_blocked == (old,)
    assert org.blob_exists(digest)
    blocked = org.entries("hold.blocked")
    assert [(e["subject"], e["outcome"], e["detail"]["act"]) for e in blocked] == [(old, "refused", "retention.delete")]


def test_a_blob_shared_by_two_rows_goes_only_with_the_last(org: Retained) -> None:
    first, digest = org.send("same words", at=org.ago(8 * DAY))
    second, same = org.send("same words", at=org.ago(1 * DAY))
    assert digest == same
    retention_io.run_pass(org.node, org.node.clock.now())
    assert _ledger(org, first).purged_at is not None and org.blob_exists(digest)
    org.node.clock.advance(7 * DAY)  # type: ignore[attr-defined]
    retention_io.run_pass(org.node, org.node.clock.now())
    assert _ledger(org, second).purged_at is not None and not org.blob_exists(digest)


def test_retain_until_keeps_content_until_it_passes(org: Retained) -> None:
    sid, _digest = org.send("told later", at=org.ago(8 * DAY))
    with org.node.begin() as conn:
        retention_io.enrol(conn, org_id=org.org_id)
        conn.execute(update(retained_content).where(retained_content.c.source_id == sid)
                     .values(retain_until=org.node.clock.now() + timedelta(days=1)))
    assert retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id].purged == ()
    org.node.clock.advance(2 * DAY)  # type: ignore[attr-defined]
    assert retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id].purged == (sid,)


def test_retention_settings_are_for_administrators_and_must_be_coherent(org: Retained, api: Any) -> None:
    got = api.get("/api/settings/retention", headers=org.admin.headers)
    assert got.status_code == 200 and got.json()["retention"]["ceiling_seconds"] == 14 * DAY
    changed = api.patch("/api/settings/retention", json={"sealed_body_seconds": 2 * DAY}, headers=org.admin.headers)
    assert changed.status_code == 200 and changed.json()["retention"]["sealed_body_seconds"] == 2 * DAY
    bad = api.patch("/api/settings/retention", json={"inbound_raw_seconds": 30 * DAY}, headers=org.admin.headers)
    assert bad.status_code == 422 and bad.json()["error"] == "E_RETENTION_INCOHERENT"
    bob = org.person("bob@example.test", ("send.propose", org.i.mailbox_id))
    assert api.get("/api/settings/retention", headers=bob.headers).status_code == 403
    sid, _ = org.send("three days old", at=org.ago(3 * DAY))
    assert retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id].purged == (sid,)


def test_hold_blocked_is_written_once_per_row_per_hold_episode(org: Retained, api: Any) -> None:
    # Issue 17 item 5: every pass wrote hold.blocked for every held row (1,100 entries for 60 rows).
    rows = [org.send(f"evidence {n}", at=org.ago(20 * DAY))[0] for n in range(3)]
    first = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id}, headers=org.admin.headers)
    assert first.status_code == 201
    for _ in range(4):
        report = retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id]
        assert sorted(report.hold_blocked) == sorted(rows) and report.purged == ()
        org.node.clock.advance(600)  # type: ignore[attr-defined]
    blocked = org.entries("hold.blocked")
    assert sorted(e["subject"] for e in blocked) == sorted(rows)
    assert {tuple(e["detail"]["hold_ids"]) for e in blocked} == {(first.json()["hold"]["id"],)}
    # A second hold covering the same rows is a new episode: one more entry each, then silence again.
    second = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "matter_id": "M-8"},
                      headers=org.admin.headers)
    assert second.status_code == 201
    for _ in range(3):
        retention_io.run_pass(org.node, org.node.clock.now())
    blocked = org.entries("hold.blocked")
    assert len(blocked) == 2 * len(rows)
    both = tuple(sorted([first.json()["hold"]["id"], second.json()["hold"]["id"]]))
    assert sorted(e["subject"] for e in blocked[len(rows):]) == sorted(rows)
    assert {tuple(e["detail"]["hold_ids"]) for e in blocked[len(rows):]} == {both}
