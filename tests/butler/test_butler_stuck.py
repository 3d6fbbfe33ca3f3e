"""``butler.stuck``: which live runs are stuck, decided from (run, workflow status, now) as a table, and the
longest a program may sleep (issue 14 item 4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailnode import budgets
from mailnode.butler.check import check
from mailnode.butler.stuck import RunFacts, WorkflowFacts, deadline, decide, wait_bound_seconds

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
GRACE = budgets.BUTLER_RUN_STUCK_GRACE_SECONDS
RELEASE = 3600.0
READ = WorkflowFacts(observed=False)


def _run(state: str = "awaiting_release", waits: int | None = 0) -> RunFacts:
    return RunFacts("btv_1-msg_1", "btl_1", state, T0, waits)


def _wf(status: str | None) -> WorkflowFacts:
    return WorkflowFacts(observed=True, status=status)


@pytest.mark.parametrize(("run", "workflow", "after", "why"), [
    # A live workflow within its deadline is not stuck, parked or walking.
    (_run(), _wf("PENDING"), 10, None),
    (_run("running", 3600), _wf("PENDING"), 3600 + GRACE, None),
    (_run(), _wf("ENQUEUED"), RELEASE + GRACE, None),
    (_run(), _wf("DELAYED"), 0, None),
    # Gone or ended: stuck at once, whatever the time.
    (_run(), _wf(None), 0, "workflow_missing"),
    (_run(), _wf("ERROR"), 0, "workflow_ended"),
    (_run(), _wf("CANCELLED"), 0, "workflow_ended"),
    (_run(), _wf("MAX_RECOVERY_ATTEMPTS_EXCEEDED"), 0, "workflow_ended"),
    (_run("running"), _wf("SUCCESS"), 0, "workflow_ended"),
    # A status never seen fails closed.
    (_run(), _wf("SOMETHING_NEW"), 0, "workflow_ended"),
    # Live but past the deadline: the release timeout for a parked run, the program's waits for a walking one.
    (_run(), _wf("PENDING"), RELEASE + GRACE + 1, "past_deadline"),
    (_run("running", 3600), _wf("PENDING"), 3600 + GRACE + 1, "past_deadline"),
    (_run("running", 0), _wf("PENDING"), GRACE + 1, "past_deadline"),
    # A program that does not check gets only the grace (the engine refuses it at once).
    (_run("running", None), _wf("ENQUEUED"), GRACE + 1, "past_deadline"),
    # Statuses unread: only the deadline is judged.
    (_run(), READ, RELEASE + GRACE, None),
    (_run(), READ, RELEASE + GRACE + 1, "past_deadline"),
], ids=lambda v: v if isinstance(v, (str, int)) or v is None else None)
def test_decide(run: RunFacts, workflow: WorkflowFacts, after: int, why: str | None) -> None:
    now = T0 + timedelta(seconds=after)
    found = decide(run, workflow, now, RELEASE)
    assert (found.why if found else None) == why
    if found is not None:
        assert (found.run_id, found.age_seconds, found.state_at) == (run.run_id, after, T0)
        assert found.workflow_status == (workflow.status if workflow.observed else None)
        assert found.to_json()["age_seconds"] == after


def test_a_saturated_wait_bound_is_never_due() -> None:
    far = deadline(_run("running", budgets.JSON_SAFE_INTEGER_MAX), RELEASE)
    assert far.year == 9999
    assert decide(_run("running", budgets.JSON_SAFE_INTEGER_MAX), _wf("PENDING"), T0 + timedelta(days=3650),
                  RELEASE) is None


def _program(nodes: list[dict[str, object]], entry: str) -> list[object]:
    doc = {"apiVersion": "mailnode/v1", "kind": "Butler", "metadata": {"name": "w", "owner": "team:t"},
           "capabilities": [], "trigger": {"event": "mail.received", "mailbox": "a@example.test"},
           "entry": entry, "nodes": nodes}
    import json

    checked = check(json.dumps(doc), pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert checked.ok and checked.ast is not None, [f.render() for f in checked.findings]
    return list(checked.ast.nodes)


@pytest.mark.parametrize(("nodes", "entry", "bound"), [
    ([{"id": "s", "type": "stop", "reason": "x"}], "s", 0),
    ([{"id": "w", "type": "wait", "seconds": 60, "next": None}], "w", 60),
    # Branches are added, not maxed: an over-estimate, never an under-estimate.
    ([{"id": "g", "type": "guard", "when": "event.subject == 'a'", "then": "a", "otherwise": "b"},
      {"id": "a", "type": "wait", "seconds": 10, "next": None},
      {"id": "b", "type": "wait", "seconds": 20, "next": None}], "g", 30),
    # A wait inside a loop counts once per item, under every enclosing loop.
    ([{"id": "l", "type": "foreach", "over": "event.attachments_list", "as": "x", "maxItems": 5, "body": "w",
       "next": "after"},
      {"id": "w", "type": "wait", "seconds": 7, "next": None},
      {"id": "after", "type": "wait", "seconds": 1, "next": None}], "l", 36),
])
def test_wait_bound_seconds(nodes: list[dict[str, object]], entry: str, bound: int) -> None:
    assert wait_bound_seconds(_program(nodes, entry)) == bound  # type: ignore[arg-type]
