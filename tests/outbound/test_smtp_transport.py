"""The smtp transport against a real aiosmtpd sink that can misbehave; and its reply classification."""

from __future__ import annotations

import pytest

from mailnode.transports.base import SubmitState
from mailnode.transports.smtp import SmtpPhase, SmtpTransport, classify_smtp

from .conftest import Sink, free_port, make_message, make_submission

RID_ANN = "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B"
RID_BOB = "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9E"


@pytest.mark.parametrize(
    ("phase", "code", "state"),
    [
        (SmtpPhase.DATA, 250, "handed_over"),
        (SmtpPhase.DATA, 451, "throttled"),
        (SmtpPhase.DATA, 554, "refused"),
        (SmtpPhase.DATA, None, "outcome_unknown"),
        (SmtpPhase.DATA, 354, "outcome_unknown"),
        (SmtpPhase.RCPT, 550, "refused"),
        (SmtpPhase.RCPT, 450, "throttled"),
        (SmtpPhase.RCPT, None, "throttled"),
        (SmtpPhase.MAIL, 451, "throttled"),
        (SmtpPhase.MAIL, 553, "refused"),
        (SmtpPhase.CONNECT, None, "throttled"),
        (SmtpPhase.CONNECT, 421, "throttled"),
        (SmtpPhase.CONNECT, 554, "refused"),
        (SmtpPhase.EHLO, None, "throttled"),
        (SmtpPhase.STARTTLS, None, "throttled"),
        (SmtpPhase.AUTH, 535, "refused"),
        (SmtpPhase.AUTH, 454, "throttled"),
        (SmtpPhase.RCPT, 250, "throttled"),
    ],
)
def test_classification_table(phase: SmtpPhase, code: int | None, state: str) -> None:
    assert classify_smtp(phase, code).value == state


def transport(sink: Sink, **kwargs) -> SmtpTransport:  # type: ignore[no-untyped-def]
    return SmtpTransport(sink.host, sink.port, tls="opportunistic", **kwargs)


async def test_exact_bytes_verp_return_path_and_one_envelope_per_recipient(smtp_sink: Sink) -> None:
    message = make_message(to=("ann@example.test", "bob@example.test"), cc=(), bcc=())
    t = transport(smtp_sink)
    for address, rid in (("ann@example.test", RID_ANN), ("bob@example.test", RID_BOB)):
        outcome = await t.submit(make_submission(message, address, rid))
        assert outcome.state is SubmitState.HANDED_OVER
        assert outcome.transport_message_id == message.message_id
        assert "queued as SINK1" in outcome.detail
    first, second = smtp_sink.handler.envelopes
    assert (first.mail_from, first.rcpt_tos) == (f"bounces+{RID_ANN}@bounces.acme.test", ["ann@example.test"])
    assert (second.mail_from, second.rcpt_tos) == (f"bounces+{RID_BOB}@bounces.acme.test", ["bob@example.test"])
    assert first.content == second.content == make_submission(message, "ann@example.test", RID_ANN).rendered


async def test_bcc_recipient_gets_a_copy_without_a_bcc_header(smtp_sink: Sink) -> None:
    message = make_message()
    await transport(smtp_sink).submit(make_submission(message, "hidden@example.internal", RID_ANN))
    [env] = smtp_sink.handler.envelopes
    assert env.rcpt_tos == ["hidden@example.internal"]
    assert b"\r\nBcc:" not in env.content and b"hidden@example.internal" not in env.content


async def test_rcpt_5xx_is_refused(smtp_sink: Sink) -> None:
    smtp_sink.handler.rcpt_replies["ann@example.test"] = "550 5.1.1 <ann@example.test>: User unknown"
    outcome = await transport(smtp_sink).submit(make_submission(make_message(), "ann@example.test", RID_ANN))
    assert (outcome.state, outcome.error_code, outcome.error_name) == (SubmitState.REFUSED, 550, "rcpt_reply")
    assert smtp_sink.handler.data_seen == 0


async def test_rcpt_4xx_is_throttled(smtp_sink: Sink) -> None:
    smtp_sink.handler.rcpt_replies["ann@example.test"] = "450 4.2.1 Mailbox busy, try later"
    outcome = await transport(smtp_sink).submit(make_submission(make_message(), "ann@example.test", RID_ANN))
    assert (outcome.state, outcome.error_code) == (SubmitState.THROTTLED, 450)


async def test_mail_4xx_is_throttled(smtp_sink: Sink) -> None:
    smtp_sink.handler.mail_reply = "451 4.3.0 Try again"
    outcome = await transport(smtp_sink).submit(make_submission(make_message(), "ann@example.test", RID_ANN))
    assert (outcome.state, outcome.error_code, outcome.error_name) == (SubmitState.THROTTLED, 451, "mail_reply")


async def test_data_5xx_is_refused(smtp_sink: Sink) -> None:
    smtp_sink.handler.data_action = "554 5.7.1 Content rejected"
    outcome = await transport(smtp_sink).submit(make_submission(make_message(), "ann@example.test", RID_ANN))
    assert (outcome.state, outcome.error_code) == (SubmitState.REFUSED, 554)


async def test_disconnect_after_data_is_outcome_unknown(smtp_sink: Sink) -> None:
    smtp_sink.handler.data_action = "drop"
    outcome = await transport(smtp_sink).submit(make_submission(make_message(), "ann@example.test", RID_ANN))
    assert smtp_sink.handler.data_seen == 1
    assert outcome.state is SubmitState.OUTCOME_UNKNOWN
    assert outcome.error_name == "data_disconnected"


async def test_timeout_after_data_is_outcome_unknown(smtp_sink: Sink) -> None:
    smtp_sink.handler.data_action = "slow"
    smtp_sink.handler.slow_seconds = 1.0
    t = transport(smtp_sink, data_timeout=0.3)
    outcome = await t.submit(make_submission(make_message(), "ann@example.test", RID_ANN))
    assert (outcome.state, outcome.error_name) == (SubmitState.OUTCOME_UNKNOWN, "data_timeout")


async def test_connection_refused_is_throttled() -> None:
    t = SmtpTransport("127.0.0.1", free_port(), tls="none", connect_timeout=2)
    outcome = await t.submit(make_submission(make_message(), "ann@example.test", RID_ANN))
    assert (outcome.state, outcome.error_name) == (SubmitState.THROTTLED, "connect_connect_failed")


async def test_required_tls_without_starttls_sends_nothing(smtp_sink: Sink) -> None:
    t = SmtpTransport(smtp_sink.host, smtp_sink.port, tls="required")
    outcome = await t.submit(make_submission(make_message(), "ann@example.test", RID_ANN))
    assert (outcome.state, outcome.error_name) == (SubmitState.THROTTLED, "starttls_unavailable")
    assert smtp_sink.handler.envelopes == [] and smtp_sink.handler.data_seen == 0


async def test_password_never_appears_in_outcome_or_repr(smtp_sink: Sink) -> None:
    # The sink offers no AUTH, so login fails before MAIL; the secret must not leak into what we record.
    t = SmtpTransport(smtp_sink.host, smtp_sink.port, tls="none", username="relay", password="s3cret-pw")
    outcome = await t.submit(make_submission(make_message(), "ann@example.test", RID_ANN))
    assert outcome.state is SubmitState.THROTTLED
    assert "s3cret-pw" not in repr(outcome) and "s3cret-pw" not in repr(t)
    assert smtp_sink.handler.envelopes == []


def test_unknown_tls_mode_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="tls mode"):
        SmtpTransport("127.0.0.1", 25, tls="sometimes")  # type: ignore[arg-type]
