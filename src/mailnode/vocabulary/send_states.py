"""The send vocabulary: the 9 states, the ``state_reason`` tokens and their words, the retry offer.

Closed vocabularies (ARCHITECTURE "States are closed vocabularies"; spec/outbound.md §1.2, §1.3, §1.5).
Every map here is total over its enum (a test generated from the enum checks it) and every function that
takes a stored string fails closed on a value it has never seen: ``retry_offer`` offers nothing, the
words say the state is not classified. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal


class SendState(StrEnum):
    """A manifest's state (and a recipient row's ``submission_state``). There is no ``sent``/``delivered``."""

    HELD = "held"
    AWAITING = "awaiting"
    CANCELLED = "cancelled"
    WITHHELD = "withheld"
    THROTTLED = "throttled"
    REFUSED = "refused"
    SUPPRESSED = "suppressed"
    HANDED_OVER = "handed_over"
    OUTCOME_UNKNOWN = "outcome_unknown"


class DeliveryState(StrEnum):
    """A recipient's observed delivery (NULL in the table = unobserved). A complaint sets none."""

    ACCEPTED = "accepted"
    BOUNCED = "bounced"
    DEFERRED = "deferred"
    FAILED = "failed"
    REJECTED = "rejected"


class StateReason(StrEnum):
    """Why a send is ``awaiting`` (a gate that drains) or ``withheld`` (a refusal that latches)."""

    POLICY_HOLD = "policy_hold"
    POLICY_APPROVAL_REQUIRED = "policy_approval_required"
    BUTLER_RELEASE_REQUIRED = "butler_release_required"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    BREAKER_VOLUME = "breaker_volume"
    BREAKER_BOUNCE_RATE = "breaker_bounce_rate"
    BREAKER_COMPLAINT_RATE = "breaker_complaint_rate"
    POLICY_DENIED = "policy_denied"
    APPROVAL_UNSATISFIABLE = "approval_unsatisfiable"
    APPROVAL_DENIED = "approval_denied"
    DOMAIN_PAUSED = "domain_paused"
    AUTHORITY_LOST = "authority_lost"
    APPROVAL_REVOKED = "approval_revoked"
    APPROVER_INELIGIBLE = "approver_ineligible"
    POLICY_STRICTER = "policy_stricter"
    APPROVAL_EXPIRED = "approval_expired"
    EVIDENCE_CHANGED = "evidence_changed"
    GAVE_UP = "gave_up"
    DEDUP_WINDOW_CLOSED = "dedup_window_closed"
    REALTIME_NOT_RETRIED = "realtime_not_retried"
    RETENTION_DELETED = "retention_deleted"
    NOT_CLASSIFIED = "not_classified"


#: The state each reason belongs to. Total over ``StateReason``.
STATE_OF_REASON: dict[StateReason, SendState] = {
    StateReason.POLICY_HOLD: SendState.AWAITING,
    StateReason.POLICY_APPROVAL_REQUIRED: SendState.AWAITING,
    StateReason.BUTLER_RELEASE_REQUIRED: SendState.AWAITING,
    StateReason.PROVIDER_UNAVAILABLE: SendState.AWAITING,
    StateReason.BREAKER_VOLUME: SendState.AWAITING,
    StateReason.BREAKER_BOUNCE_RATE: SendState.AWAITING,
    StateReason.BREAKER_COMPLAINT_RATE: SendState.AWAITING,
    StateReason.POLICY_DENIED: SendState.WITHHELD,
    StateReason.APPROVAL_UNSATISFIABLE: SendState.WITHHELD,
    StateReason.APPROVAL_DENIED: SendState.WITHHELD,
    StateReason.DOMAIN_PAUSED: SendState.WITHHELD,
    StateReason.AUTHORITY_LOST: SendState.WITHHELD,
    StateReason.APPROVAL_REVOKED: SendState.WITHHELD,
    StateReason.APPROVER_INELIGIBLE: SendState.WITHHELD,
    StateReason.POLICY_STRICTER: SendState.WITHHELD,
    StateReason.APPROVAL_EXPIRED: SendState.WITHHELD,
    StateReason.EVIDENCE_CHANGED: SendState.WITHHELD,
    # The sweeper's writes (outbound.sweeper_rules.SweeperReason; spec/transactional.md §3).
    StateReason.GAVE_UP: SendState.WITHHELD,
    StateReason.DEDUP_WINDOW_CLOSED: SendState.OUTCOME_UNKNOWN,
    StateReason.REALTIME_NOT_RETRIED: SendState.WITHHELD,
    # The retention sweep's write when it deletes a pending send's sealed body (retention.io;
    # spec/transactional.md §5): nothing is left to hand over.
    StateReason.RETENTION_DELETED: SendState.WITHHELD,
    StateReason.NOT_CLASSIFIED: SendState.WITHHELD,
}

