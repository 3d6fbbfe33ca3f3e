"""Builders for retention and hold tests: sends whose bodies are real evidence blobs, audit reads."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import select

from mailnode.audit import audit_entries
from mailnode.ids import new_id
from mailnode.node import Node
from mailnode.schema.outbound import send_manifests, send_recipients
from tests.governance.conftest import World


class Retained(World):
    """``World`` plus sends carrying real blobs and audit reads."""

    def send(self, body: str, *, at: datetime, state: str = "handed_over") -> tuple[str, str]:
        """A send sealed at ``at`` whose typed body is ``body`` in the evidence store; (send id, body digest)."""
        digest = self.node.evidence.put(body.encode())
        sid = new_id("snd")
        with self.node.begin() as conn:
            conn.execute(send_manifests.insert().values(
                id=sid, org_id=self.org_id, mailbox_id=self.i.mailbox_id, author_id=self.i.user_id,
                envelope_from=self.i.mailbox_address, to_addresses=["x@elsewhere.test"], cc_addresses=[],
                bcc_addresses=[], subject="s", rfc_message_id=f"{sid}@example.test", fidelity="authored",
                body_typed_sha256=digest, body_normalised_sha256=digest, sealed_at=at, release_at=at,
                state=state, state_at=at))
            conn.execute(send_recipients.insert().values(
                id=new_id("srp"), org_id=self.org_id, manifest_id=sid, kind="to", address="x@elsewhere.test",
                submission_state=state, submission_state_at=at, created_at=at))
        return sid, digest

    def entries(self, action: str) -> list[dict[str, Any]]:
        """Audit entries of ``action``, oldest first, detail parsed."""
        with self.node.read() as conn:
            rows = conn.execute(select(audit_entries).where(audit_entries.c.action == action)
                                .order_by(audit_entries.c.seq)).all()
        return [{"subject": r.subject, "actor_id": r.actor_id, "outcome": r.outcome,
                 "detail": json.loads(r.detail) if r.detail else {}} for r in rows]

    def blob_exists(self, digest: str) -> bool:
        """Whether the evidence store still has ``digest``."""
        return bool(self.node.evidence._path(digest).exists())


@pytest.fixture
def org(node: Node, installed: Any) -> Retained:
    """A builder over an installed node."""
    return Retained(node, installed)
