"""Builders for governance wired into the outbound pipeline: seal through the API, sweep into a real
aiosmtpd sink, place pauses and trip breakers the way an organisation would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select, update

from mailnode.audit import audit_entries
from mailnode.authz import grant_unchecked
from mailnode.directory.domains import add_domain
from mailnode.mail.mailboxes import create_mailbox
from mailnode.node import Node
from mailnode.outbound import dispatch
from mailnode.schema.governance import approvals, breaker_limits
from mailnode.schema.mail import mailboxes
from tests.governance.conftest import Person, World
from tests.outbound.db.conftest import Sink, running_sink


@dataclass(frozen=True)
class Entry:
    """One audit entry, its detail parsed."""

    action: str
    subject: str | None
    actor_id: str | None
    detail: dict[str, Any]


class Org(World):
    """``World`` plus the acts that go through the product's own routes and functions."""

    def __init__(self, node: Node, installed: Any, api: Any, sink: Sink) -> None:
        super().__init__(node, installed)
        self.api = api
        self.sink = sink
        with node.begin() as conn:
            conn.execute(update(mailboxes).values(hold_window_seconds=0))

    def seal(self, who: Person | None = None, mailbox_id: str | None = None, to: str = "ann@remote.test",
             expect: int = 201) -> dict[str, Any]:
        """``POST /api/sends`` inline; the sealed send's JSON."""
        r = self.api.post("/api/sends", json={"mailbox_id": mailbox_id or self.i.mailbox_id, "to": [to],
                                              "subject": "Invoice 7", "body": "Attached."},
                          headers=(who or self.admin).headers)
        assert r.status_code == expect, r.text
        return dict(r.json()["send"])

    def read(self, send_id: str, who: Person | None = None) -> dict[str, Any]:
        """``GET /api/sends/{id}``."""
        r = self.api.get(f"/api/sends/{send_id}", headers=(who or self.admin).headers)
        assert r.status_code == 200, r.text
        return dict(r.json()["send"])

    def sweep(self) -> dispatch.SweepReport:
        """One sweep into the sink."""
        return dispatch.sweep(self.node, transport=self.sink.transport())

    def publish(self, name: str, outcome: str, stages: list[dict[str, Any]] | None = None,
                **conditions: Any) -> None:
        """Create and publish a policy as the administrator."""
        made = self.api.post("/api/policies", json={"name": name, "outcome": outcome, "conditions": conditions,
                                                    "stages": stages or []}, headers=self.admin.headers)
        assert made.status_code == 201, made.text
        done = self.api.post(f"/api/policies/{made.json()['policy']['id']}/publish", headers=self.admin.headers)
        assert done.status_code == 200, done.text

    def pause(self, domain: str = "example.test") -> dict[str, Any]:
        """Request a pause and have two other administrators approve it; the pause JSON."""
        b = self.admin_person(f"b.{domain}@example.test")
        c = self.admin_person(f"c.{domain}@example.test")
        r = self.api.post("/api/domain-pauses", json={"domain": domain, "reason": "compromised account"},
                          headers=self.admin.headers)
        assert r.status_code == 201, r.text
        pause = dict(r.json()["pause"])
        for p in (b, c):
            d = self.api.post(f"/api/approvals/{pause['approval_id']}/decide", json={"decision": "approve"},
                              headers=p.headers)
            assert d.status_code == 200, d.text
        return pause

    def trip_volume(self) -> None:
        """Limit this organisation to 1 recipient an hour and hand over 2 now."""
        with self.node.begin() as conn:
            conn.execute(breaker_limits.insert().values(org_id=self.org_id, volume_max_recipients=1,
                                                        updated_by=self.admin.id, updated_at=self.node.clock.now()))
        self.handed_over(2)

    def other_mailbox(self, domain: str = "other.test") -> str:
        """A mailbox on another sending domain the administrator may send from; its id."""
        now = self.node.clock.now()
        with self.node.begin() as conn:
            add_domain(conn, org_id=self.org_id, actor_id=self.admin.id, at=now, domain=domain)
            mid = str(create_mailbox(conn, org_id=self.org_id, actor_id=self.admin.id, at=now, name="Other",
                                     addresses=[f"billing@{domain}"], hold_window_seconds=0)["id"])
            grant_unchecked(conn, org_id=self.org_id, at=now, subject_id=self.admin.id, relation="send.propose",
                            object_id=mid, actor_id=None)
        return mid

    def entries(self, action: str, subject: str | None = None) -> list[Entry]:
        """Audit entries of ``action`` (about ``subject`` when given), oldest first."""
        q = select(audit_entries).where(audit_entries.c.action == action)
        if subject is not None:
            q = q.where(audit_entries.c.subject == subject)
        with self.node.read() as conn:
            rows = conn.execute(q.order_by(audit_entries.c.seq)).all()
        return [Entry(r.action, r.subject, r.actor_id, json.loads(r.detail) if isinstance(r.detail, str)
                      else dict(r.detail or {})) for r in rows]

    def approval_rows(self, send_id: str) -> list[Any]:
        """Approval rows whose subject is ``send_id``."""
        with self.node.read() as conn:
            return list(conn.execute(select(approvals).where(approvals.c.subject_id == send_id)).all())

    def received(self) -> list[str]:
        """Recipients the sink took, in order."""
        return [r for t in self.sink.handler.received for r in t.rcpt_tos]


@pytest.fixture
def sink() -> Iterator[Sink]:
    """A real aiosmtpd server on loopback acting as the smarthost."""
    with running_sink() as running:
        yield running


@pytest.fixture
def org(node: Node, installed: Any, api: Any, sink: Sink) -> Org:
    """An installed organisation, hold windows 0, with the API and a sink."""
    return Org(node, installed, api, sink)
