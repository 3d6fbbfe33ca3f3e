"""The dry run agrees with the live run (issue 17 item 6; seed 003: a dry run that diverges is worse than none).

Every Butler program in ``docs/butlers.md``, the demo's programs and the tests' fixture programs is run
both ways over the same deliveries: the run is opened, the dry run walks it first (over exactly what the
live run will see), then the live run performs it (a parked send is released, as the dry run assumes),
and the two are compared node by node: each effect's node, verdict (a dry ``would`` is a live ``ok``)
and refusal reason, in order, then the run's terminal state and reason. Runs in CI on SQLite and
PostgreSQL (``MAILNODE_TEST_DB``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID

from mailnode.butler.engine import run_butler
from mailnode.butler.simulate import WOULD
from mailnode.butler.trigger import open_runs_in
from mailnode.demo import programs as demo
from mailnode.schema.butler_runs import LIVE_STATES
from tests.butler.runs.builders import MAILBOX, World, message, release
from tests.butler.runs.conftest import docs_examples
from tests.butler.runs.test_metering import _EVERY_EFFECT
from tests.butler.runs.test_metering_worst_paths import _paths

#: The deliveries every program is walked over, in order: a person's mail naming an invoice, an
#: automatic reply (reply_refusal and automated set), and a person's second message.
DELIVERIES: tuple[Callable[[], bytes], ...] = (
    lambda: message(subject="Invoice 42 is overdue"),
    lambda: message(subject="Out of office", Auto_Submitted="auto-replied"),
    lambda: message(subject="Where is my order?"),
)


def _programs() -> dict[str, Callable[[str], dict[str, Any]]]:
    """Every program, by name; each takes the id of a person who may work cases."""
    out: dict[str, Callable[[str], dict[str, Any]]] = {}
    for doc in docs_examples():
        out[f"docs:{doc['metadata']['name']}"] = lambda _u, doc=doc: doc
    out["demo:acknowledge"] = lambda _u: demo.acknowledge(MAILBOX)
    out["demo:triage"] = lambda _u: demo.triage(MAILBOX)
    out["tests:every_effect"] = lambda _u: _EVERY_EFFECT
    for i in range(len(_paths("usr_x"))):
        out[f"tests:worst_path_{i}"] = lambda user, i=i: _paths(user)[i][0]
    return out


PROGRAMS = _programs()


def _open(world: World, raw: bytes) -> str:
    """Deliver ``raw`` without starting its workflows and open the Butler's run; the run id."""
    mid = world.deliver(raw, start=False)
    with world.node.begin() as conn:
        [run_id] = open_runs_in(conn, mid, world.node.clock.now())
    return run_id


def _settle(world: World, run_id: str) -> Any:
    """Wait for the live run to end, releasing each send it parks on (the dry run walks on as released)."""
    deadline = time.monotonic() + 30
    released: set[str] = set()
    while time.monotonic() < deadline:
        run = next(r for r in world.runs() if r.id == run_id)
        if run.state == "awaiting_release":
            send_id = world.effects(run_id)[-1].subject
            if send_id not in released:
                release(world, send_id)
                released.add(send_id)
        elif run.state not in LIVE_STATES:
            return run
        time.sleep(0.05)
    raise AssertionError(f"the live run {run_id} did not end")


def _dry(report: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(n["node_id"], "ok" if n["verdict"] == WOULD else n["verdict"],
             n["reason"] if n["verdict"] == "refused" else None) for n in report["nodes"] if "seq" in n]


def _live(rows: list[Any]) -> list[tuple[str, str, str | None]]:
    return [(e.node_id, e.outcome, e.reason if e.outcome == "refused" else None) for e in rows]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_dry_run_and_the_live_run_agree_node_by_node(world: World, name: str) -> None:
    user = world.installed.user_id
    world.grant(user, "send.propose")
    doc = PROGRAMS[name](user)
    bid, _ = world.publish(doc, name=f"{name.split(':')[1]}-{uuid.uuid4().hex[:4]}")
    world.grant(bid, *sorted({c["action"] for c in doc["capabilities"]}))
    compared = []
    for deliver in DELIVERIES:
        run_id = _open(world, deliver())
        r = world.api.post(f"/api/butlers/{bid}/simulate", json={"run_id": run_id}, headers=world.admin)
        assert r.status_code == 200, r.text
        dry = r.json()["simulation"]
        with SetWorkflowID(run_id):
            DBOS.start_workflow(run_butler, run_id)
        live = _settle(world, run_id)
        got = {"effects": _dry(dry), "end": (dry["outcome"]["state"], dry["outcome"]["reason"])}
        want = {"effects": _live(world.effects(run_id)), "end": (live.state, live.outcome_reason)}
        assert got == want, f"{name}: the dry run diverges from the live run"
        compared.append(want)
    # The comparison means something: every program did something on some delivery.
    assert any(c["effects"] or c["end"][0] != "finished" for c in compared), compared
