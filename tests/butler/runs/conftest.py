"""Builders for the Butler run tests: a node with DBOS launched in this process, published Butlers,
grants, deliveries through the real receipt and materialisation workflow, and waiting on runs.

The programs are the three examples of ``docs/butlers.md`` with their addresses moved onto the test
organisation's mailbox (``support@example.test``), and small programs written here.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import select

from mailnode import runtime, wiring
from mailnode.config import Settings
from mailnode.ingress import receipts, routing
from mailnode.ingress import workflows as ingress_workflows
from mailnode.node import Node
from mailnode.schema.butler_runs import LIVE_STATES, butler_run_effects, butler_runs
from mailnode.schema.ingress import ingress_receipts
from tests.conftest import bearer
from tests.support.served import Served, free_port, served_env

MAILBOX = "support@example.test"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "butlers.md"


def docs_examples() -> list[dict[str, Any]]:
    """Every JSON example of docs/butlers.md, its addresses moved to ``support@example.test``."""
    blocks = re.findall(r"^```json\n(.*?)^```$", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return [json.loads(re.sub(r"[a-z]+@example\.com", MAILBOX, b)) for b in blocks]


def program(nodes: list[dict[str, Any]], entry: str, capabilities: list[str] | None = None,
            name: str = "test") -> dict[str, Any]:
    """A Butler document on ``support@example.test`` declaring ``capabilities`` (actions) on it."""
    return {"apiVersion": "mailnode/v1", "kind": "Butler", "metadata": {"name": name, "owner": "team:test"},
            "capabilities": [{"action": a, "resource": f"mailbox:{MAILBOX}"} for a in capabilities or []],
            "trigger": {"event": "mail.received", "mailbox": MAILBOX}, "entry": entry, "nodes": nodes}


def ack_program() -> dict[str, Any]:
    """The acknowledgement example of docs/butlers.md."""
    return docs_examples()[0]


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    """Settings with a short release gate and a distinct executor id (DBOS trap 3)."""
    return Settings(data_dir=tmp_path / "node", database_url=database_url, butler_release_timeout_seconds=30,
                    executor_id=f"test-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def dbos(node: Node, installed: Any) -> Iterator[Node]:
    """DBOS launched in this process over ``node`` (destroyed at the end of the test)."""
    wiring.launch(node, role="test")
    try:
        yield node
    finally:
        runtime.shutdown()


@dataclass
class World:
    """The installed organisation and helpers over the API and the database."""

    api: Any
    node: Node
    installed: Any

    @property
    def admin(self) -> dict[str, str]:
        return bearer(self.installed.token)

    def publish(self, doc: dict[str, Any], name: str | None = None) -> tuple[str, str]:
        """Create and publish a Butler; returns ``(butler id, version id)``."""
        r = self.api.post("/api/butlers", json={"name": name or f"b-{uuid.uuid4().hex[:6]}", "source": json.dumps(doc)},
                          headers=self.admin)
        assert r.status_code == 201, r.text
        bid = r.json()["butler"]["id"]
        r = self.api.post(f"/api/butlers/{bid}/publish", headers=self.admin)
        assert r.status_code == 200, r.text
        return bid, r.json()["published"]["version_id"]

    def grant(self, subject_id: str, *relations: str) -> None:
        for relation in relations:
            r = self.api.post("/api/access", json={"subject_id": subject_id, "relation": relation,
                                                   "object_id": self.installed.mailbox_id}, headers=self.admin)
            assert r.status_code in (200, 201), r.text

    def revoke(self, subject_id: str, relation: str) -> None:
        r = self.api.get("/api/access", params={"subject_id": subject_id}, headers=self.admin)
        grant = next(g for g in r.json()["grants"] if g["relation"] == relation)
        assert self.api.delete(f"/api/access/{grant['id']}", headers=self.admin).status_code == 200

    def deliver(self, raw: bytes, mail_from: str = "customer@remote.test", start: bool = True) -> str:
        """Accept ``raw`` for the mailbox and (with ``start``) run its materialisation workflow; the message id."""
        with self.node.read() as conn:
            route = routing.resolve(conn, MAILBOX)
        assert route is not None
        rid = receipts.accept(self.node, raw, receipts.Envelope(mail_from=mail_from, routes=(route,), source="smtp"))[0]
        if not start:
            from mailnode.ingress.materialise import materialise_receipt

            return materialise_receipt(self.node, rid).message_id
        ingress_workflows.start([rid])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with self.node.read() as conn:
                mid = conn.execute(select(ingress_receipts.c.message_id)
                                   .where(ingress_receipts.c.id == rid)).scalar_one()
            if mid:
                return str(mid)
            time.sleep(0.02)
        raise AssertionError("the delivery was not materialised")

    def await_settled(self, message_id: str, seconds: float = 30) -> None:
        """Return once the workflow of the receipt that made ``message_id`` has finished: the steps after
        materialisation (the Butler trigger) ran, so every run it would open is open."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.node.read() as conn:
                done = conn.execute(select(ingress_receipts.c.workflow_done_at)
                                    .where(ingress_receipts.c.message_id == message_id)).scalars().all()
            if done and all(at is not None for at in done):
                return
            time.sleep(0.02)
        raise AssertionError(f"the workflow of {message_id}'s receipt did not finish")

    def runs(self, message_id: str | None = None) -> list[Any]:
        with self.node.read() as conn:
            q = select(butler_runs)
            if message_id:
                q = q.where(butler_runs.c.trigger_key == message_id)
            return list(conn.execute(q.order_by(butler_runs.c.started_at)).all())

    def effects(self, run_id: str) -> list[Any]:
        with self.node.read() as conn:
            return list(conn.execute(select(butler_run_effects).where(butler_run_effects.c.run_id == run_id)
                                     .order_by(butler_run_effects.c.seq)).all())

    def wait_run(self, message_id: str, until: Callable[[Any], bool] | None = None, seconds: float = 30) -> Any:
        """The one run of ``message_id`` once ``until`` holds (default: terminal)."""
        check = until or (lambda r: r.state not in LIVE_STATES)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            runs = self.runs(message_id)
            if len(runs) == 1 and check(runs[0]):
                return runs[0]
            time.sleep(0.05)
        raise AssertionError(f"run of {message_id} did not get there: {self.runs(message_id)}")


