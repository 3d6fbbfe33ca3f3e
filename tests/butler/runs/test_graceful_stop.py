"""A graceful stop of a real ``mailnode serve`` (SIGTERM, or SIGINT as Ctrl+C sends) loses no Butler run
(issue 14 item 3): a run parked on a release and a run inside a ``wait`` are both left PENDING by the
stop, recovered by the next start, and end as they would have without it; the stop logs no traceback;
a release answers what actually happened."""

from __future__ import annotations

import signal
import smtplib
import time
from typing import Any

import pytest
from dbos import DBOSClient

from mailnode import runtime
from mailnode.config import Settings
from tests.butler.runs.conftest import MAILBOX, Sink, ack_program, program
from tests.butler.runs.test_served import _corpus_message
from tests.support.served import Served

pytestmark = pytest.mark.slow

SIGNALS = [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")]


def _stop_cleanly(served: Served, sig: int) -> str:
    """Stop the node with ``sig``; assert it exits 0 and logs no traceback; the stopped process's log."""
    assert served.stop(sig) == 0
    text = served.log_paths[-1].read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text, text[-4000:]
    assert " ERROR " not in text and "[   ERROR]" not in text, text[-4000:]
    return text


def _workflow(served: Served, run_id: str) -> Any:
    """The run's DBOS workflow status, read from the node's system database as an operator would."""
    url = runtime.system_database_url_of(Settings(data_dir=served.data_dir,
                                                  database_url=served.env["MAILNODE_DATABASE_URL"]))
    client = DBOSClient(system_database_url=url)
    try:
        [found] = client.list_workflows(workflow_ids=[run_id], load_input=False, load_output=False)
        return found
    finally:
        client.destroy()


def _picked_up(served: Served, run_id: str, since_ms: int, seconds: float = 30) -> None:
    """Wait until the restarted node's executor runs the workflow again (PENDING, updated after ``since_ms``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = _workflow(served, run_id)
        if found.status == "PENDING" and (found.updated_at or 0) >= since_ms:
            return
        time.sleep(0.2)
    raise AssertionError(f"the restarted node did not pick up {run_id}: {_workflow(served, run_id)}")


@pytest.mark.parametrize("sig", SIGNALS)
def test_a_run_parked_on_a_release_resumes_after_a_graceful_stop(served: Served, sink: tuple[Sink, int],
                                                                  sig: int) -> None:
    served.start()
    served.call("PATCH", f"/api/mailboxes/{served.installed['mailbox_id']}", json={"hold_window_seconds": 0})
    served.publish(ack_program(), "send.propose")
    raw, _ = _corpus_message()
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("customer@remote.test", [MAILBOX], raw)
    parked = served.run(lambda r: r["state"] == "awaiting_release")
    send_id = parked["effect_rows"][-1]["subject"]

    log = _stop_cleanly(served, sig)
    assert f"workflow.left_pending id={parked['id']}" in log
    assert _workflow(served, parked["id"]).status == "PENDING"
    restarted_ms = int(time.time() * 1000)
    served.start()
    _picked_up(served, parked["id"], restarted_ms)
    stuck = next(f for f in served.call("GET", "/api/doctor")["findings"] if f["name"] == "butler_runs_stuck")
    assert (stuck["ok"], stuck["data"]["live"], stuck["data"]["stuck"]) == (True, 1, [])

    released = served.call("POST", f"/api/sends/{send_id}/release")["release"]
    assert (released["run_id"], released["resumption"], released["resumed"]) == (parked["id"], "delivered", True)
    done = served.run(lambda r: r["state"] == "finished")
    assert (done["id"], done["effects"], done["outcome_reason"]) == (parked["id"], 2, None)
    deadline = time.monotonic() + 30
    while not sink[0].received and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [rcpts for _, rcpts, _ in sink[0].received] == [["customer@remote.test"]]
    assert _workflow(served, parked["id"]).status == "SUCCESS"


@pytest.mark.parametrize("sig", SIGNALS)
def test_a_run_inside_a_wait_resumes_after_a_graceful_stop(served: Served, sig: int) -> None:
    served.start()
    served.publish(program([
        {"id": "read", "type": "lookup", "entity": "case", "entityId": "${event.case_id}", "as": "c",
         "next": "pause"},
        {"id": "pause", "type": "wait", "seconds": 10, "next": "take"},
        {"id": "take", "type": "case.assign", "caseId": "${steps.c.id}", "assignee": "${butler.id}", "next": None},
    ], "read", ["mailbox.metadata.read", "send.propose"], name="waits"), "send.propose", "mailbox.metadata.read")
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("customer@remote.test", [MAILBOX],
                   b"From: c@remote.test\r\nTo: support@example.test\r\nSubject: wait\r\nMessage-ID: <g1@remote.test>"
                   b"\r\n\r\nhi\r\n")
    waiting = served.run(lambda r: r["state"] == "running" and len(
        served.call("GET", f"/api/butler-runs/{r['id']}")["butler_run"]["effect_rows"]) == 1)

    _stop_cleanly(served, sig)
    assert _workflow(served, waiting["id"]).status == "PENDING"
    served.start()
    still = served.call("GET", f"/api/butler-runs/{waiting['id']}")["butler_run"]
    assert [e["node_id"] for e in still["effect_rows"]] == ["read"], "the wait ended before the restart"
    done = served.run(lambda r: r["state"] == "finished", seconds=60)
    assert done["id"] == waiting["id"]
    assert [(e["node_id"], e["outcome"]) for e in done["effect_rows"]] == [("read", "ok"), ("take", "ok")]
    assert done["effect_rows"][0] == waiting["effect_rows"][0]
    claims = served.call("GET", "/api/audit", params={"action": "case.claimed"})["entries"]
    assert len(claims) == 1 and claims[0]["actor_kind"] == "butler"
