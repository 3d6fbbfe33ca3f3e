"""Content retention deleted reads as deleted (``E_CONTENT_DELETED``, 410), never as corruption; a blob lost
without a purge record is still ``E_EVIDENCE_MISSING`` (500). spec/transactional.md §5."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select, update

from mailnode.errors import MailnodeError
from mailnode.ingress import receipts, routing
from mailnode.ingress.materialise import materialise_receipt
from mailnode.retention import io as retention_io
from mailnode.retention import rules as retention
from mailnode.schema.outbound import send_recipients
from mailnode.schema.retention import retained_content
from tests.retention.conftest import Retained

DAY = 86_400
T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MISSING = MailnodeError(code="E_EVIDENCE_MISSING", what="gone", status=500)
ALTERED = MailnodeError(code="E_EVIDENCE_ALTERED", what="changed", status=500)


@pytest.mark.parametrize(("kind", "purged_at", "read_error", "expected"), [
    ("inbound_raw", T, None, "E_CONTENT_DELETED"),  # a shared blob still there is not this content any more
    ("inbound_raw", T, MISSING, "E_CONTENT_DELETED"),
    ("sealed_body", T, ALTERED, "E_CONTENT_DELETED"),
    ("made_up_kind", T, MISSING, "E_CONTENT_DELETED"),
    (None, T, MISSING, "E_CONTENT_DELETED"),
    ("inbound_raw", None, None, None),
    (None, None, None, None),  # not enrolled in the ledger yet
    ("inbound_raw", None, MISSING, "E_EVIDENCE_MISSING"),
    (None, None, MISSING, "E_EVIDENCE_MISSING"),
    ("sealed_body", None, ALTERED, "E_EVIDENCE_ALTERED"),
])
def test_what_a_read_of_content_answers(kind: str | None, purged_at: datetime | None,
                                        read_error: MailnodeError | None, expected: str | None) -> None:
    refusal = retention.read_refusal(source_id="msg_x", kind=kind, purged_at=purged_at, read_error=read_error)
    assert (refusal.code if refusal else None) == expected
    if expected == "E_CONTENT_DELETED":
        assert refusal is not None and refusal.status == 410
        assert "deleted by retention at 2026-03-01T12:00:00+00:00" in refusal.what
        assert "GET /api/settings/retention" in refusal.fix and "Nothing can restore it" in refusal.fix


def test_every_content_kind_has_words() -> None:
    assert set(retention.CONTENT_WORDS) == set(retention.ContentKind)


def _deliver(org: Retained, raw: bytes) -> str:
    with org.node.read() as conn:
        route = routing.resolve(conn, org.i.mailbox_address)
    assert route is not None
    rid = receipts.accept(org.node, raw, receipts.Envelope(mail_from="ann@remote.test", routes=(route,)))[0]
    return materialise_receipt(org.node, rid).message_id


def _raw(n: int) -> bytes:
    return (f"From: Ann <ann@remote.test>\r\nTo: {n}@example.test\r\nSubject: Results {n}\r\n"
            f"Message-ID: <m{n}@remote.test>\r\n\r\nThe data.\r\n").encode()


def _purge_pass(org: Retained) -> tuple[str, ...]:
    return retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id].purged


def test_raw_bytes_retention_deleted_answer_410_with_when_and_the_setting(org: Retained, api: Any) -> None:
    raw = _raw(1)
    mid = _deliver(org, raw)
    ok = api.get(f"/api/messages/{mid}/raw", headers=org.admin.headers)
    assert ok.status_code == 200 and ok.content == raw
    org.node.clock.advance(8 * DAY)  # type: ignore[attr-defined]
    assert _purge_pass(org) == (mid,)
    gone = api.get(f"/api/messages/{mid}/raw", headers=org.admin.headers)
    assert gone.status_code == 410, gone.text
    body = gone.json()
    assert body["error"] == "E_CONTENT_DELETED"
    purged_at = org.node.clock.now().isoformat()
    assert f"The raw bytes of message {mid} were deleted by retention at {purged_at}" in body["message"]
    assert "inbound_raw_seconds" in body["why"]
    assert "GET /api/settings/retention" in body["fix"]
    assert body["detail"] == {"source_id": mid, "kind": "inbound_raw", "purged_at": purged_at,
                              "setting": "inbound_raw_seconds"}
    # The message itself, its metadata, is still there.
    assert api.get(f"/api/messages/{mid}", headers=org.admin.headers).status_code == 200


def test_attachments_and_bodies_retention_deleted_read_as_deleted(org: Retained, api: Any) -> None:
    from tests.ingress.test_ingress_reading import pdf_and_inline_image

    mid = _deliver(org, pdf_and_inline_image())
    ok = api.get(f"/api/messages/{mid}/attachments/2", headers=org.admin.headers)
    assert ok.status_code == 200 and ok.content.startswith(b"%PDF-")
    org.node.clock.advance(8 * DAY)  # type: ignore[attr-defined]
    assert _purge_pass(org) == (mid,)
    gone = api.get(f"/api/messages/{mid}/attachments/2", headers=org.admin.headers)
    assert gone.status_code == 410 and gone.json()["error"] == "E_CONTENT_DELETED", gone.text
    m = api.get(f"/api/messages/{mid}", headers=org.admin.headers).json()["message"]
    assert (m["html_body"], m["text_body"], m["attachment_list"]) == (None, None, None)
    assert m["content_deleted"] is not None and m["attachments"] == 2
    with org.node.read() as conn:  # the file names and digests went with the content
        from mailnode.schema.mail_messages import message_attachments
        assert conn.execute(select(message_attachments).where(message_attachments.c.message_id == mid)).all() == []


def test_a_purged_message_whose_blob_another_message_shares_still_reads_deleted(org: Retained, api: Any) -> None:
    raw = _raw(2)
    first = _deliver(org, raw)
    org.node.clock.advance(3 * DAY)  # type: ignore[attr-defined]
    second = _deliver(org, raw)
    org.node.clock.advance(5 * DAY)  # type: ignore[attr-defined]
    assert _purge_pass(org) == (first,)
    with org.node.read() as conn:
        digest = conn.execute(select(retained_content.c.digests)
                              .where(retained_content.c.source_id == second)).scalar_one()[0]
    assert org.blob_exists(digest)
    assert api.get(f"/api/messages/{first}/raw", headers=org.admin.headers).json()["error"] == "E_CONTENT_DELETED"
    kept = api.get(f"/api/messages/{second}/raw", headers=org.admin.headers)
    assert kept.status_code == 200 and kept.content == raw


@pytest.mark.parametrize("enrolled", [False, True])
def test_a_blob_lost_without_a_purge_record_is_still_evidence_missing(org: Retained, api: Any,
                                                                       enrolled: bool) -> None:
    mid = _deliver(org, _raw(3))
    if enrolled:
        with org.node.begin() as conn:
            retention_io.enrol(conn, org_id=org.org_id)
    with org.node.read() as conn:
        from mailnode.schema.mail_messages import messages
        digest = conn.execute(select(messages.c.raw_sha256).where(messages.c.id == mid)).scalar_one()
    org.node.evidence._path(digest).unlink()
    lost = api.get(f"/api/messages/{mid}/raw", headers=org.admin.headers)
    assert lost.status_code == 500 and lost.json()["error"] == "E_EVIDENCE_MISSING"


def test_resending_a_send_whose_body_retention_deleted_answers_410(org: Retained, api: Any) -> None:
    sid, digest = org.send("the body", at=org.ago(15 * DAY), state="outcome_unknown")
    with org.node.begin() as conn:
        conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == sid)
                     .values(submission_state="outcome_unknown"))
    assert _purge_pass(org) == (sid,)  # past the ceiling: deleted although it might still be retried
    assert not org.blob_exists(digest)
    r = api.post(f"/api/sends/{sid}/retry", json={"mode": "resend-may-duplicate", "reason": "lost?",
                                                  "accept_duplicate_risk": True}, headers=org.admin.headers)
    assert r.status_code == 410, r.text
    assert r.json()["error"] == "E_CONTENT_DELETED"
    assert r.json()["message"].startswith(f"The sealed body of send {sid} was deleted by retention at ")
    assert r.json()["detail"]["setting"] == "sealed_body_seconds"


def test_resending_a_send_whose_body_is_lost_without_a_purge_is_evidence_missing(org: Retained, api: Any) -> None:
    sid, digest = org.send("another body", at=org.ago(1 * DAY), state="outcome_unknown")
    with org.node.begin() as conn:
        conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == sid)
                     .values(submission_state="outcome_unknown"))
    org.node.evidence._path(digest).unlink()
    r = api.post(f"/api/sends/{sid}/retry", json={"mode": "resend-may-duplicate", "reason": "lost?",
                                                  "accept_duplicate_risk": True}, headers=org.admin.headers)
    assert r.status_code == 500 and r.json()["error"] == "E_EVIDENCE_MISSING"
