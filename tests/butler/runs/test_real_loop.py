"""A real loop on a real ``mailnode serve``: a Butler answers a correspondent whose responder (a scripted
aiosmtpd peer acting as the smarthost) answers every message it is handed, threaded and not marked
automatic, back to the node over SMTP; the test releases every proposal as a careless person would. After
the limit the node pauses the Butler; no more runs start; republishing does not clear the pause; a resume
with a reason does."""

from __future__ import annotations

import json
import os
import smtplib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import SMTP
from email.policy import default as default_policy
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from mailnode import budgets
from tests.butler.runs.conftest import MAILBOX, ack_program
from tests.ingress.db.conftest import free_port
from tests.support.served import Served

pytestmark = pytest.mark.slow

CORRESPONDENT = "customer@remote.test"
LIMIT = budgets.BUTLER_LOOP_MAX_SELF_PROVOKED_RUNS


@dataclass
class Responder:
    """The smarthost: keeps what it is handed and answers each message, threaded, as a person's client would."""

    node_smtp: int = 0
    received: list[EmailMessage] = field(default_factory=list)
    answering: bool = True

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        msg = message_from_bytes(envelope.content, policy=default_policy)
        assert isinstance(msg, EmailMessage)
        self.received.append(msg)
        if self.answering:
            threading.Thread(target=self.answer, args=(msg,), daemon=True).start()
        return "250 2.0.0 Ok: queued"

    def answer(self, original: EmailMessage) -> None:
        rfc = str(original["Message-ID"]).strip()
        reply = EmailMessage()
        reply["From"] = f"Customer <{CORRESPONDENT}>"
        reply["To"] = MAILBOX
        reply["Subject"] = f"Re: {original['Subject']}"
        reply["Message-ID"] = f"<{uuid.uuid4().hex}@remote.test>"
        reply["In-Reply-To"] = rfc
        reply["References"] = f"{original['References'] or ''} {rfc}".strip()
        reply.set_content("Thanks, but it still has not arrived.")
        with smtplib.SMTP("127.0.0.1", self.node_smtp, timeout=30) as c:
            c.sendmail(CORRESPONDENT, [MAILBOX], reply.as_bytes(policy=SMTP))


@pytest.fixture
def responder() -> Iterator[tuple[Responder, int]]:
    handler = Responder()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield handler, port
    finally:
        controller.stop()


@pytest.fixture
def served(tmp_path: Path, database_url: str, responder: tuple[Responder, int]) -> Iterator[Served]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILNODE_")}
    env.update({"MAILNODE_DATABASE_URL": database_url, "MAILNODE_MATERIALISE_SCAN_INTERVAL_SECONDS": "1",
                "MAILNODE_DISPATCH_INTERVAL_SECONDS": "1", "MAILNODE_TRANSPORT": "smtp",
                "MAILNODE_SMTP_RELAY": f"127.0.0.1:{responder[1]}", "MAILNODE_SMTP_TLS": "none",
                "MAILNODE_BUTLER_RELEASE_TIMEOUT_SECONDS": "120"})
    s = Served(tmp_path / "node", env)
    responder[0].node_smtp = s.smtp
    yield s
    s.stop()


