"""The SMTP listener with real corpus mail: routing, refusals, threading, cases, raw bytes."""

from __future__ import annotations

import smtplib
import threading
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode.errors import MailnodeError
from mailnode.mail import cases as cases_mod
from mailnode.schema.ingress import ingress_receipts
from tests.corpus import CORPUS

H = lambda token: {"Authorization": f"Bearer {token}"}


def send(listener: Any, raw: bytes, mail_from: str, rcpts: list[str]) -> Any:
    """Send, then wait until the listener's materialisation (started after the 250) has caught up."""
    with smtplib.SMTP("127.0.0.1", listener.port_used) as s:
        refused = s.sendmail(mail_from, rcpts, raw)
    wait_materialised(listener.node)
    return refused


def wait_materialised(node: Any, seconds: float = 20) -> None:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with node.read() as conn:
            pending = conn.execute(select(func.count()).select_from(ingress_receipts)
                                   .where(ingress_receipts.c.materialised_at.is_(None))).scalar_one()
        if pending == 0:
            return
        time.sleep(0.02)
    raise AssertionError("receipts still unmaterialised")


def crlf(raw: bytes) -> bytes:
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def receipts_count(node: Any) -> int:
    with node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(ingress_receipts)).scalar_one())


def test_a_reply_joins_the_first_message_conversation_and_one_case(api: Any, installed: Any, listener: Any) -> None:
    first = EmailMessage()
    first["From"] = "Customer <customer@remote.test>"
    first["To"] = "support@example.test"
    first["Subject"] = "Where is my order?"
    first["Message-ID"] = "<q1@remote.test>"
    first.set_content("Hello, order 42 has not arrived.")
    send(listener, crlf(first.as_bytes()), "customer@remote.test", ["Support@Example.TEST"])
    reply = EmailMessage()
    reply["From"] = "Customer <customer@remote.test>"
    reply["To"] = "support@example.test"
    reply["Subject"] = "Re: Where is my order?"
    reply["Message-ID"] = "<q2@remote.test>"
    reply["In-Reply-To"] = "<q1@remote.test>"
    reply["References"] = "<q1@remote.test>"
    reply.set_content("Any news?")
    send(listener, crlf(reply.as_bytes()), "customer@remote.test", ["support@example.test"])

    listed = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages", headers=H(installed.token)).json()["messages"]
    assert [m["subject"] for m in listed] == ["Re: Where is my order?", "Where is my order?"]
    assert listed[0]["conversation_id"] == listed[1]["conversation_id"]
    assert listed[0]["case_id"] == listed[1]["case_id"]
    assert listed[1]["automated"] is None and listed[1]["reply_refusal"] is None
    conv = api.get(f"/api/conversations/{listed[0]['conversation_id']}", headers=H(installed.token)).json()
    assert len(conv["conversation"]["messages"]) == 2 and len(conv["conversation"]["cases"]) == 1
    cases = api.get(f"/api/cases?mailbox_id={installed.mailbox_id}&state=open", headers=H(installed.token)).json()
    assert [c["id"] for c in cases["cases"]] == [listed[0]["case_id"]]


