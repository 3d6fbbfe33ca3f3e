"""Statement budgets of a seal (no policies) and of a dispatch to one recipient, against budgets.py."""

from __future__ import annotations

from typing import Any

from mailnode import budgets
from mailnode.outbound import dispatch
from mailnode.outbound.seal import SealRequest, seal


def test_seal_and_dispatch_stay_within_their_statement_budgets(node: Any, installed: Any, sink: Any) -> None:
    with node.begin() as conn:
        from sqlalchemy import update

        from mailnode.schema.mail import mailboxes

        conn.execute(update(mailboxes).values(hold_window_seconds=0))
    request = SealRequest(mailbox_id=installed.mailbox_id, to=["ann@remote.test"], subject="Hello", body="Hi")
    with node.meter.measure(keep_sql=True) as sealing:
        sealed = seal(node, org_id=installed.org_id, author_id=installed.user_id, request=request)
    assert sealing.count <= budgets.SEAL_MAX_STATEMENTS, sealing.statements
    # Measured: authority 1, mailbox and addresses 1, the suppression list 1, governance's facts 2 (the
    # breaker statement, the live policies), conversation 1, manifest 1, recipients 1, Message-ID 1, search
    # document 1, audit 2 = 12 (on SQLite and PostgreSQL).

    async def one() -> dispatch.DispatchResult:
        return await dispatch.dispatch_one(node, sink.transport(), sealed.id)

    import asyncio

    with node.meter.measure(keep_sql=True) as dispatching:
        result = asyncio.run(one())
    assert result.state == "handed_over"
    assert dispatching.count <= budgets.DISPATCH_ONE_RECIPIENT_MAX_STATEMENTS, dispatching.statements
    # Measured: read 1, authority 1, governance's recheck 2 (breakers, live policies), provider breaker 1,
    # claim 1, recipients 1, bounce domain 1, mark 1, outcome 1, aggregate 1, audit 2, provider status
    # read and write 2 = 15.