#: ``awaiting`` reasons that time drains: the sweep re-admits them (``movable_now``); the rate gate or
#: the provider gate is asked again at the next claim.
TIME_DRAINED_REASONS: tuple[StateReason, ...] = (
    StateReason.BREAKER_VOLUME,
    StateReason.BREAKER_BOUNCE_RATE,
    StateReason.BREAKER_COMPLAINT_RATE,
    StateReason.PROVIDER_UNAVAILABLE,
)

#: The words a person reads for each reason. Total over ``StateReason``.
REASON_WORDS: dict[StateReason, str] = {
    StateReason.POLICY_HOLD: "A policy holds this send until someone who may send from the mailbox releases it.",
    StateReason.POLICY_APPROVAL_REQUIRED: "A policy requires approval before this send may leave.",
    StateReason.BUTLER_RELEASE_REQUIRED: "A Butler wrote this send; a person must release it before it leaves.",
    StateReason.PROVIDER_UNAVAILABLE: "The provider is unavailable; the send waits and is retried when it recovers.",
    StateReason.BREAKER_VOLUME: "Too many recipients were handed over in the last hour; the send waits for the window.",
    StateReason.BREAKER_BOUNCE_RATE: "Too many recent sends bounced; the send waits until the rate falls.",
    StateReason.BREAKER_COMPLAINT_RATE: "Too many recent sends drew complaints; the send waits until the rate falls.",
    StateReason.POLICY_DENIED: ("A policy forbids this send; it will not leave. "
                                "Compose a new one if the policy changes."),
    StateReason.APPROVAL_UNSATISFIABLE: "The approval this send needs cannot be given by anyone; it will not leave.",
    StateReason.APPROVAL_DENIED: "An approver refused this send; it will not leave.",
    StateReason.DOMAIN_PAUSED: "Sending from this domain is paused by the administrators; it will not leave.",
    StateReason.AUTHORITY_LOST: "The author no longer may send from this mailbox; it will not leave.",
    StateReason.APPROVAL_REVOKED: "The approval of this send was withdrawn before it left; it will not leave.",
    StateReason.APPROVER_INELIGIBLE: "An approver of this send no longer may approve; it will not leave.",
    StateReason.POLICY_STRICTER: "The policy became stricter than the one this send was approved under.",
    StateReason.APPROVAL_EXPIRED: "The approval of this send expired before it left; it will not leave.",
    StateReason.EVIDENCE_CHANGED: "The stored body no longer matches what was sealed; it will not leave.",
    StateReason.GAVE_UP: "Nobody could hand this mail over within its give-up age or attempts; it will not leave.",
    StateReason.DEDUP_WINDOW_CLOSED: ("It may have left, and a retry now could deliver it twice; a person decides "
                                      "(POST /api/sends/{id}/retry with resend-may-duplicate)."),
    StateReason.REALTIME_NOT_RETRIED: "Realtime mail is tried once, inside its request; it is never retried.",
    StateReason.RETENTION_DELETED: ("The organisation's retention setting deleted its sealed body while it still "
                                    "waited to leave; nothing more of it will leave, and nothing restores the body."),
    StateReason.NOT_CLASSIFIED: "Its class or state is not one mailnode knows; it is stopped for a person to look at.",
}

