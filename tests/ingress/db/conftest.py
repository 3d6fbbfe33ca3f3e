"""Fixtures for the inbound path: a node with a real aiosmtpd listener on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mailnode.ingress.materialise import materialise_receipt
from mailnode.ingress.smtp import start_listener
from tests.support.served import free_port


@pytest.fixture
def listener(node: Any, installed: Any) -> Iterator[Any]:
    """The ingress listener, materialising each receipt as soon as it is accepted (no DBOS here)."""
    port = free_port()

    def materialise_now(ids: list[str]) -> None:
        for rid in ids:
            materialise_receipt(node, rid)

    controller = start_listener(node, materialise_now, "127.0.0.1", port)
    controller.port_used = port  # type: ignore[attr-defined]
    controller.node = node  # type: ignore[attr-defined]
    yield controller
    controller.stop()
