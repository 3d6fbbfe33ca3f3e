"""One SMTP transaction delivers once per address, however often ``RCPT TO`` repeats it (issue 14 item 2)."""

from __future__ import annotations

import smtplib
from typing import Any

from sqlalchemy import func, select

from mailnode.ingress.tables import ingress_receipts
from mailnode.mail.message_tables import conversations, messages
from tests.ingress_db.test_smtp_listener import H, wait_materialised

RAW = (b"From: someone@remote.test\r\nTo: support@example.test\r\nSubject: once\r\n"
       b"Message-ID: <once@remote.test>\r\n\r\nhello\r\n")


def _count(node: Any, table: Any) -> int:
    with node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_a_recipient_named_two_thousand_times_makes_one_receipt(api: Any, node: Any, installed: Any,
                                                                listener: Any) -> None:
    # The same mailbox written as the client wrote it 2,000 times, the domain in varying case.
    rcpts = [("support@example.test", "support@EXAMPLE.test", "<support@Example.Test>")[i % 3] for i in range(2000)]
    with smtplib.SMTP("127.0.0.1", listener.port_used) as s:
        s.ehlo("client.test")
        s.mail("someone@remote.test")
        for rcpt in rcpts:
            code, _ = s.rcpt(rcpt.strip("<>"))
            assert code == 250
        code, _ = s.data(RAW)
        assert code == 250
    wait_materialised(node)
    assert _count(node, ingress_receipts) == 1
    assert _count(node, messages) == 1
    assert _count(node, conversations) == 1
    listed = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages", headers=H(installed.token)).json()
    assert [m["subject"] for m in listed["messages"]] == ["once"]
