"""Doctor's ``system_sender_paused``: when the system sender's own domain is paused, the notice that reports the
pause is itself withheld, and doctor says so; ``system_sender_missing``: there is no system sender at all
(spec/transactional.md §1)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from mailnode.config import Settings
from mailnode.doctor.checks import CHECKS, run_checks
from mailnode.doctor.findings import Severity
from mailnode.doctor.notify_checks import system_sender_missing_finding, system_sender_pause_finding
from mailnode.errors import conflict
from mailnode.node import Node
from mailnode.notices import io as notices_io
from mailnode.schema.outbound import send_manifests
from tests.governance.e2e.conftest import Org, sink  # noqa: F401  (the sink fixture Org needs)

PAUSE = {"pause_id": "dpz_01JDKZ8Q4M6V8R2T0W3X5Y7Z9D", "domain": "example.test", "reason": "a leaked key",
         "age_seconds": 60}
MISSING = conflict("E_SYSTEM_SENDER_MISSING", "There is no mailbox address to send the node's own mail from.",
                   "System mail is sealed from an address of a node mailbox.",
                   "Set MAILNODE_SYSTEM_SENDER to an address of a mailbox (GET /api/mailboxes lists them).")


@pytest.mark.parametrize(
    ("sender", "in_force", "ok", "says", "fix"),
    [
        ("support@example.test", [], True, "which is not paused", ""),
        ("notices@ops.example.net", [PAUSE], True, "ops.example.net, which is not paused", ""),
        # A pause of the parent domain is not a pause of a subdomain (the seal's gate compares domains whole).
        ("notices@mail.example.test", [PAUSE], True, "which is not paused", ""),
        ("support@example.test", [PAUSE], False, "the one telling administrators of this pause included",
         f"POST /api/domain-pauses/{PAUSE['pause_id']}/lift"),
        ("Support@EXAMPLE.test", [{**PAUSE, "domain": "example.test"}], False, "is paused (a leaked key)",
         "MAILNODE_SYSTEM_SENDER"),
    ],
)
def test_system_sender_pause_finding(sender: str, in_force: list[dict[str, Any]], ok: bool, says: str,
                                     fix: str) -> None:
    finding = system_sender_pause_finding(sender, in_force)
    assert (finding.name, finding.severity, finding.ok) == ("system_sender_paused", Severity.DEGRADED, ok)
    assert says in finding.detail and fix in finding.fix
    assert bool(finding.fix) is not ok


@pytest.mark.parametrize("in_force", [[], [PAUSE]])
def test_with_no_system_sender_the_pause_is_not_observed(in_force: list[dict[str, Any]]) -> None:
    finding = system_sender_pause_finding(None, in_force)
    assert (finding.name, finding.severity, finding.ok) == ("system_sender_paused", Severity.REPORT, False)
    assert finding.detail.startswith("not observed: ") and "system_sender_missing" in finding.detail
    assert finding.data["observed"] is False


@pytest.mark.parametrize(
    ("sender", "error", "ok", "says", "fix"),
    [
        ("support@example.test", None, True, "support@example.test", ""),
        (None, MISSING, False, "cannot be sealed at all", "MAILNODE_SYSTEM_SENDER"),
        (None, None, False, "There is no system sender", "MAILNODE_SYSTEM_SENDER"),  # no error given: still missing
    ],
)
def test_system_sender_missing_finding(sender: str | None, error: Any, ok: bool, says: str, fix: str) -> None:
    finding = system_sender_missing_finding(sender, error)
    assert (finding.name, finding.severity, finding.ok) == ("system_sender_missing", Severity.DEGRADED, ok)
    assert says in finding.detail and fix in finding.fix
    assert bool(finding.fix) is not ok


@pytest.fixture
def org(node: Any, installed: Any, api: Any, sink: Any) -> Org:  # noqa: F811
    """An installed organisation driven through the API."""
    return Org(node, installed, api, sink)


def test_doctor_warns_when_the_pause_silences_its_own_notice(org: Org) -> None:
    assert "system_sender_paused" in CHECKS
    [before] = run_checks(org.node, org.org_id, ["system_sender_paused"])
    assert before.ok and "support@example.test" in before.detail
    pause = org.pause("example.test")
    notices_io.run_pass(org.node)
    with org.node.read() as conn:
        told = [n.send_id for n in notices_io.notices_of(conn, org.org_id, ["domain_pause_placed"])]
        states = {(r.state, r.state_reason) for r in conn.execute(
            select(send_manifests).where(send_manifests.c.id.in_(told))).all()}
    # Every administrator's notice of the pause was withheld by the pause itself.
    assert len(told) == 3 and states == {("withheld", "domain_paused")}
    [after] = run_checks(org.node, org.org_id, ["system_sender_paused"])
    assert (after.ok, after.severity) == (False, Severity.DEGRADED)
    assert after.data["pause_id"] == pause["pause_id"] and after.data["domain"] == "example.test"
    assert f"POST /api/domain-pauses/{pause['pause_id']}/lift" in after.fix


def test_doctor_says_when_there_is_no_system_sender_at_all(settings: Settings, installed: Any) -> None:
    misnamed = Node.open(settings.model_copy(update={"system_sender": "nobody@nowhere.test"}))
    try:
        missing, paused = run_checks(misnamed, installed.org_id, ["system_sender_missing", "system_sender_paused"])
    finally:
        misnamed.close()
    assert (missing.name, missing.ok, missing.severity, missing.data["code"]) == (
        "system_sender_missing", False, Severity.DEGRADED, "E_SYSTEM_SENDER_MISSING")
    assert "cannot be sealed at all" in missing.detail and "MAILNODE_SYSTEM_SENDER" in missing.fix
    # The pause finding does not repeat it under its own name: it has no domain to compare.
    assert (paused.ok, paused.severity) == (False, Severity.REPORT) and paused.detail.startswith("not observed")


def test_doctor_names_the_system_sender_when_there_is_one(settings: Settings, installed: Any, node: Node) -> None:
    assert "system_sender_missing" in CHECKS
    [finding] = run_checks(node, installed.org_id, ["system_sender_missing"])
    assert finding.ok and "support@example.test" in finding.detail
