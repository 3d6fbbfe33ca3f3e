"""Builders for the Butler lifecycle tests: programs as source text, an administrator, a member.

``program(reason)`` is the smallest clean Butler (one ``stop`` node); a different ``reason`` is a
different program (another ``ast_sha256``), the same reason written with other whitespace is the
same program (same ``ast_sha256``, another ``source_sha256``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import bearer


def program(reason: str = "nothing to do", indent: int | None = None, **top: Any) -> str:
    """The source text of a clean one-node Butler that stops with ``reason``."""
    doc: dict[str, Any] = {
        "apiVersion": "mailnode/v1",
        "kind": "Butler",
        "metadata": {"name": "quiet", "owner": "team:support"},
        "capabilities": [],
        "trigger": {"event": "mail.received", "mailbox": "support@example.test"},
        "entry": "done",
        "nodes": [{"id": "done", "type": "stop", "reason": reason}],
    }
    doc.update(top)
    return json.dumps(doc, indent=indent)


def docs_example() -> str:
    """The first example of docs/butlers.md (an acknowledgement reply; it has priced effect nodes)."""
    doc = Path(__file__).resolve().parents[3] / "docs" / "butlers.md"
    return re.findall(r"^```json\n(.*?)^```$", doc.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)[0]


@dataclass
class People:
    """The administrator's and a non-administrator member's Authorization headers and ids."""

    admin: dict[str, str]
    admin_id: str
    member: dict[str, str]
    member_id: str
    org_id: str


@pytest.fixture
def people(api: Any, installed: Any) -> People:
    """The installed administrator and Bob, a user with no relation at all."""
    from mailnode.directory.tokens import create_token

    admin = bearer(installed.token)
    r = api.post("/api/users", json={"email": "bob@example.test", "name": "Bob"}, headers=admin)
    assert r.status_code == 201, r.text
    bob_id = r.json()["user"]["id"]
    node = api.app.state.node
    with node.begin() as conn:
        _, bob_token = create_token(conn, org_id=installed.org_id, principal_id=bob_id, at=node.clock.now(),
                                    actor_id=installed.user_id, label="test")
    return People(admin=admin, admin_id=installed.user_id, member=bearer(bob_token), member_id=bob_id,
                  org_id=installed.org_id)


def audit_of(api: Any, people: People, action: str) -> list[dict[str, Any]]:
    """The audit entries of ``action``, oldest first, with ``detail`` parsed."""
    r = api.get("/api/audit", params={"action": action}, headers=people.admin)
    assert r.status_code == 200, r.text
    entries = list(reversed(r.json()["entries"]))
    for e in entries:
        e["detail"] = json.loads(e["detail"]) if e["detail"] else None
    return entries