def test_two_concurrent_claims_have_one_winner(api: Any, node: Any, installed: Any, listener: Any) -> None:
    raw = (CORPUS / "bounces" / "is-not-bounce-01.eml").read_bytes()
    send(listener, crlf(raw), "someone@remote.test", ["support@example.test"])
    case_id = api.get("/api/cases", headers=H(installed.token)).json()["cases"][0]["id"]
    admin = H(installed.token)
    bob = api.post("/api/users", json={"email": "bob@example.test"}, headers=admin).json()["user"]["id"]
    api.post("/api/access", json={"subject_id": bob, "relation": "send.propose", "object_id": installed.mailbox_id},
             headers=admin)
    barrier = threading.Barrier(2)
    outcomes: dict[str, Any] = {}

    def claim(who: str) -> None:
        barrier.wait()
        try:
            with node.begin() as conn:
                outcomes[who] = cases_mod.claim(conn, org_id=installed.org_id, principal_id=who,
                                                at=node.clock.now(), case_id=case_id)
        except MailnodeError as exc:
            outcomes[who] = exc

    threads = [threading.Thread(target=claim, args=(w,)) for w in (installed.user_id, bob)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [w for w, o in outcomes.items() if isinstance(o, dict)]
    losers = [o for o in outcomes.values() if isinstance(o, MailnodeError)]
    assert len(winners) == 1 and len(losers) == 1
    assert losers[0].code == "E_CASE_HELD" and winners[0] in losers[0].what and "since" in losers[0].what
    # Taking it over is explicit and audited; closing needs the holder.
    loser = bob if winners[0] == installed.user_id else installed.user_id
    r = api.post(f"/api/cases/{case_id}/close", headers=admin)
    if winners[0] == installed.user_id:
        assert r.json()["case"]["state"] == "closed"
    else:
        assert r.json()["error"] == "E_NOT_YOUR_CASE"
        taken = api.post(f"/api/cases/{case_id}/claim", json={"take": True}, headers=admin).json()["case"]
        assert taken["assignee_id"] == installed.user_id
        actions = [e["action"] for e in api.get("/api/audit", headers=admin).json()["entries"]]
        assert "case.claim_taken" in actions
    assert loser


def test_unknown_recipient_and_oversized_mail_are_refused_and_leave_no_row(node: Any, listener: Any) -> None:
    raw = b"From: a@remote.test\r\nTo: nobody@example.test\r\nSubject: x\r\n\r\nhi\r\n"
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        send(listener, raw, "a@remote.test", ["nobody@example.test"])
    assert next(iter(refused.value.recipients.values()))[0] == 550
    assert b"5.1.1" in next(iter(refused.value.recipients.values()))[1]
    with pytest.raises(smtplib.SMTPRecipientsRefused):
        send(listener, raw, "a@remote.test", ["bounces+srp_01HZZZZZZZZZZZZZZZZZZZZZZZ@example.test"])
    from mailnode import budgets

    big = raw + b"x" * (budgets.MESSAGE_MAX_BYTES + 10) + b"\r\n"
    with pytest.raises(smtplib.SMTPSenderRefused) as too_big:
        send(listener, big, "a@remote.test", ["support@example.test"])
    assert too_big.value.smtp_code == 552
    assert receipts_count(node) == 0


def test_long_lines_are_accepted_and_the_null_reverse_path_is_kept(api: Any, node: Any, installed: Any,
                                                                  listener: Any) -> None:
    raw = (b"From: MAILER-DAEMON@remote.test\r\nTo: support@example.test\r\nSubject: long\r\n\r\n"
           + b"y" * 5000 + b"\r\n")
    send(listener, raw, "", ["support@example.test"])
    msg = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages", headers=H(installed.token)).json()["messages"][0]
    assert msg["envelope_from"] == "" and msg["automated"] == "null_sender"
    assert api.get(f"/api/messages/{msg['id']}/raw", headers=H(installed.token)).content == raw


def test_bare_lf_line_endings_stay_refused(node: Any, listener: Any) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", listener.port_used), timeout=5) as s:
        f = s.makefile("rb")

        def reply() -> bytes:
            while True:
                line = f.readline()
                if len(line) < 4 or line[3:4] != b"-":
                    return line

        reply()
        for command in (b"EHLO x", b"MAIL FROM:<a@remote.test>", b"RCPT TO:<support@example.test>", b"DATA"):
            s.sendall(command + b"\r\n")
            reply()
        s.sendall(b"Subject: smuggle\n\nbody\n.\nMAIL FROM:<x@y>\r\n.\r\n")
        final = reply()
    assert not final.startswith(b"250"), final
    assert receipts_count(node) == 0


def _message_files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in (".eml", ".txt") and p.is_file()
                  and "LICENSES" not in p.parts)


def test_every_corpus_message_arrives_over_smtp_byte_for_byte(api: Any, node: Any, installed: Any,
                                                              listener: Any) -> None:
    files = _message_files()
    assert len(files) > 200
    for path in files:
        send(listener, crlf(path.read_bytes()), "sender@remote.test", ["support@example.test"])
    listed: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages?limit=500"
                       + (f"&cursor={cursor}" if cursor else ""),
                       headers=H(installed.token)).json()
        listed += page["messages"]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(listed) == len(files)
    by_sha = {}
    for m in listed:
        full = api.get(f"/api/messages/{m['id']}", headers=H(installed.token)).json()["message"]
        by_sha[full["sha256"]] = m["id"]
    import hashlib

    for path in files[:40]:
        wire = crlf(path.read_bytes())
        mid = by_sha[hashlib.sha256(wire).hexdigest()]
        assert api.get(f"/api/messages/{mid}/raw", headers=H(installed.token)).content == wire


def test_header_values_come_back_as_data(api: Any, installed: Any, listener: Any) -> None:
    raw = (b"From: a@remote.test\r\nTo: support@example.test\r\n"
           b"Subject: =?utf-8?q?hello=0D=0ABcc:_victim@remote.test?=\r\n\r\nhi\r\n")
    send(listener, raw, "a@remote.test", ["support@example.test"])
    mid = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages",
                  headers=H(installed.token)).json()["messages"][0]["id"]
    r = api.get(f"/api/messages/{mid}", headers=H(installed.token))
    assert r.headers["content-type"] == "application/json"
    assert "bcc" not in {k.lower() for k in r.headers}
    assert "victim@remote.test" in r.json()["message"]["subject"]
