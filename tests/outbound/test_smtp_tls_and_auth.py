"""The smtp transport's TLS modes and authentication against real aiosmtpd servers on loopback."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

from mailnode.transports.base import SubmitState
from mailnode.transports.smtp import SmtpTransport

from .conftest import SinkHandler, free_port, make_message, make_submission

RID = "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B"

# The AUTH sink runs without TLS on purpose (loopback, throwaway credentials); aiosmtpd warns about it.
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A throwaway self-signed certificate for 127.0.0.1, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )
    return cert, key


class TlsRecordingHandler(SinkHandler):
    """Also records whether each transaction ran over TLS."""

    tls_seen: list[bool]

    def __init__(self) -> None:
        super().__init__()
        self.tls_seen = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        over_tls = session.ssl is not None or server.transport.get_extra_info("ssl_object") is not None
        self.tls_seen.append(over_tls)
        return await super().handle_DATA(server, session, envelope)


def client_context(cert: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cert))


@pytest.fixture
def starttls_sink(certificate: tuple[Path, Path]) -> Iterator[tuple[int, TlsRecordingHandler]]:
    cert, key = certificate
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(str(cert), str(key))
    handler = TlsRecordingHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, tls_context=server_ctx)
    controller.start()
    yield port, handler
    controller.stop()


@pytest.mark.parametrize("mode", ["opportunistic", "required"])
async def test_starttls_is_used_when_offered(starttls_sink: tuple[int, TlsRecordingHandler],
                                             certificate: tuple[Path, Path], mode: str) -> None:
    port, handler = starttls_sink
    t = SmtpTransport("127.0.0.1", port, tls=mode, tls_context=client_context(certificate[0]))  # type: ignore[arg-type]
    outcome = await t.submit(make_submission(make_message(), "ann@example.test", RID))
    assert outcome.state is SubmitState.HANDED_OVER, outcome.detail
    assert handler.tls_seen == [True]


async def test_tls_none_never_upgrades(starttls_sink: tuple[int, TlsRecordingHandler]) -> None:
    port, handler = starttls_sink
    outcome = await SmtpTransport("127.0.0.1", port, tls="none").submit(
        make_submission(make_message(), "ann@example.test", RID))
    assert outcome.state is SubmitState.HANDED_OVER
    assert handler.tls_seen == [False]


async def test_untrusted_certificate_is_not_sent_to(starttls_sink: tuple[int, TlsRecordingHandler]) -> None:
    port, handler = starttls_sink
    # The default context does not trust the self-signed certificate: nothing may be sent in clear instead.
    outcome = await SmtpTransport("127.0.0.1", port, tls="required").submit(
        make_submission(make_message(), "ann@example.test", RID))
    assert outcome.state is SubmitState.THROTTLED
    assert outcome.error_name is not None and outcome.error_name.startswith("starttls")
    assert handler.envelopes == []


async def test_implicit_tls(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(str(cert), str(key))
    handler = TlsRecordingHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, ssl_context=server_ctx)
    controller.start()
    try:
        t = SmtpTransport("127.0.0.1", port, tls="implicit", tls_context=client_context(cert))
        outcome = await t.submit(make_submission(make_message(), "ann@example.test", RID))
    finally:
        controller.stop()
    assert outcome.state is SubmitState.HANDED_OVER, outcome.detail
    assert handler.tls_seen == [True]


def _authenticator(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    ok = isinstance(data, LoginPassword) and (data.login, data.password) == (b"relay", b"s3cret-pw")
    return AuthResult(success=ok, handled=False)


class AuthRecordingSMTP(SMTP):
    """An aiosmtpd session that records every AUTH command it receives (mechanism and initial response)."""

    commands: list[str]

    async def smtp_AUTH(self, arg: str) -> None:
        self.commands.append(arg)
        await super().smtp_AUTH(arg)


class AuthRecordingController(Controller):
    """Builds ``AuthRecordingSMTP`` sessions sharing one ``commands`` list."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: list[str] = []

    def factory(self) -> SMTP:
        server = AuthRecordingSMTP(self.handler, **self.SMTP_kwargs)
        server.commands = self.commands
        return server


