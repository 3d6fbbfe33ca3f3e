"""The demo's smarthost: a real aiosmtpd server on a free loopback port that keeps what it is given.

The node's ``smtp`` transport hands mail to it exactly as it would to an organisation's relay; the demo
reads the transactions back to show a released reply arriving with its headers. It accepts every
recipient and answers ``250`` only once the transaction is stored in memory.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from aiosmtpd.controller import Controller


@dataclass(frozen=True)
class Delivered:
    """One SMTP transaction the sink accepted: envelope sender, recipients and the message bytes."""

    mail_from: str
    rcpt_tos: tuple[str, ...]
    content: bytes


class _Handler:
    """aiosmtpd handler: stores each transaction under a lock (the server runs on its own thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: list[Delivered] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        """Keep the transaction, then accept it (RFC 5321 §4.2.2: 250 after the data is safe)."""
        content = envelope.original_content or envelope.content
        data = content if isinstance(content, bytes) else str(content).encode("utf-8")
        with self.lock:
            self.received.append(Delivered(str(envelope.mail_from), tuple(envelope.rcpt_tos), data))
        return "250 2.0.0 Ok: kept by the mailnode demo sink"


class Sink:
    """A started smarthost on ``127.0.0.1:port``; ``stop()`` ends it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._handler = _Handler()
        self._controller = Controller(self._handler, hostname="127.0.0.1", port=port)

    def start(self) -> Sink:
        """Start serving (returns once the server answers)."""
        self._controller.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._controller.stop()

    def received(self) -> list[Delivered]:
        """A copy of every transaction so far, oldest first."""
        with self._handler.lock:
            return list(self._handler.received)
