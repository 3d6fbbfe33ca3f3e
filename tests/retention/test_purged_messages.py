"""A message whose content retention deleted: every read route says so (``content_deleted_at``, the note,
410 for the raw bytes), its metadata stays, and none of its words are left in any table or in the evidence
store. spec/transactional.md §5; what counts as content: ``retention.rules``'s docstring."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import inspect, select, text

from mailnode.ingress import receipts, routing
from mailnode.ingress.materialise import Materialised, materialise_receipt
from mailnode.node import Node
from mailnode.retention import io as retention_io
from mailnode.schema.mail_messages import messages
from tests.retention.conftest import Retained

DAY = 86_400
#: A string that occurs only in the message under test: its body, a header the node keeps in its header
#: list, a recipient it was copied to, and a date the parser quotes in its diagnostics.
MARKER = "ZQX7-retention-marker"


def _raw(marker: str, n: int) -> bytes:
    return (f"From: Ann <ann@remote.test>\r\nTo: support@example.test\r\nCc: {marker}@remote.test\r\n"
            f"Subject: Lab results {n}\r\nDate: {marker}\r\nX-Study-Ref: {marker}\r\n"
            f"Message-ID: <r{n}@remote.test>\r\n\r\nPatient {marker} tested positive.\r\n").encode()


def _deliver(org: Retained, raw: bytes) -> Materialised:
    with org.node.read() as conn:
        route = routing.resolve(conn, org.i.mailbox_address)
    assert route is not None
    rid = receipts.accept(org.node, raw, receipts.Envelope(mail_from="ann@remote.test", routes=(route,)))[0]
    return materialise_receipt(org.node, rid)


def _tables_holding(node: Node, marker: str) -> list[str]:
    """Every ``schema.table`` (every schema the database has) with a row whose text holds ``marker``."""
    found: list[str] = []
    with node.read() as conn:
        inspector = inspect(conn)
        schemas = [s for s in inspector.get_schema_names()
                   if s not in ("information_schema",) and not s.startswith("pg_")]
        for schema in schemas:
            for table in inspector.get_table_names(schema=schema):
                name = f'"{table}"' if node.engine.dialect.name == "sqlite" else f'"{schema}"."{table}"'
                for row in conn.execute(text(f"SELECT * FROM {name}")).all():
                    if any(marker in str(value) for value in row):
                        found.append(f"{schema}.{table}")
                        break
    assert found or schemas, "no schema was searched"
    return found


def _files_holding(root: Path, marker: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and p.suffix not in (".db", ".db-wal", ".db-shm")
            and marker.encode() in p.read_bytes()]


def test_a_purged_message_says_so_everywhere_and_its_words_are_gone(org: Retained, api: Any) -> None:
    got = _deliver(org, _raw(MARKER, 1))
    also_old = _deliver(org, _raw("ALSO-" + MARKER[::-1], 2))
    h = org.admin.headers
    before = api.get(f"/api/messages/{got.message_id}", headers=h).json()["message"]
    assert MARKER in before["text_body"] and before["content_deleted_at"] is None
    assert before["content_deleted"] is None
    assert any(MARKER in hd["value"] for hd in before["headers"]) and MARKER in (before["parse_error"] or "")
    # The search below finds the words while they are there (so its silence afterwards means something).
    assert {"main.messages", "public.messages"} & set(_tables_holding(org.node, MARKER))
    assert _files_holding(org.node.settings.data_dir, MARKER)

    org.node.clock.advance(3 * DAY)  # type: ignore[attr-defined]
    kept_later = _deliver(org, _raw("LATER-" + MARKER[::-1], 3))
    org.node.clock.advance(5 * DAY)  # type: ignore[attr-defined]
    report = retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id]
    assert sorted(report.purged) == sorted([got.message_id, also_old.message_id])
    at = org.node.clock.now().isoformat()

    one = api.get(f"/api/messages/{got.message_id}", headers=h)
    assert one.status_code == 200, one.text
    message = one.json()["message"]
    assert message["content_deleted_at"] == at
    assert (message["text_body"], message["headers"], message["defects"], message["parse_error"]) == (
        None, None, None, None)
    note = message["content_deleted"]
    assert note["at"] == at and note["setting"] == "inbound_raw_seconds"
    assert f"message {got.message_id} were deleted by retention at {at}" in note["words"]
    assert "Nothing can restore it" in note["fix"]
    # The mailbox's index stays: who, when, what about, which conversation and case.
    assert (message["subject"], message["from_address"], message["from_name"]) == (
        "Lab results 1", "ann@remote.test", "Ann")
    assert (message["conversation_id"], message["case_id"]) == (got.conversation_id, got.case_id)
    assert message["received_at"] == before["received_at"] and message["sha256"] == before["sha256"]

    listed = {m["id"]: m for m in api.get(f"/api/mailboxes/{org.i.mailbox_id}/messages", headers=h).json()["messages"]}
    assert listed[got.message_id]["content_deleted_at"] == at
    assert listed[kept_later.message_id]["content_deleted_at"] is None
    thread = api.get(f"/api/conversations/{got.conversation_id}", headers=h).json()["conversation"]
    assert [(m["id"], m["content_deleted_at"]) for m in thread["messages"]] == [(got.message_id, at)]
    raw = api.get(f"/api/messages/{got.message_id}/raw", headers=h)
    assert raw.status_code == 410 and raw.json()["error"] == "E_CONTENT_DELETED"

    assert _tables_holding(org.node, MARKER) == []
    assert _files_holding(org.node.settings.data_dir, MARKER) == []
    # A message still retained keeps every word.
    later = api.get(f"/api/messages/{kept_later.message_id}", headers=h).json()["message"]
    assert "LATER-" + MARKER[::-1] in later["text_body"] and later["content_deleted"] is None
    assert _tables_holding(org.node, "LATER-" + MARKER[::-1])


def test_a_read_hides_content_the_ledger_says_is_deleted_even_if_the_row_still_holds_it(org: Retained,
                                                                                        api: Any) -> None:
    """A row purged before the purge cleared messages (or restored from an older backup) still reads as
    deleted: the route trusts the ledger, never the columns."""
    got = _deliver(org, _raw(MARKER, 4))
    org.node.clock.advance(8 * DAY)  # type: ignore[attr-defined]
    with org.node.begin() as conn:
        saved = conn.execute(select(messages.c.headers, messages.c.text_body, messages.c.defects,
                                    messages.c.parse_error).where(messages.c.id == got.message_id)).one()
    assert retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id].purged == (got.message_id,)
    with org.node.begin() as conn:
        conn.execute(messages.update().where(messages.c.id == got.message_id).values(**saved._asdict()))
    message = api.get(f"/api/messages/{got.message_id}", headers=org.admin.headers).json()["message"]
    assert (message["text_body"], message["headers"], message["defects"], message["parse_error"]) == (
        None, None, None, None)
    assert message["content_deleted"]["setting"] == "inbound_raw_seconds"


def test_a_held_message_keeps_its_content_and_says_nothing_was_deleted(org: Retained, api: Any) -> None:
    got = _deliver(org, _raw(MARKER, 5))
    placed = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id}, headers=org.admin.headers)
    assert placed.status_code == 201, placed.text
    org.node.clock.advance(30 * DAY)  # type: ignore[attr-defined]
    report = retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id]
    assert report.purged == () and report.hold_blocked == (got.message_id,)
    message = api.get(f"/api/messages/{got.message_id}", headers=org.admin.headers).json()["message"]
    assert MARKER in message["text_body"] and message["content_deleted_at"] is None