@pytest.fixture
def world(api: Any, installed: Any, dbos: Node) -> World:
    """The installed organisation with DBOS running."""
    return World(api=api, node=dbos, installed=installed)


def message(subject: str = "Where is my order?", sender: str = "customer@remote.test", to: str = MAILBOX,
            message_id: str | None = None, **headers: str) -> bytes:
    """An inbound message addressed to the mailbox, CRLF line endings."""
    msg = EmailMessage()
    msg["From"] = f"Customer <{sender}>"
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = message_id or f"<{uuid.uuid4().hex}@remote.test>"
    for k, v in headers.items():
        msg[k.replace("_", "-")] = v
    msg.set_content("Hello, order 42 has not arrived.")
    return msg.as_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


# --- a real `mailnode serve` and a real smarthost (the served tests) -----------------------------------

@dataclass
class Sink:
    """An aiosmtpd smarthost that keeps every transaction."""

    received: list[tuple[str, list[str], bytes]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 2.0.0 Ok: queued"


@pytest.fixture
def sink() -> Iterator[tuple[Sink, int]]:
    """A real aiosmtpd smarthost on a free loopback port: its handler and port."""
    handler = Sink()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield handler, port
    finally:
        controller.stop()


@pytest.fixture
def served(tmp_path: Path, database_url: str, sink: tuple[Sink, int]) -> Iterator[Served]:
    """A ``mailnode serve`` (not started) relaying to ``sink``, with one-second sweeps and a 120 s release gate."""
    env = served_env(database_url, MAILNODE_MATERIALISE_SCAN_INTERVAL_SECONDS="1",
                     MAILNODE_DISPATCH_INTERVAL_SECONDS="1", MAILNODE_TRANSPORT="smtp",
                     MAILNODE_SMTP_RELAY=f"127.0.0.1:{sink[1]}", MAILNODE_SMTP_TLS="none",
                     MAILNODE_BUTLER_RELEASE_TIMEOUT_SECONDS="120")
    s = Served(tmp_path / "node", env)
    yield s
    s.stop()