#: What each state means to a person. Total over ``SendState``.
STATE_WORDS: dict[SendState, str] = {
    SendState.HELD: ("Sealed and queued: it leaves at its release_at (a person's mail first waits out the "
                     "mailbox's hold window, and can be cancelled until it leaves)."),
    SendState.AWAITING: "Waiting at a gate.",
    SendState.CANCELLED: "Stopped by a person before it left.",
    SendState.WITHHELD: "The node declined to hand it over.",
    SendState.THROTTLED: "Not taken by the transport this time; retried automatically.",
    SendState.REFUSED: "The transport refused it; it did not leave.",
    SendState.SUPPRESSED: "The provider will not deliver to this address.",
    SendState.HANDED_OVER: "The transport accepted it; arrival is not yet known.",
    SendState.OUTCOME_UNKNOWN: ("It may or may not have left; it is retried automatically only under a "
                                "deduplicating key inside its window, otherwise a person decides."),
}

#: States in which a person may still stop a send.
STOPPABLE: frozenset[SendState] = frozenset({SendState.HELD, SendState.AWAITING})

#: States the node retries on its own (spec/outbound.md Part A 6): ``throttled`` only; an ambiguous
#: recipient only under a deduplicating key (see ``recipient_submittable``).
AUTO_RETRYABLE: frozenset[SendState] = frozenset({SendState.THROTTLED})


def parse_state(value: str | None) -> SendState | None:
    """The ``SendState`` named by ``value``, or None for anything else (callers fail closed on None)."""
    try:
        return SendState(value) if value is not None else None
    except ValueError:
        return None


def parse_reason(value: str | None) -> StateReason | None:
    """The ``StateReason`` named by ``value``, or None (absent or never seen)."""
    try:
        return StateReason(value) if value is not None else None
    except ValueError:
        return None


def words_for(state: str | None, reason: str | None) -> str:
    """The sentence a person reads for a (state, reason) pair; an unknown value says so (fails closed)."""
    r = parse_reason(reason)
    if r is not None:
        return REASON_WORDS[r]
    if reason is not None:
        return f"The reason {reason!r} is not one mailnode knows; treat the send as stopped."
    s = parse_state(state)
    if s is None:
        return f"The state {state!r} is not one mailnode knows; treat the send as stopped."
    return STATE_WORDS[s]


RetryMode = Literal["none", "retry-effect", "resend-may-duplicate"]


@dataclass(frozen=True)
class RetryOffer:
    """What a person may do with a send (spec/outbound.md §1.5).

    Attributes:
        mode: ``none``, ``retry-effect`` (the same manifest and key again; non-acceptance is proven) or
            ``resend-may-duplicate`` (a new manifest; a recipient may get it twice).
        basis: why: ``not_yet_attempted``, ``decided``, ``acceptance_observed``, ``refused``,
            ``throttled``, ``suppressed``, ``never_submitted``, ``duplicate_possible``, ``state_not_classified``,
            ``content_deleted`` (retention deleted the sealed body: nothing is left to send again).
        duplicate_possible: True only for ``resend-may-duplicate``.
    """

    mode: RetryMode
    basis: str
    duplicate_possible: bool = False

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        return {"mode": self.mode, "basis": self.basis, "duplicate_possible": self.duplicate_possible}


