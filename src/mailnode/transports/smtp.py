"""The ``smtp`` transport: the node's own bytes to a smarthost, one envelope per recipient (aiosmtplib).

Each submission opens a session, optionally secures it (``tls``), optionally authenticates, then sends
``MAIL FROM:<VERP return path>``, one ``RCPT TO`` and ``DATA`` with the rendered bytes unchanged. One
envelope per recipient keeps Bcc correct (nobody's copy names another Bcc recipient) and lets an inbound
DSN (RFC 3464) to ``bounces+<recipient row id>@<bounce domain>`` name exactly one recipient row, which is
why this transport declares ``delivery_signals: dsn``. Credentials are never put into an outcome or a log.

Credentials only ever cross an encrypted session: with ``smtp_username`` set, a session that is not under
TLS (``smtp_tls = none``, or ``opportunistic`` against a smarthost that offers no STARTTLS) ends before
``AUTH`` with ``throttled`` / ``auth_needs_tls`` and the four-part ``E_SMTP_AUTH_NEEDS_TLS`` text as its
detail (``auth_needs_tls``): the message provably did not leave, so the send comes round after its
back-off and goes once the setting or the smarthost is fixed (RFC 4954 §4: a client should not send a
password over an unprotected session; RFC 8314 §3).

Reply classification (RFC 5321 §4.2.1, §4.5.3.2) is the pure ``classify_smtp`` below.
"""

from __future__ import annotations

import ssl
from enum import StrEnum
from typing import Literal

import aiosmtplib

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.transports.base import (
    Submission,
    SubmitOutcome,
    SubmitState,
    TransportCapabilities,
)

#: ``opportunistic``: STARTTLS when the server offers it (RFC 3207); ``required``: STARTTLS or nothing
#: is sent; ``implicit``: TLS from the first byte (RFC 8314 §3); ``none``: plain text.
TlsMode = Literal["opportunistic", "required", "implicit", "none"]
TLS_MODES: tuple[str, ...] = ("opportunistic", "required", "implicit", "none")

CAPABILITIES = TransportCapabilities(
    name="smtp",
    max_recipients_per_submission=budgets.TRANSPORT_RECIPIENTS_PER_SUBMISSION,
    idempotency_window_seconds=None,
    delivery_signals="dsn",
    fidelity="authored",
)


class SmtpPhase(StrEnum):
    """Where in the session a reply (or the lack of one) happened."""

    CONNECT = "connect"  # TCP connect and the 220 greeting (RFC 5321 §3.1)
    EHLO = "ehlo"
    STARTTLS = "starttls"
    AUTH = "auth"
    MAIL = "mail"
    RCPT = "rcpt"
    #: From the DATA command to the reply after the end-of-data dot (RFC 5321 §4.1.1.4). Once the
    #: message is being written the server may have taken it, so silence here is ambiguous.
    DATA = "data"


def classify_smtp(phase: SmtpPhase, code: int | None) -> SubmitState:
    """Classify where a session ended and with what reply code (None: no reply at all).

    - ``DATA`` with 2xx → ``handed_over`` (RFC 5321 §4.1.1.4: the server took responsibility).
    - 4xx in any phase → ``throttled``: a transient negative reply (§4.2.1), provably not taken.
    - 5xx in any phase → ``refused``: a permanent negative reply.
    - no reply (timeout, disconnect, connect failure) before ``DATA`` → ``throttled``: nothing was sent.
    - no reply, or a reply outside 2xx/4xx/5xx, in ``DATA`` → ``outcome_unknown``: the dot may have
      arrived and the server may have queued the message (§4.5.3.2.6, §6.1).
    - any other code before ``DATA`` (a session that stopped early) → ``throttled``.
    """
    if code is not None and 400 <= code <= 499:
        return SubmitState.THROTTLED
    if code is not None and 500 <= code <= 599:
        return SubmitState.REFUSED
    if phase is SmtpPhase.DATA:
        if code is not None and 200 <= code <= 299:
            return SubmitState.HANDED_OVER
        return SubmitState.OUTCOME_UNKNOWN
    return SubmitState.THROTTLED


