"""Every approval stage asks its people (issue 9 "Notices"): the first stage when the approval is requested,
and each later stage when a decision fills the one before, through the product's own routes."""

from __future__ import annotations

from typing import Any

import pytest

from mailnode.notices import io as notices_io
from tests.governance.conftest import Person
from tests.governance.e2e.conftest import Org, sink  # noqa: F401  (the sink fixture Org needs)


@pytest.fixture
def org(node: Any, installed: Any, api: Any, sink: Any) -> Org:  # noqa: F811
    """An installed organisation driven through the API."""
    return Org(node, installed, api, sink)


def _asked(org: Org) -> list[Any]:
    with org.node.read() as conn:
        return list(notices_io.notices_of(conn, org.org_id, ["approval_asked"]))


def _team(org: Org, name: str, *members: Person) -> str:
    made = org.api.post("/api/teams", json={"name": name}, headers=org.admin.headers)
    assert made.status_code == 201, made.text
    team_id = str(made.json()["team"]["id"])
    for m in members:
        added = org.api.post(f"/api/teams/{team_id}/members", json={"user_id": m.id}, headers=org.admin.headers)
        assert added.status_code == 200, added.text
    return team_id


def _decide(org: Org, approval_id: str, who: Person) -> dict[str, Any]:
    r = org.api.post(f"/api/approvals/{approval_id}/decide", json={"decision": "approve"}, headers=who.headers)
    assert r.status_code == 200, r.text
    return dict(r.json()["decided"])


def test_the_second_stage_asks_its_team_once_the_first_is_filled(org: Org) -> None:
    box = org.i.mailbox_id
    bea = org.person("bea@example.test", ("approval.decide", box))
    cal = org.person("cal@example.test", ("approval.decide", box))
    dan = org.person("dan@example.test", ("approval.decide", box))
    # Eve is in the team but may not decide on this mailbox: never asked.
    eve = org.person("eve@example.test")
    reviewers = _team(org, "reviewers", cal, dan, eve)
    org.publish("one, then a reviewer", "require_approval", [{"count": 1}, {"count": 1, "team_id": reviewers}])
    sent = org.seal()  # alex asks: alex holds approval.decide too, and is never asked about their own send
    approval_id = sent["approval_id"]

    notices_io.run_pass(org.node)
    first = _asked(org)
    assert {n.recipient_user_id for n in first} == {bea.id, cal.id, dan.id}
    assert len({n.episode for n in first}) == 1
    assert all("stage 1" in n.body and f"POST /api/approvals/{approval_id}/decide" in n.body for n in first)
    # It says what is asked, so a decider knows before opening the queue.
    assert all(f"a send a policy holds until it is approved ({sent['id']})" in n.body for n in first)
    assert all(n.about == [sent["id"]] for n in first)

    decided = _decide(org, approval_id, cal)
    assert decided["approval_state"] == "pending" and decided["open_stage"]["ordinal"] == 2
    report = notices_io.run_pass(org.node)[org.org_id]
    second = [n for n in _asked(org) if n.episode != first[0].episode]
    # Stage 2 is the team's: Dan. Cal decided already, Bea is not in the team, Alex asked.
    assert [n.recipient_user_id for n in second] == [dan.id]
    assert "stage 2" in second[0].body
    assert report.written == [second[0].id] and report.sealed == [second[0].id]

    _decide(org, approval_id, dan)
    assert notices_io.run_pass(org.node)[org.org_id].written == []
    assert len(_asked(org)) == 4


def test_a_refused_or_already_settled_approval_asks_nobody(org: Org) -> None:
    box = org.i.mailbox_id
    bea = org.person("bea@example.test", ("approval.decide", box))
    org.person("cal@example.test", ("approval.decide", box))
    org.publish("two stages", "require_approval", [{"count": 1}, {"count": 1}])
    sent = org.seal()
    # Bea refuses before any notice pass ran: the request and the decision are read together, and nobody
    # is asked about an approval that is no longer pending.
    r = org.api.post(f"/api/approvals/{sent['approval_id']}/decide", json={"decision": "deny"}, headers=bea.headers)
    assert r.status_code == 200, r.text
    assert notices_io.run_pass(org.node)[org.org_id].written == []
    assert _asked(org) == []
