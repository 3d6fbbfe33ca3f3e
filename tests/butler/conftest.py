"""Builders for Butler documents: the smallest clean program, and edits to it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from mailnode import budgets
from mailnode.butler.check import CheckResult, check

BASE: dict[str, Any] = {
    "apiVersion": "mailnode/v1",
    "kind": "Butler",
    "metadata": {"name": "smallest", "owner": "team:support"},
    "capabilities": [],
    "trigger": {"event": "mail.received", "mailbox": "support@example.com"},
    "entry": "done",
    "nodes": [{"id": "done", "type": "stop", "reason": "nothing to do"}],
}

SEND_CAP = {"action": "send.propose", "resource": "mailbox:support@example.com"}
CONTENT_CAP = {"action": "mailbox.content.read", "resource": "mailbox:support@example.com"}
METADATA_CAP = {"action": "mailbox.metadata.read", "resource": "mailbox:support@example.com"}


def program(*nodes: dict[str, Any], entry: str | None = None, **top: Any) -> dict[str, Any]:
    """A document with ``nodes`` (default: one stop), entry at the first node, other keys overridden."""
    doc = copy.deepcopy(BASE)
    if nodes:
        doc["nodes"] = [copy.deepcopy(n) for n in nodes]
        doc["entry"] = nodes[0]["id"]
    if entry is not None:
        doc["entry"] = entry
    doc.update(copy.deepcopy(top))
    return doc


def run_check(doc: Any) -> CheckResult:
    """Check a document given as data (serialised compactly)."""
    return check(json.dumps(doc), pot=budgets.BUTLER_RUN_POT_STATEMENTS)


def codes(result: CheckResult) -> list[str]:
    """The finding codes in order."""
    return [f.code for f in result.findings]


@pytest.fixture
def build() -> Callable[..., dict[str, Any]]:
    """The ``program`` builder as a fixture."""
    return program
