"""Builders for governance tests: people with relations, manifests with recipient rows, delivery events."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from mailnode.authz import grant_unchecked
from mailnode.directory.people import create_user
from mailnode.directory.tokens import create_token
from mailnode.ids import new_id
from mailnode.node import Node
from mailnode.schema.outbound import send_manifests, send_recipient_events, send_recipients


@dataclass(frozen=True)
class Person:
    """A user and a bearer header for them."""

    id: str
    headers: dict[str, str]


class World:
    """Builds rows for one installed organisation."""

    def __init__(self, node: Node, installed: Any) -> None:
        self.node = node
        self.i = installed
        self.org_id: str = installed.org_id
        self.admin = Person(installed.user_id, {"Authorization": f"Bearer {installed.token}"})

    def person(self, email: str, *relations: tuple[str, str]) -> Person:
        """A user holding each ``(relation, object_id)``."""
        now = self.node.clock.now()
        with self.node.begin() as conn:
            uid = create_user(conn, org_id=self.org_id, actor_id=None, at=now, email=email)["id"]
            for relation, object_id in relations:
                grant_unchecked(conn, org_id=self.org_id, at=now, subject_id=uid, relation=relation,
                                object_id=object_id, actor_id=None)
            _, token = create_token(conn, org_id=self.org_id, principal_id=uid, at=now, actor_id=None, label="test")
        return Person(uid, {"Authorization": f"Bearer {token}"})

    def admin_person(self, email: str) -> Person:
        """Another administrator."""
        return self.person(email, ("org.admin", self.org_id))

    def manifest(self, *, state: str = "held", reason: str | None = None, recipients: int = 1,
                 submission_state: str | None = None, at: datetime | None = None, author_id: str | None = None,
                 policy_outcome: str | None = None, envelope_from: str | None = None) -> tuple[str, list[str]]:
        """A manifest and its recipient rows, written directly; returns (manifest id, recipient ids)."""
        now = at or self.node.clock.now()
        mid = new_id("snd")
        rids = [new_id("srp") for _ in range(recipients)]
        with self.node.begin() as conn:
            conn.execute(send_manifests.insert().values(
                id=mid, org_id=self.org_id, mailbox_id=self.i.mailbox_id, author_id=author_id or self.i.user_id,
                envelope_from=envelope_from or self.i.mailbox_address, to_addresses=["x@elsewhere.test"],
                cc_addresses=[], bcc_addresses=[], subject="s", rfc_message_id=f"{mid}@example.test",
                fidelity="authored", body_typed_sha256="0" * 64, body_normalised_sha256="0" * 64, sealed_at=now,
                release_at=now, state=state, state_at=now, state_reason=reason, policy_outcome=policy_outcome))
            conn.execute(send_recipients.insert(), [
                {"id": r, "org_id": self.org_id, "manifest_id": mid, "kind": "to",
                 "address": f"r{n}.{mid[-6:]}@elsewhere.test", "submission_state": submission_state or state,
                 "submission_state_at": now, "created_at": now}
                for n, r in enumerate(rids)])
        return mid, rids

    def handed_over(self, n: int, at: datetime | None = None) -> tuple[str, list[str]]:
        """A send whose ``n`` recipients were handed over at ``at``."""
        return self.manifest(state="handed_over", recipients=n, at=at)

    def event(self, event_type: str, *, manifest_id: str | None, at: datetime | None = None,
              source: str = "test") -> str:
        """One ``send_recipient_events`` row, exactly as given (a corpus row)."""
        eid = new_id("sev")
        with self.node.begin() as conn:
            conn.execute(send_recipient_events.insert().values(
                id=eid, org_id=self.org_id, event_type=event_type, recipient="someone@elsewhere.test",
                manifest_id=manifest_id, source=source, source_event_id=eid,
                received_at=at or self.node.clock.now()))
        return eid

    def ago(self, seconds: float) -> datetime:
        """``seconds`` before the frozen clock's now."""
        return self.node.clock.now() - timedelta(seconds=seconds)


@pytest.fixture
def world(node: Node, installed: Any) -> World:
    """A builder over an installed node."""
    return World(node, installed)