def _until(check: Callable[[], Any], seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("the condition did not hold in time")


def _runs(served: Served) -> list[dict[str, Any]]:
    return list(served.call("GET", "/api/butler-runs", params={"limit": 100})["butler_runs"])


def _messages(served: Served) -> list[dict[str, Any]]:
    box = served.installed["mailbox_id"]
    return list(served.call("GET", f"/api/mailboxes/{box}/messages", params={"limit": 500})["messages"])


def _write(served: Served, subject: str) -> str:
    """Deliver a new message from the correspondent over SMTP; its message id once it is materialised."""
    msg = EmailMessage()
    msg["From"] = f"Customer <{CORRESPONDENT}>"
    msg["To"] = MAILBOX
    msg["Subject"] = subject
    msg["Message-ID"] = f"<{uuid.uuid4().hex}@remote.test>"
    msg.set_content("Hello, order 42 has not arrived.")
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail(CORRESPONDENT, [MAILBOX], msg.as_bytes(policy=SMTP))
    return str(_until(lambda: next((m["id"] for m in _messages(served) if m["subject"] == subject), None)))


def test_a_butler_answering_an_answering_correspondent_is_paused_and_only_a_resume_restarts_it(
        served: Served, responder: tuple[Responder, int]) -> None:
    peer = responder[0]
    served.start()
    served.call("PATCH", f"/api/mailboxes/{served.installed['mailbox_id']}", json={"hold_window_seconds": 0})
    bid = served.publish(ack_program(), "send.propose", "mailbox.content.read")
    _write(served, "Order 42")

    released: list[str] = []
    released_runs: set[str] = set()
    for _ in range(LIMIT + 1):
        # A released run may still read awaiting_release until its workflow records the release: take a run
        # not yet released, or the loop would release the same send twice.
        run = _until(lambda: next((r for r in _runs(served) if r["state"] == "awaiting_release"
                                   and r["id"] not in released_runs), None))
        released_runs.add(run["id"])
        rows = served.call("GET", f"/api/butler-runs/{run['id']}")["butler_run"]["effect_rows"]
        send_id = rows[-1]["subject"]
        assert served.call("POST", f"/api/sends/{send_id}/release")["release"]["resumed"] is True
        released.append(send_id)
        _until(lambda: len(peer.received) == len(released))

    # The peer answered the last release too; that delivery is one over the limit and pauses the Butler.
    pauses = _until(lambda: served.call("GET", "/api/butler-pauses")["butler_pauses"])
    [placed] = pauses
    assert (placed["butler_id"], placed["reason"]) == (bid, "loop_detected")
    assert placed["figure"]["self_provoked"] == LIMIT + 1 and placed["figure"]["limit"] == LIMIT
    runs = _runs(served)
    assert len(runs) == LIMIT + 1
    assert sorted(r["self_provoked"] for r in runs) == [False] + [True] * LIMIT
    # Every Butler send carried the automatic-reply marker; the peer ignored it, as the scenario says.
    assert all(m["Auto-Submitted"] == "auto-replied" for m in peer.received)

    # No more runs start, even for a new message.
    peer.answering = False
    question = _write(served, "A new question")
    # Its workflow has finished, so the trigger has decided on it: it refused the paused Butler, and said so.
    served.await_settled(question)
    assert len(_runs(served)) == LIMIT + 1
    assert f"butler.paused butler={bid} pause={placed['id']} message={question}" in served.log_text()
    # Republishing the Butler does not clear the pause.
    changed = ack_program()
    changed["nodes"][1]["body"] = "Thanks; a person will answer today."
    served.call("PUT", f"/api/butlers/{bid}/draft", json={"source": json.dumps(changed)})
    served.call("POST", f"/api/butlers/{bid}/publish")
    republished = _write(served, "After the republish")
    served.await_settled(republished)
    assert len(_runs(served)) == LIMIT + 1
    assert f"butler.paused butler={bid} pause={placed['id']} message={republished}" in served.log_text()
    doctor = [f for f in served.call("GET", "/api/doctor")["findings"] if f["name"] == "butler_paused"]
    assert doctor and doctor[0]["ok"] is False and placed["id"] in doctor[0]["fix"]

    # A resume with a reason does.
    served.call("POST", f"/api/butler-pauses/{placed['id']}/resume",
                json={"reason": "the correspondent's autoresponder was found and switched off"})
    _write(served, "After the resume")
    _until(lambda: len(_runs(served)) == LIMIT + 2)
    newest = _until(lambda: next((r for r in _runs(served) if r["state"] == "awaiting_release"), None))
    assert newest["self_provoked"] is False