class SmtpTransport:
    """Submits through ``host:port`` with the given TLS mode and optional credentials."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: TlsMode = "opportunistic",
        username: str = "",
        password: str = "",
        tls_context: ssl.SSLContext | None = None,
        local_hostname: str | None = None,
        connect_timeout: float = budgets.SMTP_CONNECT_TIMEOUT_SECONDS,
        command_timeout: float = budgets.SMTP_COMMAND_TIMEOUT_SECONDS,
        data_timeout: float = budgets.SMTP_DATA_TIMEOUT_SECONDS,
    ) -> None:
        if tls not in TLS_MODES:
            raise ValueError(f"unknown smtp tls mode {tls!r}; expected one of {TLS_MODES}")
        self._host = host
        self._port = port
        self._tls: TlsMode = tls
        self._username = username
        self._password = password
        self._tls_context = tls_context
        self._local_hostname = local_hostname
        self._connect_timeout = connect_timeout
        self._command_timeout = command_timeout
        self._data_timeout = data_timeout

    def __repr__(self) -> str:
        return f"SmtpTransport({self._host}:{self._port}, tls={self._tls}, auth={'yes' if self._username else 'no'})"

    @property
    def capabilities(self) -> TransportCapabilities:
        """``smtp``: authored, one envelope per recipient, no dedup, ``delivery_signals: dsn``."""
        return CAPABILITIES

    async def submit(self, request: Submission) -> SubmitOutcome:
        """Run one SMTP session for ``request.recipient`` and classify it with ``classify_smtp``.

        ``transport_message_id`` and ``provider_message_id`` are the send's own Message-ID (DSNs quote it);
        the smarthost's final reply (often with its queue id) is in ``detail``.
        """
        client = aiosmtplib.SMTP(
            hostname=self._host,
            port=self._port,
            timeout=self._command_timeout,
            use_tls=self._tls == "implicit",
            # STARTTLS is decided below, never by the library's own default (which upgrades silently).
            start_tls=False,
            tls_context=self._tls_context,
            local_hostname=self._local_hostname,
        )
        phase = SmtpPhase.CONNECT
        encrypted = self._tls == "implicit"
        try:
            await client.connect(timeout=self._connect_timeout)
            phase = SmtpPhase.EHLO
            await client.ehlo()
            if self._tls in ("opportunistic", "required"):
                if client.supports_extension("starttls"):
                    phase = SmtpPhase.STARTTLS
                    await client.starttls(tls_context=self._tls_context)
                    encrypted = True
                elif self._tls == "required":
                    client.close()
                    return SubmitOutcome(
                        state=SubmitState.THROTTLED,
                        error_name="starttls_unavailable",
                        detail=f"{self._host}:{self._port} does not offer STARTTLS and smtp_tls is required",
                    )
            if self._username:
                if not encrypted:
                    client.close()
                    refusal = auth_needs_tls(self._host, self._port, self._tls)
                    return SubmitOutcome(state=SubmitState.THROTTLED, error_name="auth_needs_tls",
                                         detail=refusal.render())
                phase = SmtpPhase.AUTH
                await client.login(self._username, self._password)
            phase = SmtpPhase.MAIL
            await client.mail(request.envelope_from)
            phase = SmtpPhase.RCPT
            await client.rcpt(request.recipient)
            phase = SmtpPhase.DATA
            reply = await client.data(request.rendered, timeout=self._data_timeout)
        except aiosmtplib.SMTPResponseException as exc:
            client.close()
            return _outcome(phase, exc.code, "reply", f"{phase} answered {exc.code} {exc.message}")
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            client.close()
            kind = "timeout" if isinstance(exc, TimeoutError) else (
                "connect_failed" if phase is SmtpPhase.CONNECT else "disconnected"
            )
            return _outcome(phase, None, kind, f"no reply during {phase}: {type(exc).__name__}: {exc}")
        quit_note = ""
        try:
            await client.quit()
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            # The message was already accepted; a failed QUIT changes nothing but is recorded.
            client.close()
            quit_note = f"; QUIT failed: {type(exc).__name__}"
        state = classify_smtp(SmtpPhase.DATA, reply.code)
        return SubmitOutcome(
            state=state,
            transport_message_id=request.message_id,
            provider_message_id=request.message_id,
            error_code=None if state is SubmitState.HANDED_OVER else reply.code,
            detail=f"{reply.code} {reply.message}{quit_note}",
        )

    async def aclose(self) -> None:
        """Sessions are per submission; nothing stays open."""


def auth_needs_tls(host: str, port: int, tls: str) -> MailnodeError:
    """``E_SMTP_AUTH_NEEDS_TLS``: credentials are configured but the session to ``host:port`` is not encrypted
    (``tls``: the ``smtp_tls`` in force). Names the setting to change. Pure."""
    if tls == "none":
        why = ("MAILNODE_SMTP_TLS is none, so the session is plain text, and AUTH would send the relay's "
               "password in clear (RFC 4954 §4).")
    else:
        why = (f"{host}:{port} does not offer STARTTLS, and MAILNODE_SMTP_TLS={tls} went on unencrypted; AUTH "
               "would send the relay's password in clear (RFC 4954 §4).")
    return MailnodeError(
        code="E_SMTP_AUTH_NEEDS_TLS",
        what=f"The send was not handed to {host}:{port}: the node will not authenticate over an unencrypted "
             "connection.",
        why=why,
        fix="Set MAILNODE_SMTP_TLS=required (STARTTLS) or implicit (TLS from the first byte, usually port 465) "
            "and make the smarthost offer it, or remove MAILNODE_SMTP_USERNAME for a relay that needs no "
            "login; the send comes round again after its back-off.",
        status=503,
        detail={"smarthost": f"{host}:{port}", "smtp_tls": tls},
    )


def _outcome(phase: SmtpPhase, code: int | None, kind: str, detail: str) -> SubmitOutcome:
    state = classify_smtp(phase, code)
    return SubmitOutcome(
        state=state,
        error_code=code,
        error_name=f"{phase}_{kind}",
        detail=detail,
    )
