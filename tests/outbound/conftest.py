"""Fixtures for the outbound tests: a real aiosmtpd sink, the local Resend server, submission builders."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from mailnode.outbound.render import OutboundMessage, make_message_id, render
from mailnode.transports.base import Submission
from tests.support.resend_emulator import EmulatorConfig, ResendEmulator

MANIFEST_ID = "snd_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A"
SEAL_TIME = datetime(2026, 11, 30, 9, 30, 0, tzinfo=UTC)


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SinkEnvelope:
    """What the SMTP sink received in one transaction."""

    mail_from: str
    rcpt_tos: list[str]
    content: bytes


@dataclass
class SinkHandler:
    """An aiosmtpd handler that records envelopes and can be told to misbehave.

    ``rcpt_replies`` maps an address to the reply RCPT gets; ``mail_reply`` replaces the MAIL reply;
    ``data_action`` is None (accept with 250), ``"drop"`` (close the connection after the data arrived,
    without a reply), ``"slow"`` (wait ``slow_seconds`` before 250) or a reply string such as ``"554 ..."``.
    """

    envelopes: list[SinkEnvelope] = field(default_factory=list)
    rcpt_replies: dict[str, str] = field(default_factory=dict)
    mail_reply: str | None = None
    data_action: str | None = None
    slow_seconds: float = 2.0
    data_seen: int = 0

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        if self.mail_reply:
            return self.mail_reply
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        reply = self.rcpt_replies.get(address)
        if reply:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.data_seen += 1
        if self.data_action == "drop":
            server.transport.close()
            return "250 never sent"
        if self.data_action == "slow":
            await asyncio.sleep(self.slow_seconds)
        elif self.data_action:
            return self.data_action
        self.envelopes.append(SinkEnvelope(envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 2.0.0 Ok: queued as SINK1"


@dataclass
class Sink:
    """A running aiosmtpd ``Controller`` on loopback and its handler."""

    host: str
    port: int
    handler: SinkHandler


@pytest.fixture
def smtp_sink() -> Iterator[Sink]:
    """A real aiosmtpd server on a free loopback port (no STARTTLS, no AUTH), stopped after the test."""
    handler = SinkHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield Sink("127.0.0.1", port, handler)
    finally:
        controller.stop()


@pytest.fixture
def resend_server() -> Iterator[Callable[..., ResendEmulator]]:
    """A builder: ``resend_server(config=None, clock=None)`` starts a local Resend API server."""
    started: list[ResendEmulator] = []

    def start(config: EmulatorConfig | None = None, clock: Callable[[], datetime] | None = None) -> ResendEmulator:
        emulator = ResendEmulator(config, clock)
        emulator.start()
        started.append(emulator)
        return emulator

    yield start
    for emulator in started:
        emulator.stop()


def make_message(**overrides: Any) -> OutboundMessage:
    """A reply with To, Cc and Bcc recipients; fields can be overridden."""
    values: dict[str, Any] = {
        "from_address": "support@acme.test",
        "from_name": "Acme Support",
        "to": ("ann@example.test",),
        "cc": ("cat@example.invalid",),
        "bcc": ("hidden@example.internal",),
        "subject": "Re: your order",
        "date": SEAL_TIME,
        "message_id": make_message_id(MANIFEST_ID, "acme.test"),
        "in_reply_to": "<parent@example.test>",
        "references": ("<root@example.test>", "<parent@example.test>"),
        "body": "Hello Ann,\nit ships today.\n",
    }
    values.update(overrides)
    return OutboundMessage(**values)


def make_submission(message: OutboundMessage, recipient: str, recipient_id: str, **overrides: Any) -> Submission:
    """The submission dispatch would build for one recipient of ``message``."""
    headers: list[tuple[str, str]] = []
    if message.in_reply_to:
        headers.append(("In-Reply-To", message.in_reply_to))
    if message.references:
        headers.append(("References", " ".join(message.references)))
    if message.auto_submitted:
        headers.append(("Auto-Submitted", message.auto_submitted))
    values: dict[str, Any] = {
        "manifest_id": MANIFEST_ID,
        "recipient_id": recipient_id,
        "recipient": recipient,
        "envelope_from": f"bounces+{recipient_id}@bounces.acme.test",
        "rendered": render(message),
        "message_id": message.message_id,
        "from_header": f"{message.from_name} <{message.from_address}>" if message.from_name else message.from_address,
        "to": message.to,
        "cc": message.cc,
        "bcc": message.bcc,
        "subject": message.subject,
        "text": message.body,
        "headers": tuple(headers),
    }
    values.update(overrides)
    return Submission(**values)
