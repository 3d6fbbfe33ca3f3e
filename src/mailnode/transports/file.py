"""The ``file`` transport: one ``.eml`` per recipient in an outbox directory (the embedded default).

Nothing leaves the machine, and no delivery result will ever come back, which the transport declares
(``delivery_signals: none``) so ``doctor`` can say so. Each copy is written atomically: a temporary file in
the same directory, flushed and fsynced, then renamed over ``<recipient_id>.eml``, so a reader never sees a
half-written message and a crash leaves either the whole file or none.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

from mailnode import budgets
from mailnode.transports.base import (
    Submission,
    SubmitOutcome,
    SubmitState,
    TransportCapabilities,
)

CAPABILITIES = TransportCapabilities(
    name="file",
    max_recipients_per_submission=budgets.TRANSPORT_RECIPIENTS_PER_SUBMISSION,
    idempotency_window_seconds=None,
    delivery_signals="none",
    fidelity="authored",
)


def envelope_lines(request: Submission) -> bytes:
    """The envelope recorded above the message, as mbox-style ``X-Envelope-*`` lines (CRLF)."""
    return (
        f"X-Envelope-From: <{request.envelope_from}>\r\nX-Envelope-To: <{request.recipient}>\r\n".encode("ascii")
    )


class FileTransport:
    """Writes ``<outbox>/<recipient_id>.eml``: envelope lines, then the rendered bytes unchanged."""

    def __init__(self, outbox_dir: Path) -> None:
        self._outbox = Path(outbox_dir)

    @property
    def capabilities(self) -> TransportCapabilities:
        """``file``: authored, one recipient, no dedup window, ``delivery_signals: none``."""
        return CAPABILITIES

    async def submit(self, request: Submission) -> SubmitOutcome:
        """Write the copy; ``handed_over`` with the file name, or ``throttled`` when the disk refused.

        An ``OSError`` (disk full, permissions) happens before the rename, so the copy provably does not
        exist: ``throttled`` with ``error_name`` ``write_failed`` and the cause in ``detail``.
        """
        name = f"{request.recipient_id}.eml"
        data = envelope_lines(request) + request.rendered
        try:
            await asyncio.to_thread(_write_atomically, self._outbox, name, data)
        except OSError as exc:
            return SubmitOutcome(
                state=SubmitState.THROTTLED,
                error_name="write_failed",
                detail=f"could not write {name} in {self._outbox}: {exc}",
            )
        return SubmitOutcome(
            state=SubmitState.HANDED_OVER,
            transport_message_id=name,
            provider_message_id=request.message_id,
            detail=f"written to {self._outbox / name}",
        )

    async def aclose(self) -> None:
        """Nothing to release."""


def _write_atomically(directory: Path, name: str, data: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    # A unique temporary name, so two writers of the same copy never share a half-written file.
    tmp = directory / f".{name}.{secrets.token_hex(8)}.tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, directory / name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    # The rename is durable only once the directory entry is.
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
