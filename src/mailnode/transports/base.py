"""The transport interface: declared capabilities, one submission per recipient, a classified outcome.

A transport hands one recipient's copy of a sealed send to whatever carries mail onward (a file, an SMTP
smarthost, an HTTP provider) and says what happened in the closed vocabulary of ``SubmitState``. It never
raises for a reply it understands: a refusal, a throttle or an ambiguous timeout is an outcome. It raises
only for a programming error; the dispatcher records that as ``outcome_unknown`` with the cause.
Classification of replies is a pure function in each transport's module, tested as a table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, Protocol

#: How delivery results come back: provider webhooks, inbound DSNs (RFC 3464) to the VERP return path,
#: or not at all (``doctor`` says so instead of printing a reassuring zero).
DeliverySignals = Literal["webhook", "dsn", "none"]
#: ``authored``: the node's own bytes travel; ``reconstructed``: the provider builds the MIME from fields.
Fidelity = Literal["authored", "reconstructed"]
#: Provider pause kinds (spec/transactional.md §2), set on ``throttled`` outcomes that close the provider.
PauseKind = Literal["daily_quota", "monthly_quota", "systemic"]


class SubmitState(StrEnum):
    """What one submission did; a subset of the send vocabulary (ARCHITECTURE: states are closed).

    - ``handed_over``: the far side accepted the bytes; arrival is unknown.
    - ``throttled``: provably not taken (4xx, rate limit, quota, connection failure before the data);
      retried automatically with backoff.
    - ``refused``: provably not taken and will not be taken as is (5xx, validation error); not retried.
    - ``outcome_unknown``: the data may have been taken (timeout or disconnect after sending it, 5xx from
      an HTTP provider); retried automatically only under a deduplicating key inside its window.
    """

    HANDED_OVER = "handed_over"
    THROTTLED = "throttled"
    REFUSED = "refused"
    OUTCOME_UNKNOWN = "outcome_unknown"


@dataclass(frozen=True)
class TransportCapabilities:
    """What a transport promises (spec/outbound.md Part A 4).

    Attributes:
        name: the settings name (``file``, ``smtp``, ``resend``).
        max_recipients_per_submission: recipients one ``submit`` carries (1 for every transport here).
        idempotency_window_seconds: how long the far side deduplicates a repeated submission under the
            same key, measured from the first attempt; None when it does not deduplicate at all.
        delivery_signals: how delivery results come back (``webhook`` | ``dsn`` | ``none``).
        fidelity: ``authored`` (our bytes) or ``reconstructed`` (the provider renders from fields).
    """

    name: str
    max_recipients_per_submission: int
    idempotency_window_seconds: int | None
    delivery_signals: DeliverySignals
    fidelity: Fidelity


@dataclass(frozen=True)
class Submission:
    """One recipient's copy of a sealed send.

    Attributes:
        manifest_id: the send (``snd_...``), the effect key.
        recipient_id: the recipient row (``srp_...``); with ``manifest_id`` it forms the idempotency key.
        recipient: the one envelope recipient (normalised address).
        envelope_from: the SMTP return path, ``bounces+<recipient_id>@<bounce domain>`` (VERP).
        rendered: the RFC 5322 bytes from ``render`` (authored transports send exactly these).
        message_id: the Message-ID inside ``rendered`` (``<snd_...@domain>``).
        from_header: the From as a header value (``Name <addr>`` or ``addr``), for reconstructing providers.
        to, cc, bcc: the send's recipient lists as sealed (for reconstructing providers; Bcc never shown).
        subject: the Subject text.
        text: the plain-text body.
        headers: extra headers a reconstructing provider must carry (``In-Reply-To``, ``References``,
            ``Auto-Submitted``), as (name, value) pairs.
        html: the HTML alternative, or None (text only).
        attachments: ``(filename, content_type, bytes)`` of each attachment, in order.
        reply_to: the Reply-To addresses as header values (``Name <addr>`` or ``addr``), or ().
    """

    manifest_id: str
    recipient_id: str
    recipient: str
    envelope_from: str
    rendered: bytes
    message_id: str
    from_header: str
    to: tuple[str, ...]
    subject: str
    text: str
    cc: tuple[str, ...] = ()
    bcc: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    html: str | None = None
    attachments: tuple[tuple[str, str, bytes], ...] = ()
    reply_to: tuple[str, ...] = ()

    @property
    def idempotency_key(self) -> str:
        """``<manifest_id>/<recipient_id>``: ASCII, 4 + 26 + 1 + 4 + 26 = 61 characters for ULID ids."""
        return f"{self.manifest_id}/{self.recipient_id}"


@dataclass(frozen=True)
class SubmitOutcome:
    """The classified result of one ``submit``.

    Attributes:
        state: a ``SubmitState``.
        transport_message_id: the transport's own id for the copy (provider email id, file name, or the
            Message-ID for SMTP); the key webhooks and DSNs are attributed by.
        provider_message_id: the RFC 5322 Message-ID the far side reports it sent (Resend may replace
            ours, spec/resend.md §10); for authored transports, our own.
        error_code: the SMTP reply code or HTTP status behind a non-handed-over state, else None.
        error_name: the provider's error name (``rate_limit_exceeded``) or the failure kind
            (``timeout``, ``disconnected``, ``connect_failed``), else None.
        detail: one line for people and logs (never a credential).
        retry_after_seconds: how long the far side asked us to wait, seconds, when it said.
        pause_kind: on a ``throttled`` that closes the provider: ``daily_quota``, ``monthly_quota`` or
            ``systemic`` (spec/transactional.md §2); else None.
        quota_headers: the provider's quota headers as received (name lower-cased, raw value), unparsed:
            their semantics are undocumented and the provider breaker validates them.
    """

    state: SubmitState
    transport_message_id: str | None = None
    provider_message_id: str | None = None
    error_code: int | None = None
    error_name: str | None = None
    detail: str = ""
    retry_after_seconds: float | None = None
    pause_kind: PauseKind | None = None
    quota_headers: tuple[tuple[str, str], ...] = field(default=())

    @property
    def quota_kind(self) -> Literal["daily", "monthly"] | None:
        """``daily`` or ``monthly`` when the provider refused for a sending quota, else None."""
        if self.pause_kind == "daily_quota":
            return "daily"
        if self.pause_kind == "monthly_quota":
            return "monthly"
        return None


class Transport(Protocol):
    """A way out of the node. Implementations: ``file``, ``smtp``, ``resend`` (``make_transport``)."""

    @property
    def capabilities(self) -> TransportCapabilities:
        """The transport's declared capabilities."""
        ...

    async def submit(self, request: Submission) -> SubmitOutcome:
        """Hand one recipient's copy over and classify what happened; raises only on a programming error."""
        ...

    async def aclose(self) -> None:
        """Release connections; submitting afterwards is a programming error."""
        ...
