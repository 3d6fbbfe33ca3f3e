"""A send whose sealed body retention deleted: one that had not left is withheld ``retention_deleted`` in the
purge's transaction (its author is told), an ``outcome_unknown`` one keeps its state (it may have left), one a
worker holds under a live lease is not touched, a send or ledger row that moved after the scan is only
``raced``, dispatch meeting a deleted body says ``retention_deleted`` rather than corruption, and neither
retry mode re-queues it.
spec/transactional.md §5."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from mailnode.clock import utc
from mailnode.ids import new_id
from mailnode.notices import io as notices_io
from mailnode.outbound import dispatch
from mailnode.outbound.reads import NEXT_STEP
from mailnode.retention import io as retention_io
from mailnode.retention import rules as retention
from mailnode.schema.governance import approvals
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.schema.retention import retained_content
from mailnode.vocabulary.send_states import StateReason, words_for
from tests.outbound.db.conftest import Sink, running_sink
from tests.retention.conftest import Retained

DAY = 86_400
RD = StateReason.RETENTION_DELETED


@pytest.fixture
def sink() -> Iterator[Sink]:
    """A real aiosmtpd smarthost on loopback: anything dispatch hands over lands in ``handler.received``."""
    with running_sink() as running:
        yield running


def _recipients(org: Retained, sid: str) -> list[str]:
    with org.node.read() as conn:
        return [r.submission_state for r in conn.execute(
            select(send_recipients.c.submission_state).where(send_recipients.c.manifest_id == sid)
            .order_by(send_recipients.c.address)).all()]


def _add_recipient(org: Retained, sid: str, address: str, state: str) -> None:
    at = org.node.clock.now()
    with org.node.begin() as conn:
        conn.execute(send_recipients.insert().values(
            id=new_id("srp"), org_id=org.org_id, manifest_id=sid, kind="to", address=address,
            submission_state=state, submission_state_at=at, created_at=at))


def _set(org: Retained, sid: str, **values: Any) -> None:
    with org.node.begin() as conn:
        conn.execute(update(send_manifests).where(send_manifests.c.id == sid).values(**values))


def _pass(org: Retained) -> retention_io.SweepReport:
    return retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id]


def _dispatch(org: Retained, sink: Sink, sid: str) -> dispatch.DispatchResult:
    async def one() -> dispatch.DispatchResult:
        return await dispatch.dispatch_one(org.node, sink.transport(), sid)

    return asyncio.run(one())


WITHHELD_RD = ("withheld", "retention_deleted")


@pytest.mark.parametrize(("state", "reason", "lease", "after"), [
    # Provably not left: withheld with its body, so no dispatch meets a deleted body.
    ("held", None, None, WITHHELD_RD),
    ("awaiting", "policy_hold", None, WITHHELD_RD),
    ("awaiting", "breaker_volume", None, WITHHELD_RD),
    ("throttled", None, None, WITHHELD_RD),
    # May have reached its recipients: it keeps its state (and reason); only its retry offer changes.
    ("outcome_unknown", None, None, ("outcome_unknown", None)),
    ("outcome_unknown", "dedup_window_closed", None, ("outcome_unknown", "dedup_window_closed")),
    ("outcome_unknown", None, -60.0, ("outcome_unknown", None)),  # a lapsed claim: its worker is gone
])
def test_a_send_past_the_ceiling_loses_its_body_and_is_withheld_only_if_it_had_not_left(
        org: Retained, api: Any, sink: Sink, state: str, reason: str | None, lease: float | None,
        after: tuple[str, str | None]) -> None:
    sid, digest = org.send("the pending body", at=org.ago(15 * DAY), state=state)
    _add_recipient(org, sid, "gone@elsewhere.test", "handed_over")
    _add_recipient(org, sid, "maybe@elsewhere.test", "outcome_unknown")
    now = org.node.clock.now()
    lease_until = None if lease is None else now + timedelta(seconds=lease)
    claim_token = None if lease is None else "dead-worker/01"
    _set(org, sid, state_reason=reason, release_at=now - timedelta(days=1), lease_until=lease_until,
         claim_token=claim_token)
    ended = after == WITHHELD_RD
    report = _pass(org)
    assert report.purged == (sid,) and report.withheld == ((sid,) if ended else ()) and report.raced == ()
    assert not org.blob_exists(digest)

    read = api.get(f"/api/sends/{sid}", headers=org.admin.headers).json()["send"]
    assert (read["state"], read["state_reason"]) == after
    assert read["reason_words"] == words_for(*after)
    # Whatever its state, nothing is left to send again, and the read says when and why.
    assert read["retry"] == {"mode": "none", "basis": "content_deleted", "duplicate_possible": False}
    assert read["content_deleted_at"] == now.isoformat()
    assert read["content_deleted"]["setting"] == "sealed_body_seconds"
    assert [e["subject"] for e in org.entries("retention.deleted")] == [sid]
    with org.node.read() as conn:
        lease_after = conn.execute(select(send_manifests.c.lease_until, send_manifests.c.claim_token)
                                   .where(send_manifests.c.id == sid)).one()
    if ended:
        assert read["next_step"] == NEXT_STEP[RD]
        assert read["last_error"].startswith(f"The sealed body of send {sid} was deleted by retention at ")
        # The recipient that never left follows; one handed over or possibly taken still says so.
        assert _recipients(org, sid) == ["handed_over", "outcome_unknown", "withheld"]
        assert tuple(lease_after) == (None, None)
        assert [(e["subject"], e["outcome"], e["detail"]["reason"], e["detail"]["from"], e["detail"]["retention"])
                for e in org.entries("send.withheld")] == [(sid, "refused", "retention_deleted", state, "ceiling")]
    else:
        # Not called withheld, nor "did not go out while it still waited to leave": nothing is audited
        # send.withheld (so no send_failed notice says so), and every recipient still says it may have left.
        assert read["last_error"] is None
        assert _recipients(org, sid) == ["handed_over", "outcome_unknown", "outcome_unknown"]
        assert (utc(lease_after.lease_until) if lease_after.lease_until else None,
                lease_after.claim_token) == (lease_until, claim_token)
        assert org.entries("send.withheld") == []
        assert "while it still waited to leave" not in read["reason_words"]

    # Nothing is left for dispatch: not movable, nothing handed over.
    assert _dispatch(org, sink, sid).state is None
    assert dispatch.due_ids(org.node) == []
    assert sink.handler.received == []
    assert all(e["detail"]["reason"] == "retention_deleted" for e in org.entries("send.withheld"))


def test_a_real_send_left_held_past_the_ceiling_never_reaches_the_smarthost(org: Retained, api: Any,
                                                                           sink: Sink) -> None:
    sid, digests = _sealed(org, api, "a body nobody sent")
    org.node.clock.advance(15 * DAY)  # type: ignore[attr-defined]
    assert _pass(org).withheld == (sid,)
    assert not any(org.blob_exists(d) for d in digests)
    report = dispatch.sweep(org.node, transport=sink.transport())
    assert report.results == [] and sink.handler.received == []
    read = api.get(f"/api/sends/{sid}", headers=org.admin.headers).json()["send"]
    assert (read["state"], read["state_reason"]) == ("withheld", "retention_deleted")
    assert [r["submission_state"] for r in read["recipients"]] == ["withheld"]


def test_the_author_of_a_send_retention_withheld_is_told(org: Retained) -> None:
    sid, _ = org.send("told", at=org.ago(15 * DAY), state="held")
    assert _pass(org).withheld == (sid,)
    notices_io.run_pass(org.node)
    with org.node.read() as conn:
        rows = list(notices_io.notices_of(conn, org.org_id, ["send_failed"]))
    assert [(r.recipient_user_id, r.about) for r in rows] == [(org.i.user_id, [sid])]
    assert "(withheld)" in rows[0].body and f"GET /api/sends/{sid}" in rows[0].body


def test_a_send_under_a_live_lease_keeps_its_body_until_the_lease_ends(org: Retained) -> None:
    sid, digest = org.send("being handed over", at=org.ago(15 * DAY), state="outcome_unknown")
    now = org.node.clock.now()
    _set(org, sid, lease_until=now + timedelta(seconds=60), claim_token="live-worker/01")
    report = _pass(org)
    assert report.purged == () and report.withheld == ()
    assert org.blob_exists(digest)
    with org.node.read() as conn:
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == sid)).one()
        ledger = conn.execute(select(retained_content.c.purged_at)
                              .where(retained_content.c.source_id == sid)).scalar_one()
    assert (row.state, row.state_reason, row.claim_token) == ("outcome_unknown", None, "live-worker/01")
    assert ledger is None and org.entries("send.withheld") == []
    # The worker finishes (or its lease lapses): the next pass deletes the body; the send, which may
    # have left, keeps its state.
    org.node.clock.advance(61)  # type: ignore[attr-defined]
    later = _pass(org)
    assert (later.purged, later.withheld) == ((sid,), ())
    assert not org.blob_exists(digest)
    with org.node.read() as conn:
        assert conn.execute(select(send_manifests.c.state)
                            .where(send_manifests.c.id == sid)).scalar_one() == "outcome_unknown"


def test_a_claim_taken_after_the_scan_is_not_purged_under_the_worker(org: Retained,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The write is guarded too: a send claimed between the scan and the purge (here: the scan is made to
    miss the lease) is left whole, reported ``raced``, and met again by a later pass."""
    sid, digest = org.send("claimed meanwhile", at=org.ago(15 * DAY), state="outcome_unknown")
    _set(org, sid, lease_until=org.node.clock.now() + timedelta(seconds=60), claim_token="live-worker/02")
    monkeypatch.setattr(retention, "lease_live", lambda lease_until, now: False)
    report = _pass(org)
    assert report.raced == (sid,) and report.purged == () and report.withheld == ()
    assert org.blob_exists(digest)
    with org.node.read() as conn:
        state = conn.execute(select(send_manifests.c.state, send_manifests.c.claim_token)
                             .where(send_manifests.c.id == sid)).one()
        ledger = conn.execute(select(retained_content.c.purged_at)
                              .where(retained_content.c.source_id == sid)).scalar_one()
    assert tuple(state) == ("outcome_unknown", "live-worker/02") and ledger is None
    assert org.entries("send.withheld") == [] and org.entries("retention.deleted") == []


