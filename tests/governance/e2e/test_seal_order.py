"""The total order at seal, end to end: each gate with every gate ranked below it also triggered.

policy deny > domain pause > require_approval > policy hold > (Butler release, provider) > rate gate >
allow (spec/outbound.md Part A 9). Each row sets up the gate named and every lower one it can, seals
through ``POST /api/sends``, and checks what a person would see: the state and reason, the recipients
following, whether an approval was asked and whether ``send.rate_limited`` was written.
"""

from __future__ import annotations

import pytest

from tests.governance.e2e.conftest import Org


def _setup(org: Org, gates: tuple[str, ...]) -> None:
    if "rate" in gates:
        org.trip_volume()
    org.approval_decide = org.person("dee@example.test", ("approval.decide", org.i.mailbox_id))  # type: ignore[attr-defined]
    if "pause" in gates:
        org.pause()
    # One policy outcome per organisation at a time: the strongest named policy gate is published.
    for outcome in ("deny", "require_approval", "hold"):
        if outcome in gates:
            org.publish(outcome, outcome)
            break


ORDER = [
    # (gates triggered, expected state, expected reason, approval asked, rate_limited written)
    (("deny", "pause", "rate"), "withheld", "policy_denied", False, False),
    (("pause", "require_approval", "rate"), "withheld", "domain_paused", False, False),
    (("require_approval", "rate"), "awaiting", "policy_approval_required", True, False),
    (("hold", "rate"), "awaiting", "policy_hold", False, False),
    (("rate",), "awaiting", "breaker_volume", False, True),
    ((), "held", None, False, False),
]


@pytest.mark.parametrize(("gates", "state", "reason", "asked", "limited"), ORDER,
                         ids=[r[2] or "allow" for r in ORDER])
def test_the_strongest_gate_wins_at_seal(org: Org, gates: tuple[str, ...], state: str, reason: str | None,
                                         asked: bool, limited: bool) -> None:
    _setup(org, gates)
    sent = org.seal()
    assert (sent["state"], sent["state_reason"]) == (state, reason)
    read = org.read(sent["id"])
    assert {r["submission_state"] for r in read["recipients"]} == {state}
    assert read["policy_outcome"] == next((g for g in ("deny", "require_approval", "hold") if g in gates), "allow")
    # A refusal writes no approval row (Part A 1); only the approval gate asks.
    assert bool(org.approval_rows(sent["id"])) is asked
    assert (sent["approval_id"] is not None) is asked
    assert bool(org.entries("send.rate_limited", sent["id"])) is limited
    sealed = org.entries("send.sealed", sent["id"])[0].detail
    assert sealed["state_reason"] == reason and len(sealed["breakers"]) == 3
    assert sealed["domain_paused"] is not None if "pause" in gates else sealed["domain_paused"] is None


def test_a_rate_gate_at_seal_is_audited_once_with_its_figures(org: Org) -> None:
    org.trip_volume()
    sent = org.seal()
    [entry] = org.entries("send.rate_limited", sent["id"])
    assert entry.detail["at"] == "seal" and entry.detail["breaker"] == "volume"
    assert entry.detail["observed"] == 2 and entry.detail["limit"] == 1 and entry.detail["retry_after_exact"] is True
    assert "2 of 1 recipients" in sent["last_error"]
