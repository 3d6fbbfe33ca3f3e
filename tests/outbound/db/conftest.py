"""Fixtures for the outbound pipeline on a real database: an aiosmtpd sink as the smarthost, the ingress
listener (so DSNs come back through the real inbound path), and builders for ingested mail and sends."""

from __future__ import annotations

import smtplib
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

_ROOT = Path(__file__).resolve().parents[3]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from mailnode.ingress.materialise import materialise_receipt
from mailnode.ingress.smtp import start_listener
from mailnode.transports.smtp import SmtpTransport


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Received:
    """One SMTP transaction the sink took."""

    mail_from: str
    rcpt_tos: list[str]
    content: bytes


@dataclass
class SinkHandler:
    """Records every transaction; ``delay`` seconds before answering DATA (a slow smarthost)."""

    received: list[Received] = field(default_factory=list)
    delay: float = 0.0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        import asyncio

        if self.delay:
            await asyncio.sleep(self.delay)
        self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 2.0.0 Ok: queued"


@dataclass
class Sink:
    """A running sink: its port, handler, and a transport pointed at it."""

    port: int
    handler: SinkHandler

    def transport(self) -> SmtpTransport:
        return SmtpTransport("127.0.0.1", self.port, tls="none")


@contextmanager
def running_sink() -> Iterator[Sink]:
    """A real aiosmtpd server on loopback acting as the smarthost, stopped on exit."""
    handler = SinkHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield Sink(port, handler)
    finally:
        controller.stop()


@pytest.fixture
def sink() -> Iterator[Sink]:
    """A real aiosmtpd server on loopback acting as the smarthost."""
    with running_sink() as running:
        yield running


@pytest.fixture
def listener(node: Any, installed: Any) -> Iterator[Any]:
    """The node's own ingress listener, materialising each receipt at once (no DBOS)."""
    port = free_port()

    def materialise_now(ids: list[str]) -> None:
        for rid in ids:
            materialise_receipt(node, rid)

    controller = start_listener(node, materialise_now, "127.0.0.1", port)
    controller.port_used = port  # type: ignore[attr-defined]
    controller.node = node  # type: ignore[attr-defined]
    yield controller
    controller.stop()


def deliver(listener: Any, raw: bytes, mail_from: str, rcpts: list[str]) -> None:
    """Send ``raw`` to the ingress listener and wait until every receipt is materialised (the listener
    starts materialisation after its 250, off the event loop)."""
    import time

    from sqlalchemy import func, select

    from mailnode.schema.ingress import ingress_receipts

    with smtplib.SMTP("127.0.0.1", listener.port_used) as s:
        s.sendmail(mail_from, rcpts, raw)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with listener.node.read() as conn:
            pending = conn.execute(select(func.count()).select_from(ingress_receipts)
                                   .where(ingress_receipts.c.materialised_at.is_(None))).scalar_one()
        if pending == 0:
            return
        time.sleep(0.02)
    raise AssertionError("the listener did not materialise the delivery in time")


def inbound(subject: str = "Where is my order?", message_id: str = "<q1@remote.test>",
            sender: str = "customer@remote.test", **headers: str) -> bytes:
    """An inbound message to support@example.test with CRLF line endings."""
    msg = EmailMessage()
    msg["From"] = f"Customer <{sender}>"
    msg["To"] = "support@example.test"
    msg["Subject"] = subject
    msg["Message-ID"] = message_id
    for k, v in headers.items():
        msg[k.replace("_", "-")] = v
    msg.set_content("Hello, order 42 has not arrived.")
    return msg.as_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


@pytest.fixture
def hold_zero(api: Any, installed: Any) -> None:
    """Set the first mailbox's hold window to 0 s (immediately movable after the seal)."""
    r = api.patch(f"/api/mailboxes/{installed.mailbox_id}", json={"hold_window_seconds": 0},
                  headers={"Authorization": f"Bearer {installed.token}"})
    assert r.status_code == 200, r.text


Builder = Callable[..., Any]