@pytest.fixture
def auth_sink(certificate: tuple[Path, Path]) -> Iterator[tuple[int, SinkHandler]]:
    """A smarthost that offers STARTTLS and requires AUTH over it."""
    cert, key = certificate
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(str(cert), str(key))
    handler = SinkHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, authenticator=_authenticator,
                            auth_required=True, tls_context=server_ctx)
    controller.start()
    yield port, handler
    controller.stop()


@pytest.fixture
def clear_auth_sink() -> Iterator[tuple[int, SinkHandler, list[str]]]:
    """A smarthost that offers AUTH without STARTTLS (aiosmtpd's ``auth_require_tls=False``), recording
    every AUTH command that reaches it."""
    handler = SinkHandler()
    port = free_port()
    controller = AuthRecordingController(handler, hostname="127.0.0.1", port=port, authenticator=_authenticator,
                                         auth_require_tls=False, auth_required=True)
    controller.start()
    yield port, handler, controller.commands
    controller.stop()


async def test_authenticated_submission(auth_sink: tuple[int, SinkHandler], certificate: tuple[Path, Path]) -> None:
    port, handler = auth_sink
    t = SmtpTransport("127.0.0.1", port, tls="required", tls_context=client_context(certificate[0]),
                      username="relay", password="s3cret-pw")
    outcome = await t.submit(make_submission(make_message(), "ann@example.test", RID))
    assert outcome.state is SubmitState.HANDED_OVER, outcome.detail
    assert len(handler.envelopes) == 1


async def test_rejected_credentials_are_refused_and_not_recorded(auth_sink: tuple[int, SinkHandler],
                                                                certificate: tuple[Path, Path]) -> None:
    port, handler = auth_sink
    t = SmtpTransport("127.0.0.1", port, tls="required", tls_context=client_context(certificate[0]),
                      username="relay", password="wrong-pw")
    outcome = await t.submit(make_submission(make_message(), "ann@example.test", RID))
    assert (outcome.state, outcome.error_code, outcome.error_name) == (SubmitState.REFUSED, 535, "auth_reply")
    assert "wrong-pw" not in repr(outcome) and "wrong-pw" not in repr(t)
    assert handler.envelopes == []


async def test_no_credentials_where_the_relay_requires_them_is_refused(
        clear_auth_sink: tuple[int, SinkHandler, list[str]]) -> None:
    port, _handler, _commands = clear_auth_sink
    outcome = await SmtpTransport("127.0.0.1", port, tls="none").submit(
        make_submission(make_message(), "ann@example.test", RID))
    assert (outcome.state, outcome.error_code) == (SubmitState.REFUSED, 530)


@pytest.mark.parametrize("mode", ["opportunistic", "none"])
async def test_credentials_never_cross_an_unencrypted_session(
        clear_auth_sink: tuple[int, SinkHandler, list[str]], mode: str) -> None:
    port, handler, commands = clear_auth_sink
    t = SmtpTransport("127.0.0.1", port, tls=mode, username="relay", password="s3cret-pw")  # type: ignore[arg-type]
    outcome = await t.submit(make_submission(make_message(), "ann@example.test", RID))
    # Nothing left and nothing authenticated: the smarthost saw no AUTH command and took no message.
    assert commands == []
    assert handler.envelopes == []
    # Provably not taken, so retryable once fixed; the detail is the four-part refusal naming the setting.
    assert (outcome.state, outcome.error_name) == (SubmitState.THROTTLED, "auth_needs_tls")
    assert outcome.detail is not None and outcome.detail.startswith("E_SMTP_AUTH_NEEDS_TLS")
    assert "MAILNODE_SMTP_TLS" in outcome.detail and "fix" in outcome.detail
    assert "s3cret-pw" not in outcome.detail