def test_a_pending_approval_of_a_send_retention_withheld_is_settled(org: Retained) -> None:
    sid, _ = org.send("needs approval", at=org.ago(15 * DAY), state="awaiting")
    _set(org, sid, state_reason="policy_approval_required")
    apr = new_id("apr")
    with org.node.begin() as conn:
        conn.execute(approvals.insert().values(
            id=apr, org_id=org.org_id, subject_kind="send_manifest", subject_id=sid, scope_id=org.i.mailbox_id,
            actor_id=org.i.user_id, state="pending", requested_at=org.ago(15 * DAY)))
    assert _pass(org).withheld == (sid,)
    with org.node.read() as conn:
        settled = conn.execute(select(approvals.c.state, approvals.c.resolved_at)
                               .where(approvals.c.id == apr)).one()
    assert settled.state == "cancelled" and settled.resolved_at is not None
    assert org.entries("send.withheld")[0]["detail"]["approval_cancelled"] is True


@pytest.mark.parametrize("state", ["handed_over", "refused", "cancelled", "withheld"])
def test_a_send_that_is_already_terminal_keeps_its_state(org: Retained, state: str) -> None:
    sid, _ = org.send("done with", at=org.ago(8 * DAY), state=state)
    report = _pass(org)
    assert report.purged == (sid,) and report.withheld == ()
    with org.node.read() as conn:
        assert conn.execute(select(send_manifests.c.state).where(send_manifests.c.id == sid)).scalar_one() == state
    assert org.entries("send.withheld") == []


