"""Delivery and complaint reports from the corpus, delivered to a mailbox: events recorded, none attributed.

The corpus reports are about mail this node never sent, so every event must stay unattributed
(``manifest_id`` NULL, type ``delivery_report`` / ``complaint_report``). Attribution to the node's own
sends (by VERP address and by original Message-ID) is tested with the outbound pipeline.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from mailnode.ingress import receipts, routing
from mailnode.ingress.materialise import materialise_receipt
from mailnode.schema.mail_messages import messages
from mailnode.schema.outbound import send_recipient_events
from tests.corpus import CORPUS


def _deliver(node: Any, raw: bytes) -> str:
    with node.read() as conn:
        route = routing.resolve(conn, "support@example.test")
    assert route is not None
    (rid,) = receipts.accept(node, raw, receipts.Envelope(mail_from="", routes=(route,), source="ingest"))
    return materialise_receipt(node, rid).message_id


def _expected() -> list[tuple[str, list[str]]]:
    rows: list[tuple[str, list[str]]] = []
    for line in (CORPUS / "bounces" / "expected.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["kind"] in ("bounce", "complaint") and r["recipients"]:
            rows.append((f"bounces/{r['file']}", [a.lower() for a in r["recipients"]]))
    for line in (CORPUS / "flufl-bounce" / "expected.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("expected_addresses"):
            rows.append((f"flufl-bounce/{r['file']}", [a.lower() for a in r["expected_addresses"]]))
    return rows


def test_reported_recipients_are_recorded_and_stay_unattributed(node: Any, installed: Any) -> None:
    expected = _expected()
    recorded: dict[str, set[str]] = {}
    for rel in sorted({f for f, _ in expected}):
        mid = _deliver(node, (CORPUS / rel).read_bytes())
        with node.read() as conn:
            rows = conn.execute(select(send_recipient_events).where(send_recipient_events.c.message_id == mid)).all()
            msg = conn.execute(select(messages).where(messages.c.id == mid)).one()
        assert msg.automated is not None, rel
        assert all(r.manifest_id is None for r in rows), rel
        assert {r.event_type for r in rows} <= {"delivery_report", "complaint_report"}, rel
        recorded[rel] = {(r.recipient or "").lower() for r in rows}
    wanted = sum(len(addrs) for _, addrs in expected)
    misses = [(f, a) for f, addrs in expected for a in addrs if a not in recorded[f]]
    share = (wanted - len(misses)) / wanted
    print(f"recorded {wanted - len(misses)} of {wanted} reported recipients ({share:.1%}); misses: {misses}")
    assert share >= 0.95, misses


def test_a_success_notice_and_a_complaint_keep_their_kind(node: Any, installed: Any) -> None:
    complaint = _deliver(node, (CORPUS / "bounces" / "arf-01.eml").read_bytes())
    with node.read() as conn:
        types = {r.event_type for r in conn.execute(select(send_recipient_events)
                                                      .where(send_recipient_events.c.message_id == complaint))}
    assert types == {"complaint_report"}
