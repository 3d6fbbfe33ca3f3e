"""Statement counts of governed seals and dispatches, measured with the statement meter against budgets.py.

Measured on SQLite and PostgreSQL alike: a seal that asks for an approval 15, a rate-gated seal 12, an
approved send's dispatch to one recipient 14, a dispatch that gates a send 10 (read, authority, breakers,
policies, the provider breaker, the recheck update that matches nothing, the transition, the recipients,
the audit entry's two), a dispatch that finds the send still gated at its recheck time 6 (the first five
and the update that writes the next recheck time), and one before its recheck time 1 (the read).
"""

from __future__ import annotations

import asyncio

from mailnode import budgets
from mailnode.outbound import dispatch
from mailnode.outbound.seal import Sealed, SealRequest, seal
from tests.governance.e2e.conftest import Org


def _seal(org: Org) -> tuple[Sealed, int]:
    request = SealRequest(mailbox_id=org.i.mailbox_id, to=["ann@remote.test"], subject="Hello", body="Hi")
    with org.node.meter.measure() as m:
        sealed = seal(org.node, org_id=org.org_id, author_id=org.admin.id, request=request)
    return sealed, m.count


def _dispatch(org: Org, send_id: str) -> tuple[dispatch.DispatchResult, int]:
    with org.node.meter.measure() as m:
        result = asyncio.run(dispatch.dispatch_one(org.node, org.sink.transport(), send_id))
    return result, m.count


def test_an_approval_gated_seal_and_the_approved_dispatch_stay_within_budget(org: Org) -> None:
    b = org.person("bea@example.test", ("approval.decide", org.i.mailbox_id))
    org.publish("one approver", "require_approval")
    sealed, n_seal = _seal(org)
    assert sealed.approval_id is not None
    assert n_seal <= budgets.SEAL_APPROVAL_REQUIRED_MAX_STATEMENTS
    org.api.post(f"/api/approvals/{sealed.approval_id}/decide", json={"decision": "approve"}, headers=b.headers)
    result, n = _dispatch(org, sealed.id)
    assert result.state == "handed_over"
    assert n <= budgets.DISPATCH_ONE_RECIPIENT_MAX_STATEMENTS


def test_a_rate_gated_seal_and_gated_dispatches_stay_within_budget(org: Org) -> None:
    plain, _ = _seal(org)
    org.trip_volume()
    gated, n_seal = _seal(org)
    assert gated.state_reason == "breaker_volume" and n_seal <= budgets.SEAL_MAX_STATEMENTS
    result, n = _dispatch(org, plain.id)
    assert result.state == "awaiting" and n <= budgets.DISPATCH_ONE_RECIPIENT_MAX_STATEMENTS
    # Before its recheck time the send is not movable: the read alone.
    early, n_early = _dispatch(org, plain.id)
    assert (early.state, early.detail, n_early) == (None, "not movable now", 1)
    org.node.clock.advance(budgets.BREAKER_RECHECK_SECONDS)
    again, n_again = _dispatch(org, plain.id)
    assert (again.state, again.detail) == (None, "breaker_volume") and n_again < n
