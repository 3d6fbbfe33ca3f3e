"""One suite, every transport: capabilities, one copy per recipient, Bcc hidden, ids reported."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email import message_from_bytes
from pathlib import Path

import pytest

from mailnode.transports.base import SubmitState, Transport
from mailnode.transports.file import FileTransport, envelope_lines
from mailnode.transports.resend import ResendTransport
from mailnode.transports.smtp import SmtpTransport

from .conftest import MANIFEST_ID, Sink, make_message, make_submission

RECIPIENT_IDS = {
    "ann@example.test": "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B",
    "cat@example.invalid": "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9C",
    "hidden@example.internal": "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9D",
}


@dataclass
class Received:
    """What the far side got for one recipient: the envelope recipient list, return path, and message."""

    recipients: list[str]
    return_path: str | None
    raw: bytes | None
    fields: dict[str, object] | None


@dataclass
class Harness:
    transport: Transport
    received: Callable[[], list[Received]]


@pytest.fixture(params=["file", "smtp", "resend"])
def harness(request: pytest.FixtureRequest, tmp_path: Path, smtp_sink: Sink, resend_server) -> Iterator[Harness]:
    kind = request.param
    if kind == "file":
        outbox = tmp_path / "outbox"

        def read_files() -> list[Received]:
            out = []
            for path in sorted(outbox.glob("*.eml")):
                data = path.read_bytes()
                head, _, rest = data.partition(b"\r\n")
                rcpt, _, raw = rest.partition(b"\r\n")
                out.append(Received([rcpt.decode()[len("X-Envelope-To: <"):-1]],
                                    head.decode()[len("X-Envelope-From: <"):-1], raw, None))
            return out

        yield Harness(FileTransport(outbox), read_files)
    elif kind == "smtp":
        def read_sink() -> list[Received]:
            return [Received(e.rcpt_tos, e.mail_from, e.content, None) for e in smtp_sink.handler.envelopes]

        yield Harness(SmtpTransport(smtp_sink.host, smtp_sink.port, tls="opportunistic"), read_sink)
    else:
        emulator = resend_server()

        def read_emulator() -> list[Received]:
            out = []
            for req in emulator.sends():
                body = json.loads(req.body)
                out.append(Received(body["to"], None, None, body))
            return out

        yield Harness(ResendTransport(emulator.base_url, "re_test_full"), read_emulator)


async def test_capabilities_are_declared_in_the_closed_vocabulary(harness: Harness) -> None:
    caps = harness.transport.capabilities
    assert caps.name in ("file", "smtp", "resend")
    assert caps.max_recipients_per_submission == 1
    assert caps.delivery_signals in ("webhook", "dsn", "none")
    assert caps.fidelity in ("authored", "reconstructed")
    assert caps.idempotency_window_seconds is None or caps.idempotency_window_seconds > 0
    expected = {"file": ("none", "authored"), "smtp": ("dsn", "authored"), "resend": ("webhook", "reconstructed")}
    assert (caps.delivery_signals, caps.fidelity) == expected[caps.name]


async def test_one_copy_per_recipient_and_bcc_never_shown(harness: Harness) -> None:
    message = make_message()
    outcomes = {}
    for address, rid in RECIPIENT_IDS.items():
        outcome = await harness.transport.submit(make_submission(message, address, rid))
        outcomes[address] = outcome
        assert outcome.state is SubmitState.HANDED_OVER, outcome.detail
        assert outcome.transport_message_id
        assert outcome.provider_message_id
    await harness.transport.aclose()
    received = harness.received()
    # Exactly one copy per recipient, each naming only its own recipient in the envelope.
    assert sorted(r.recipients[0] for r in received) == sorted(RECIPIENT_IDS)
    assert all(len(r.recipients) == 1 for r in received)
    caps = harness.transport.capabilities
    for r in received:
        if caps.fidelity == "authored":
            rid = RECIPIENT_IDS[r.recipients[0]]
            assert r.return_path == f"bounces+{rid}@bounces.acme.test"
            assert r.raw is not None
            expected = make_submission(message, r.recipients[0], rid).rendered
            assert r.raw == expected
            parsed = message_from_bytes(r.raw)
            assert parsed["Bcc"] is None
            assert b"hidden@example.internal" not in r.raw
            assert parsed["To"] == "ann@example.test"
            assert parsed["Cc"] == "cat@example.invalid"
        else:
            assert r.fields is not None
            assert "bcc" not in r.fields and "cc" not in r.fields
            assert r.fields["to"] == r.recipients
            headers = r.fields["headers"]
            assert isinstance(headers, dict)
            assert headers["In-Reply-To"] == "<parent@example.test>"
            assert headers["References"] == "<root@example.test> <parent@example.test>"
            assert not any(k.lower() in ("bcc", "message-id", "to", "from") for k in headers)
    # No copy other than the Bcc recipient's mentions the Bcc recipient at all.
    others = [r for r in received if r.recipients != ["hidden@example.internal"]]
    for r in others:
        blob = r.raw if r.raw is not None else json.dumps(r.fields).encode()
        assert b"hidden@example.internal" not in blob


async def test_idempotency_key_names_the_manifest_and_the_recipient_row(harness: Harness) -> None:
    sub = make_submission(make_message(), "ann@example.test", RECIPIENT_IDS["ann@example.test"])
    assert sub.idempotency_key == f"{MANIFEST_ID}/{RECIPIENT_IDS['ann@example.test']}"
    assert len(sub.idempotency_key) <= 256
    await harness.transport.aclose()


def test_file_envelope_lines_are_ascii_crlf() -> None:
    sub = make_submission(make_message(), "ann@example.test", RECIPIENT_IDS["ann@example.test"])
    assert envelope_lines(sub).endswith(b"\r\n") and envelope_lines(sub).count(b"\r\n") == 2
