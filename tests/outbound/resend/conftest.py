"""Fixtures for transactional mail on a real database against the local Resend server.

The node's transport is ``resend`` pointed at ``tests.support.resend_emulator`` (its own request counter
and scripted faults); the emulator's quota days follow the test's frozen clock, so moving the clock moves
both. ``org`` is an initialised node with a hold window of 0 and a builder for deferrable and realtime mail.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

_ROOT = Path(__file__).resolve().parents[3]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from mailnode.clock import FrozenClock
from mailnode.config import Settings
from mailnode.governance import provider_io
from mailnode.governance.provider import ProviderStatus
from mailnode.node import Node
from mailnode.outbound.seal import Sealed, SealRequest, seal
from mailnode.schema.mail import mailboxes
from mailnode.schema.outbound import send_manifests
from tests.support.resend_emulator import EmulatorConfig, ResendEmulator

#: A Tuesday morning, far from a month's end.
T0 = datetime(2026, 3, 10, 8, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    """The frozen clock, set to ``T0``."""
    c = FrozenClock()
    c.set(T0)
    return c


@pytest.fixture
def emulator(clock: FrozenClock) -> Iterator[ResendEmulator]:
    """The local Resend server, on the test's clock."""
    emu = ResendEmulator(EmulatorConfig(), clock=clock.now)
    emu.start()
    yield emu
    emu.stop()


@pytest.fixture
def settings(tmp_path: Path, database_url: str, emulator: ResendEmulator) -> Settings:
    """A node whose transport is the local Resend server."""
    return Settings(data_dir=tmp_path / "node", database_url=database_url, transport="resend",
                    resend_base_url=emulator.base_url, resend_api_key="re_test_full")


@dataclass
class Org:
    """An initialised node with builders."""

    node: Node
    installed: Any
    emulator: ResendEmulator
    clock: FrozenClock

    def deferrable(self, to: str = "person@remote.test", subject: str = "Notice") -> Sealed:
        """Seal deferrable mail from the mailbox as its administrator."""
        return seal(self.node, org_id=self.installed.org_id, author_id=self.installed.user_id,
                    request=SealRequest(mailbox_id=self.installed.mailbox_id, to=[to], subject=subject,
                                        body="Hello", mail_class="deferrable"))

    def send(self, send_id: str) -> Any:
        """The manifest row."""
        with self.node.read() as conn:
            return conn.execute(select(send_manifests).where(send_manifests.c.id == send_id)).one()

    def status(self) -> ProviderStatus:
        """The resend transport's breaker row."""
        with self.node.read() as conn:
            return provider_io.read_status(conn, "resend")

    def requests(self) -> int:
        """``POST /emails`` requests the provider has seen."""
        return len(self.emulator.sends())


@pytest.fixture
def org(node: Node, installed: Any, emulator: ResendEmulator, clock: FrozenClock) -> Org:
    """The node after ``init``, its mailbox's hold window 0."""
    with node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))
    return Org(node, installed, emulator, clock)
