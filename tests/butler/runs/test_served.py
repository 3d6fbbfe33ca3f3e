"""A Butler on a real ``mailnode serve``: a corpus message over SMTP is answered, after a person's release,
to its envelope sender through a real aiosmtpd smarthost; and a run killed with ``kill -9`` during a
``wait`` resumes after a restart without repeating an effect."""

from __future__ import annotations

import smtplib
import sys
import time
from email import message_from_bytes
from email.policy import default as default_policy

import pytest

from tests.butler.runs.conftest import MAILBOX, Sink, ack_program, program
from tests.corpus import CORPUS
from tests.support.served import Served

pytestmark = pytest.mark.slow

MAILNODE = [sys.executable, "-m", "mailnode.cli"]


def _corpus_message() -> tuple[bytes, str]:
    """A real corpus message addressed to the mailbox, with From: and Reply-To: naming other people."""
    raw = (CORPUS / "bounces" / "is-not-bounce-01.eml").read_bytes()
    msg = message_from_bytes(raw, policy=default_policy)
    for name, value in (("To", MAILBOX), ("From", "Header Sender <header-from@elsewhere.test>"),
                        ("Reply-To", "reply-here@third.test"), ("Return-Path", "<customer@remote.test>")):
        del msg[name]
        msg[name] = value
    out = msg.as_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    return out, str(msg["Message-Id"]).strip()


def test_a_corpus_message_over_smtp_is_answered_to_its_envelope_sender_after_a_release(
        served: Served, sink: tuple[Sink, int]) -> None:
    served.start()
    served.call("PATCH", f"/api/mailboxes/{served.installed['mailbox_id']}", json={"hold_window_seconds": 0})
    # The acknowledgement replies to the parent, so the Butler reads the parent's mailbox too.
    served.publish(ack_program(), "send.propose")
    raw, rfc_id = _corpus_message()
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("customer@remote.test", [MAILBOX], raw)

    run = served.run(lambda r: r["state"] == "awaiting_release")
    assert "trigger_facts" not in run
    rows = run["effect_rows"]
    assert [(e["node_id"], e["outcome"], e["reason"]) for e in rows] == [
        ("reply", "ok", None), ("propose", "ok", "butler_release_required")]
    send_id = rows[1]["subject"]
    # A dispatch pass that began after the proposal existed has finished: an unreleased Butler send does not move.
    served.await_pass("dispatch_passes")
    assert sink[0].received == []
    assert served.call("GET", f"/api/sends/{send_id}")["send"]["state"] == "awaiting"

    released = served.call("POST", f"/api/sends/{send_id}/release")["release"]
    assert released["resumed"] is True and released["run_id"] == run["id"]
    deadline = time.monotonic() + 30
    while not sink[0].received and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(sink[0].received) == 1
    _, rcpts, content = sink[0].received[0]
    assert rcpts == ["customer@remote.test"]
    sent = message_from_bytes(content, policy=default_policy)
    assert sent["To"] == "customer@remote.test" and "reply-here" not in str(sent) and "header-from" not in sent["To"]
    assert sent["Auto-Submitted"] == "auto-replied"
    assert sent["In-Reply-To"] == rfc_id and rfc_id in sent["References"]
    assert sent["From"] == MAILBOX
    done = served.run(lambda r: r["state"] == "finished")
    assert (done["effects"], done["refusals"], done["outcome_reason"]) == (2, 0, None)


def test_kill_9_during_a_wait_resumes_without_repeating_an_effect(served: Served) -> None:
    served.start()
    served.publish(program([
        {"id": "read", "type": "lookup", "entity": "case", "entityId": "${event.case_id}", "as": "c",
         "next": "pause"},
        {"id": "pause", "type": "wait", "seconds": 6, "next": "take"},
        {"id": "take", "type": "case.assign", "caseId": "${steps.c.id}", "assignee": "${butler.id}", "next": None},
    ], "read", ["mailbox.metadata.read", "send.propose"], name="waits"), "send.propose", "mailbox.metadata.read")
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("customer@remote.test", [MAILBOX],
                   b"From: c@remote.test\r\nTo: support@example.test\r\nSubject: wait\r\nMessage-ID: <w1@remote.test>"
                   b"\r\n\r\nhi\r\n")
    before = served.run(lambda r: r["state"] == "running" and r["statements_spent"] > 0
                        and len(served.call("GET", f"/api/butler-runs/{r['id']}")["butler_run"]["effect_rows"]) == 1)
    assert [e["node_id"] for e in before["effect_rows"]] == ["read"]
    served.kill9()
    served.start()
    after = served.run(lambda r: r["state"] == "finished", seconds=60)
    assert after["id"] == before["id"]
    assert after["effect_rows"][0] == before["effect_rows"][0]
    assert [(e["node_id"], e["outcome"]) for e in after["effect_rows"]] == [("read", "ok"), ("take", "ok")]
    claims = served.call("GET", "/api/audit", params={"action": "case.claimed"})["entries"]
    assert len(claims) == 1 and claims[0]["actor_kind"] == "butler"
