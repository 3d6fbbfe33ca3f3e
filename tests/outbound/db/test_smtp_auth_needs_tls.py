"""A send whose smarthost would take the relay password in clear does not leave, says why in words, and
goes once the setting is fixed (issue 14 item 9): a real aiosmtpd smarthost offering AUTH without
STARTTLS, the real seal and dispatch."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult
from sqlalchemy import select, update

from mailnode.outbound import dispatch
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.mail import mailboxes
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.transports.smtp import SmtpTransport

from .conftest import SinkHandler, free_port

pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning")


class _Recording(SMTP):
    commands: list[str]

    async def smtp_AUTH(self, arg: str) -> None:
        self.commands.append(arg)
        await super().smtp_AUTH(arg)


@pytest.fixture
def clear_auth_smarthost() -> Iterator[tuple[int, SinkHandler, list[str]]]:
    commands: list[str] = []

    class _Controller(Controller):
        def factory(self) -> SMTP:
            server = _Recording(self.handler, **self.SMTP_kwargs)
            server.commands = commands
            return server

    handler = SinkHandler()
    port = free_port()
    controller = _Controller(handler, hostname="127.0.0.1", port=port, auth_require_tls=False, auth_required=True,
                             authenticator=lambda *a: AuthResult(success=True))
    controller.start()
    yield port, handler, commands
    controller.stop()


def test_a_send_is_not_handed_over_with_auth_in_clear_and_goes_after_the_fix(
        node: Any, installed: Any, sink: Any, clear_auth_smarthost: tuple[int, SinkHandler, list[str]]) -> None:
    port, handler, commands = clear_auth_smarthost
    with node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))
    s = seal(node, org_id=installed.org_id, author_id=installed.user_id,
             request=SealRequest(mailbox_id=installed.mailbox_id, to=["ann@remote.test"], subject="Hi", body="Hi"))
    # The default TLS mode (opportunistic) against a smarthost that offers no STARTTLS, with credentials.
    clear = SmtpTransport("127.0.0.1", port, username="relay", password="s3cret-pw")
    report = dispatch.sweep(node, transport=clear)
    assert [r.state for r in report.results] == ["throttled"]
    assert commands == [] and handler.received == []
    with node.read() as conn:
        send = conn.execute(select(send_manifests).where(send_manifests.c.id == s.id)).one()
        rec = conn.execute(select(send_recipients).where(send_recipients.c.manifest_id == s.id)).one()
    # It did not leave, says why and what to set, and comes round again.
    assert (send.state, rec.submission_state) == ("throttled", "throttled")
    assert "E_SMTP_AUTH_NEEDS_TLS" in send.last_error and "MAILNODE_SMTP_TLS" in send.last_error
    assert "s3cret-pw" not in send.last_error
    # The fix (here: a relay that needs no login), and the send goes at its next turn.
    node.clock.set(send.release_at + timedelta(seconds=1))
    report = dispatch.sweep(node, transport=sink.transport())
    assert [r.state for r in report.results] == ["handed_over"]
    assert len(sink.handler.received) == 1
