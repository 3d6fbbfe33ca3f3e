"""Statement budgets of a seal (no policies), of a dispatch to one recipient, and of a dispatch batch,
against budgets.py."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select, update

from mailnode import budgets
from mailnode.outbound import dispatch
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.mail import mailboxes
from mailnode.schema.outbound import send_manifests


def _hold_zero(node: Any) -> None:
    with node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))


def test_seal_and_dispatch_stay_within_their_statement_budgets(node: Any, installed: Any, sink: Any) -> None:
    _hold_zero(node)
    request = SealRequest(mailbox_id=installed.mailbox_id, to=["ann@remote.test"], subject="Hello", body="Hi")
    with node.meter.measure(keep_sql=True) as sealing:
        sealed = seal(node, org_id=installed.org_id, author_id=installed.user_id, request=request)
    assert sealing.count <= budgets.SEAL_MAX_STATEMENTS, sealing.statements
    # Measured: authority 1, mailbox and addresses 1, the suppression list 1, governance's facts 2 (the
    # breaker statement, the live policies), conversation 1, manifest 1, recipients 1, Message-ID 1, search
    # document 1, audit 2 = 12 (on SQLite and PostgreSQL).

    async def one() -> dispatch.DispatchResult:
        return await dispatch.dispatch_one(node, sink.transport(), sealed.id)

    with node.meter.measure(keep_sql=True) as dispatching:
        result = asyncio.run(one())
    assert result.state == "handed_over"
    assert dispatching.count <= budgets.DISPATCH_ONE_RECIPIENT_MAX_STATEMENTS, dispatching.statements
    # Measured (a batch of one, issue 19): the send 1, authority 1, governance 3 (breakers, the
    # organisation's domains, live policies), provider breaker 1; claim 1, suppression 1, recipients 1;
    # the window: the locked provider row 1 (+1 creating it on a transport's first request), ticket 1,
    # request row 1, mark 1; the end: outcome 1, request row, provider row read and written 3, aggregate 1,
    # audit 2 = 21 on SQLite for this, the transport's first request; 22 on PostgreSQL.


def test_a_batch_dispatches_each_send_in_under_two_statements(node: Any, installed: Any, sink: Any) -> None:
    # Issue 19: a batch takes its governance facts once per organisation and sending domain, claims its
    # sends in one statement, marks and reserves a window of recipients together and writes the outcomes,
    # aggregates and audit entries once at the end. The count is deterministic, so it is asserted.
    _hold_zero(node)
    n = budgets.DISPATCH_BATCH_MAX
    for i in range(n + 1):
        seal(node, org_id=installed.org_id, author_id=installed.user_id, request=SealRequest(
            mailbox_id=installed.mailbox_id, to=[f"r{i}@remote.test"], subject=f"Hello {i}", body="Hi"))
    transport = sink.transport()
    # The first send alone, so the provider row exists and the batch below measures the steady state.
    assert [r.state for r in dispatch.sweep(node, transport=transport, limit=1).results] == ["handed_over"]
    with node.meter.measure(keep_sql=True) as batch:
        report = dispatch.sweep(node, transport=transport, limit=n)
    assert [r.state for r in report.results] == ["handed_over"] * n
    assert batch.count <= budgets.DISPATCH_BATCH_MAX_STATEMENTS, batch.statements
    # Measured for DISPATCH_BATCH_MAX = 20 one-recipient sends of one organisation, concurrency 8: the
    # sweep's own reads 3 (lapsed claims, provider breaker, due sends); the facts 6; claim, suppression and
    # recipients 3; three windows of 8, 8 and 4 recipients: 4 for the first (reserve 3, mark 1), 8 for the
    # next two (the previous window's answers 4, then reserve and mark 4); the end 7 (the last answers 4,
    # the aggregates 1, audit 2) = 39 on SQLite and PostgreSQL: under 2 a send, 19 to 20 before.
    with node.read() as conn:
        states = conn.execute(select(send_manifests.c.state)).scalars().all()
    assert sorted(set(states)) == ["handed_over"]
    assert len(sink.handler.received) == n + 1
