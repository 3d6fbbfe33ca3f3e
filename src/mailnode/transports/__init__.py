"""Transports: how a submission leaves the node. ``make_transport(settings)`` picks one by name.

The registry is explicit (``TRANSPORTS``); an unknown name is an error at start-up, never a silent
fallback. See ``base`` for the Protocol and the outcome vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable

from mailnode.config import Settings
from mailnode.errors import invalid
from mailnode.transports.base import (
    Submission,
    SubmitOutcome,
    SubmitState,
    Transport,
    TransportCapabilities,
)
from mailnode.transports.file import FileTransport
from mailnode.transports.resend import ResendTransport
from mailnode.transports.smtp import SmtpTransport

__all__ = [
    "TRANSPORTS",
    "Submission",
    "SubmitOutcome",
    "SubmitState",
    "Transport",
    "TransportCapabilities",
    "make_transport",
]


def _file(settings: Settings) -> Transport:
    return FileTransport(settings.outbox_dir)


def _smtp(settings: Settings) -> Transport:
    host, port = settings.relay_hostport
    return SmtpTransport(
        host,
        port,
        tls=settings.smtp_tls,
        username=settings.smtp_username,
        password=settings.smtp_password,
    )


def _resend(settings: Settings) -> Transport:
    if not settings.resend_api_key:
        raise invalid(
            "E_SETTING_MISSING",
            "The resend transport needs an API key.",
            "MAILNODE_TRANSPORT is resend but MAILNODE_RESEND_API_KEY is empty.",
            "Set MAILNODE_RESEND_API_KEY (a re_... key with sending access), or choose another transport.",
            setting="resend_api_key",
        )
    return ResendTransport(settings.resend_base_url, settings.resend_api_key)


#: Every transport by its settings name.
TRANSPORTS: dict[str, Callable[[Settings], Transport]] = {
    "file": _file,
    "smtp": _smtp,
    "resend": _resend,
}


def make_transport(settings: Settings) -> Transport:
    """Build the transport ``settings.transport`` names (``file`` | ``smtp`` | ``resend``).

    Raises ``E_SETTING_MALFORMED`` (422) for an unknown name or a malformed ``smtp_relay``, and
    ``E_SETTING_MISSING`` (422) for a ``resend`` transport without an API key; call it at start-up.
    """
    factory = TRANSPORTS.get(settings.transport)
    if factory is None:
        raise invalid(
            "E_SETTING_MALFORMED",
            f"Unknown transport {settings.transport!r}.",
            f"MAILNODE_TRANSPORT must be one of {', '.join(sorted(TRANSPORTS))}.",
            "Set MAILNODE_TRANSPORT to file, smtp or resend.",
            setting="transport",
            value=str(settings.transport),
        )
    return factory(settings)