def _sealed(org: Retained, api: Any, body: str) -> tuple[str, list[str]]:
    """A real send sealed through ``POST /api/sends``, its hold window passed: (id, its body digests)."""
    r = api.post("/api/sends", json={"mailbox_id": org.i.mailbox_id, "to": ["x@elsewhere.test"],
                                     "subject": "Results", "body": body}, headers=org.admin.headers)
    assert r.status_code == 201, r.text
    sid = r.json()["send"]["id"]
    org.node.clock.advance(DAY)  # type: ignore[attr-defined]
    with org.node.read() as conn:
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == sid)).one()
    assert row.state == "held"
    return sid, sorted({d for d in (row.body_typed_sha256, row.body_normalised_sha256, row.rendered_sha256) if d})


def test_dispatch_meeting_a_body_retention_deleted_withholds_retention_deleted(org: Retained, api: Any, sink: Sink,
                                                                              caplog: pytest.LogCaptureFixture) -> None:
    sid, digests = _sealed(org, api, "raced body")
    # The race the purge's own withholding closes, as dispatch would meet it: the ledger says purged and
    # the blobs are gone while the send is still movable.
    with org.node.begin() as conn:
        retention_io.enrol(conn, org_id=org.org_id)
        conn.execute(update(retained_content).where(retained_content.c.source_id == sid)
                     .values(purged_at=org.node.clock.now(), digests=None))
    for digest in digests:
        org.node.evidence._path(digest).unlink()
    result = _dispatch(org, sink, sid)
    assert (result.state, result.detail) == ("withheld", "retention_deleted")
    with org.node.read() as conn:
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == sid)).one()
    assert (row.state, row.state_reason) == ("withheld", "retention_deleted")
    assert row.last_error.startswith(f"The sealed body of send {sid} was deleted by retention at ")
    assert _recipients(org, sid) == ["withheld"]
    assert [e["detail"]["reason"] for e in org.entries("send.withheld")] == ["retention_deleted"]
    assert sink.handler.received == []
    assert "send.evidence_changed" not in caplog.text


