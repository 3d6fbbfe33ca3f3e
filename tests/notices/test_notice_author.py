"""Who the audit trail says sealed a notice: the node, not the person it is for (issue 9 "Notices")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from mailnode import audit
from mailnode.audit import audit_entries
from mailnode.ids import new_id
from mailnode.notices import io as notices_io
from tests.governance.conftest import World


@pytest.fixture
def org(node: Any, installed: Any) -> World:
    """A builder over an installed node."""
    return World(node, installed)


def test_a_notice_is_sealed_by_the_node_and_names_its_reader(org: World) -> None:
    pause_id = new_id("dpz")
    with org.node.begin() as conn:
        audit.append(conn, org_id=org.org_id, at=org.node.clock.now(), action="domain.pause_placed",
                     actor_id=org.i.user_id, subject=pause_id, detail={"pause_id": pause_id, "domain": "example.test"})
    report = notices_io.run_pass(org.node)[org.org_id]
    assert len(report.sealed) == 1
    with org.node.read() as conn:
        (notice,) = notices_io.notices_of(conn, org.org_id, ["domain_pause_placed"])
        a = audit_entries.c
        sealed = conn.execute(select(a.actor_id, a.detail).where(a.action == "send.sealed",
                                                                 a.subject == notice.send_id)).one()
    detail = sealed.detail if isinstance(sealed.detail, dict) else json.loads(sealed.detail)
    # The person did not write it; saying they did would put words in their mouth in the audit trail.
    assert sealed.actor_id is None
    assert detail["notice_for"] == org.i.user_id == notice.recipient_user_id
