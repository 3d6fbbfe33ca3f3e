"""Issue 17 item 13: a published Butler listening on an address no mailbox has is a doctor finding (no
delivery can ever start it); a disabled Butler is not listed."""

from __future__ import annotations

from mailnode.doctor.checks import CHECKS, run_checks
from mailnode.doctor.findings import Severity
from tests.butler.runs.builders import World
from tests.butler.runs.conftest import program

NAME = "butler_trigger_unrouted"


def _finding(world: World) -> object:
    return run_checks(world.node, world.installed.org_id, [NAME])[0]


def _quiet(name: str, address: str) -> dict[str, object]:
    doc = program([{"id": "done", "type": "stop", "reason": "seen"}], "done", name=name)
    doc["trigger"] = {"event": "mail.received", "mailbox": address}
    return doc


def test_a_trigger_on_an_address_no_mailbox_has_is_a_finding_until_it_is_routed_or_disabled(world: World) -> None:
    assert NAME in CHECKS
    world.publish(_quiet("routed", "Support@Example.test"), name="routed")
    ok = _finding(world)
    assert (ok.ok, ok.severity) == (True, Severity.DEGRADED)  # type: ignore[attr-defined]

    bid, _ = world.publish(_quiet("typo", "suport@example.test"), name="typo")
    found = _finding(world)
    assert (found.ok, found.severity) == (False, Severity.DEGRADED)  # type: ignore[attr-defined]
    assert found.data["butlers"] == [{"butler_id": bid, "name": "typo",  # type: ignore[attr-defined]
                                      "address": "suport@example.test"}]
    assert "suport@example.test, which no mailbox has" in found.detail  # type: ignore[attr-defined]

    r = world.api.post(f"/api/butlers/{bid}/disable", json={"reason": "a typo in its trigger"}, headers=world.admin)
    assert r.status_code == 200, r.text
    assert r.json()["butler"]["disabled"]["reason"] == "a typo in its trigger"
    assert _finding(world).ok is True  # type: ignore[attr-defined]