#: The offer for each state whose answer needs no further fact. ``outcome_unknown`` depends on whether
#: any recipient might have been taken (``retry_offer``). Total over ``SendState`` with that one marked None.
_OFFER_BY_STATE: dict[SendState, RetryOffer | None] = {
    SendState.HELD: RetryOffer("none", "not_yet_attempted"),
    SendState.AWAITING: RetryOffer("none", "not_yet_attempted"),
    SendState.CANCELLED: RetryOffer("none", "decided"),
    SendState.WITHHELD: RetryOffer("none", "decided"),
    SendState.HANDED_OVER: RetryOffer("none", "acceptance_observed"),
    SendState.REFUSED: RetryOffer("retry-effect", "refused"),
    SendState.THROTTLED: RetryOffer("retry-effect", "throttled"),
    SendState.SUPPRESSED: RetryOffer("retry-effect", "suppressed"),
    SendState.OUTCOME_UNKNOWN: None,
}


def retry_offer(state: str | None, *, ambiguous_recipients: int, content_deleted: bool = False) -> RetryOffer:
    """The retry offer for a send in ``state`` (a stored string).

    ``ambiguous_recipients`` counts recipient rows in ``outcome_unknown``: each was handed to the
    transport and no answer proves it was not taken. ``outcome_unknown`` with none of them is provably
    never submitted (``retry-effect``); with any, only ``resend-may-duplicate``. An unknown state offers
    nothing (``state_not_classified``). ``content_deleted``: retention deleted the send's sealed body
    (spec/transactional.md §5), so nothing is offered in any state (``content_deleted``): there are no
    bytes to hand over again, and ``POST /api/sends/{id}/retry`` answers 410 ``E_CONTENT_DELETED``.
    """
    s = parse_state(state)
    if s is None:
        return RetryOffer("none", "state_not_classified")
    if content_deleted:
        return RetryOffer("none", "content_deleted")
    offer = _OFFER_BY_STATE[s]
    if offer is not None:
        return offer
    if ambiguous_recipients == 0:
        return RetryOffer("retry-effect", "never_submitted")
    return RetryOffer("resend-may-duplicate", "duplicate_possible", duplicate_possible=True)


#: States in which a send or recipient provably has not left: sealed and queued, waiting at a gate, or not
#: taken by the transport. The one list every guarded write over "not yet left" uses (string values).
NOT_YET_LEFT: tuple[str, ...] = (SendState.HELD.value, SendState.AWAITING.value, SendState.THROTTLED.value)


def recipient_submittable(state: str | None, *, dedup_window_open: bool) -> bool:
    """May dispatch hand this recipient row to the transport now?

    ``held``, ``awaiting`` (mirrored from the manifest) and ``throttled`` rows provably never reached the
    far side; an ``outcome_unknown`` row may have, so it is submitted again only when the transport
    deduplicates the same key and its window (from the first attempt) is still open. Everything else
    (handed over, refused, suppressed, cancelled, withheld, an unknown string) is never submitted.
    """
    s = parse_state(state)
    if s is not None and s.value in NOT_YET_LEFT:
        return True
    if s is SendState.OUTCOME_UNKNOWN:
        return dedup_window_open
    return False


#: How recipient outcomes combine into the manifest's state, strongest first: a throttled recipient makes
#: the send come round again; an ambiguous one must be visible; then any hand-over; then the refusals.
AGGREGATE_ORDER: tuple[SendState, ...] = (
    SendState.THROTTLED,
    SendState.OUTCOME_UNKNOWN,
    SendState.HANDED_OVER,
    SendState.REFUSED,
    SendState.SUPPRESSED,
)


def aggregate(states: Iterable[str]) -> SendState:
    """The manifest state for its recipients' submission states after a dispatch pass.

    The first of ``AGGREGATE_ORDER`` present wins. An unknown string counts as ``outcome_unknown`` (fail
    closed); recipients left ``held`` (never attempted) with nothing else present make ``throttled``, so
    the send comes round again rather than sitting unnoticed.
    """
    seen: set[SendState] = set()
    for value in states:
        s = parse_state(value)
        seen.add(s if s is not None else SendState.OUTCOME_UNKNOWN)
    for candidate in AGGREGATE_ORDER:
        if candidate in seen:
            return candidate
    return SendState.THROTTLED