def test_dispatch_meeting_a_body_lost_without_a_purge_still_reports_corruption(org: Retained, api: Any,
                                                                               sink: Sink) -> None:
    sid, digests = _sealed(org, api, "lost body")
    for digest in digests:
        org.node.evidence._path(digest).unlink()
    result = _dispatch(org, sink, sid)
    assert (result.state, result.detail) == ("withheld", "evidence_changed")
    assert [e["detail"]["reason"] for e in org.entries("send.withheld")] == ["evidence_changed"]


@pytest.mark.parametrize(("mode", "extra"), [
    ("retry-effect", {}),
    ("resend-may-duplicate", {"reason": "it matters", "accept_duplicate_risk": True}),
])
def test_a_retry_of_a_send_whose_body_was_deleted_is_410_and_writes_nothing(org: Retained, api: Any, mode: str,
                                                                           extra: dict[str, Any]) -> None:
    state = "refused" if mode == "retry-effect" else "handed_over"
    sid, _ = org.send("refused body", at=org.ago(8 * DAY), state=state)
    if mode == "resend-may-duplicate":
        _set(org, sid, state="outcome_unknown")
        _add_recipient(org, sid, "maybe@elsewhere.test", "outcome_unknown")
    offered = api.get(f"/api/sends/{sid}", headers=org.admin.headers).json()["send"]["retry"]["mode"]
    assert offered == mode
    with org.node.begin() as conn:
        retention_io.enrol(conn, org_id=org.org_id)
        # Purged as the sweep records it, the send left as it stood (a terminal send is not ended).
        conn.execute(update(retained_content).where(retained_content.c.source_id == sid)
                     .values(purged_at=org.node.clock.now(), digests=None))
    before = api.get(f"/api/sends/{sid}", headers=org.admin.headers).json()["send"]
    assert before["retry"] == {"mode": "none", "basis": "content_deleted", "duplicate_possible": False}
    recipients = _recipients(org, sid)
    r = api.post(f"/api/sends/{sid}/retry", json={"mode": mode, **extra}, headers=org.admin.headers)
    assert r.status_code == 410, r.text
    assert r.json()["error"] == "E_CONTENT_DELETED"
    assert r.json()["message"].startswith(f"The sealed body of send {sid} was deleted by retention at ")
    after = api.get(f"/api/sends/{sid}", headers=org.admin.headers).json()["send"]
    assert (after["state"], after["state_at"], after["release_at"]) == (
        before["state"], before["state_at"], before["release_at"])
    assert _recipients(org, sid) == recipients
    assert org.entries("send.retried") == [] and org.entries("send.resent") == []
    with org.node.read() as conn:
        assert conn.execute(select(send_manifests.c.id).where(send_manifests.c.resend_of == sid)).all() == []


def test_a_retry_of_a_send_another_may_not_see_is_still_404(org: Retained, api: Any) -> None:
    sid, _ = org.send("someone else's", at=org.ago(8 * DAY), state="refused")
    assert _pass(org).purged == (sid,)
    stranger = org.person("stranger@example.test")
    r = api.post(f"/api/sends/{sid}/retry", json={"mode": "retry-effect"}, headers=stranger.headers)
    assert r.status_code == 404 and r.json()["error"] == "E_NO_SUCH_SEND"


def test_a_sends_html_part_is_deleted_with_its_body_and_the_thread_says_so(org: Retained, api: Any) -> None:
    # Issue 15: the HTML alternative is kept beside the text; retention must delete it with the rest.
    r = api.post("/api/sends", json={"mailbox_id": org.i.mailbox_id, "to": ["x@elsewhere.test"], "subject": "Results",
                                     "body": "text", "html": "<p>private words</p>"}, headers=org.admin.headers)
    assert r.status_code == 201, r.text
    sid, conversation_id = r.json()["send"]["id"], r.json()["send"]["conversation_id"]
    with org.node.read() as conn:
        html_digest = conn.execute(select(send_manifests.c.body_html_sha256)
                                   .where(send_manifests.c.id == sid)).scalar_one()
    assert html_digest and org.blob_exists(html_digest)
    before = api.get(f"/api/conversations/{conversation_id}", headers=org.admin.headers).json()
    assert before["conversation"]["thread"][0]["send"]["body"]["html"] == "<p>private words</p>"
    org.node.clock.advance(16 * DAY)  # type: ignore[attr-defined]
    assert _pass(org).purged == (sid,)
    assert not org.blob_exists(html_digest)
    after = api.get(f"/api/conversations/{conversation_id}", headers=org.admin.headers).json()
    item = after["conversation"]["thread"][0]["send"]
    assert item["body"] is None and item["content_deleted"]["setting"] == "sealed_body_seconds"
