"""``decision_needed`` (issue 9 "Notices"): a send left ``outcome_unknown`` that nothing will re-drive tells
its author, against the local Resend server; one the sweeper will still retry tells nobody yet."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from mailnode.audit import audit_entries
from mailnode.errors import MailnodeError
from mailnode.notices import io as notices_io
from mailnode.outbound import dispatch, sweeper
from mailnode.outbound.realtime import send_realtime
from mailnode.outbound.seal import SealRequest, seal
from tests.outbound.resend.conftest import T0, Org, clock, emulator, org, settings  # noqa: F401  (fixtures)
from tests.support.resend_emulator import Fault


def _failed(org: Org) -> list[Any]:  # noqa: F811  (the fixture imported above)
    with org.node.read() as conn:
        return list(notices_io.notices_of(conn, org.installed.org_id, ["send_failed"]))


def test_correspondence_whose_hand_over_ended_outcome_unknown_tells_its_author_once(org: Org) -> None:  # noqa: F811
    org.emulator.add_fault(Fault(status=500, name="application_error"))
    sent = seal(org.node, org_id=org.installed.org_id, author_id=org.installed.user_id,
                request=SealRequest(mailbox_id=org.installed.mailbox_id, to=["ann@remote.test"],
                                    subject="Invoice 7", body="Attached."))
    [result] = dispatch.sweep(org.node).results
    assert result.state == "outcome_unknown" and org.requests() == 1
    # Nothing re-drives correspondence in outcome_unknown: neither the dispatch sweep nor the sweeper.
    assert dispatch.sweep(org.node).results == []
    notices_io.run_pass(org.node)
    notices_io.run_pass(org.node)
    [notice] = _failed(org)
    assert (notice.recipient_user_id, notice.episode, notice.about) == (org.installed.user_id, sent.id, [sent.id])
    assert "(decision_needed)" in notice.body and "may or may not have gone out" in notice.body
    assert f"POST /api/sends/{sent.id}/retry" in notice.body and "resend-may-duplicate" in notice.body
    assert notice.send_id is not None
    assert org.requests() == 1, "telling the author re-sent nothing"


def test_deferrable_mail_is_retried_silently_and_its_author_is_told_when_the_window_closes(
    org: Org,  # noqa: F811
) -> None:
    org.emulator.add_fault(Fault(status=500, name="application_error"))
    sent = org.deferrable()
    sweeper.run_pass(org.node)
    assert org.send(sent.id).state == "outcome_unknown" and org.send(sent.id).state_reason is None
    # The sweeper will retry it inside its key's window: not a person's decision yet.
    notices_io.run_pass(org.node)
    assert _failed(org) == []
    org.clock.set(T0 + timedelta(hours=40))
    sweeper.run_pass(org.node)
    assert (org.send(sent.id).state, org.send(sent.id).state_reason) == ("outcome_unknown", "dedup_window_closed")
    notices_io.run_pass(org.node)
    [notice] = _failed(org)
    assert notice.episode == sent.id and "(decision_needed)" in notice.body


def test_realtime_mail_left_outcome_unknown_tells_nobody(org: Org) -> None:  # noqa: F811
    org.emulator.add_fault(Fault(status=500, name="application_error"))
    with pytest.raises(MailnodeError) as refused:
        send_realtime(org.node, org_id=org.installed.org_id, author_id=org.installed.user_id,
                      request=SealRequest(mailbox_id=org.installed.mailbox_id, to=["ann@remote.test"],
                                          subject="Your code", body="123456"))
    assert refused.value.code == "E_SEND_UNAVAILABLE"
    send_id = refused.value.detail["send_id"]
    assert org.send(send_id).state == "outcome_unknown"
    with org.node.read() as conn:
        assert conn.execute(select(audit_entries.c.id).where(audit_entries.c.action == "send.outcome_unknown",
                                                             audit_entries.c.subject == send_id)).first() is not None
    notices_io.run_pass(org.node)
    # Its caller was answered 503 in the request; a notice would be mail about mail nobody will retry.
    assert _failed(org) == []
