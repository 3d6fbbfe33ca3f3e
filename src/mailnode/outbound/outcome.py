"""What the gates decided about a send, as the sentence a person reads after pressing Send. Pure.

Issue 16, "The composer": held with the time left and a Cancel button, awaiting (and on whom: the approvers
by name, the person who releases a Butler's mail, the provider, the breaker), withheld with the reason and
the fix. Total over ``SendState`` and ``StateReason`` (``states``); a state or reason never seen fails
closed: the page says the send is stopped and offers nothing. The words for a reason are
``states.REASON_WORDS`` and the fix is ``reads.next_step``: one vocabulary for the API and the page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from mailnode.outbound.reads import next_step
from mailnode.vocabulary.send_states import (
    REASON_WORDS,
    STATE_OF_REASON,
    STATE_WORDS,
    STOPPABLE,
    SendState,
    StateReason,
    parse_reason,
    parse_state,
)


class OutcomeKind(StrEnum):
    """How the page shows a send's outcome (one CSS class and one layout per kind)."""

    #: Sealed and waiting out the hold window: a countdown and Cancel.
    HELD = "held"
    #: Waiting at a gate that drains (approval, release, provider, breaker): Cancel.
    AWAITING = "awaiting"
    #: Refused for good (a latched ``withheld``): the reason and the fix; nothing to cancel.
    WITHHELD = "withheld"
    #: The transport took it (``handed_over``).
    LEFT = "left"
    #: Stopped otherwise (cancelled, refused, suppressed, throttled, outcome unknown): the state's words.
    SETTLED = "settled"
    #: A state or reason mailnode does not know: stopped, nothing offered (fails closed).
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    """The page's reading of one send.

    Attributes:
        kind: see ``OutcomeKind``.
        sentence: the one sentence a person reads first (names the wait, the approvers, the time left).
        fix: what changes it and who does it (``reads.next_step``), or None when nothing is to be done.
        may_cancel: whether a Cancel button is offered (``states.STOPPABLE``; never for an unknown value).
        seconds_left: for ``held``, whole seconds until ``release_at`` (0 once it is due); else None.
        release_at: for ``held``, the ISO 8601 UTC instant the countdown runs to; else None.
    """

    kind: OutcomeKind
    sentence: str
    fix: str | None
    may_cancel: bool
    seconds_left: int | None = None
    release_at: str | None = None


def _names(approvers: tuple[str, ...]) -> str:
    if not approvers:
        return "an eligible approver"
    if len(approvers) == 1:
        return approvers[0]
    return ", ".join(approvers[:-1]) + " or " + approvers[-1]


def _left(seconds: int) -> str:
    minutes, secs = divmod(seconds, 60)
    if minutes == 0:
        return f"{secs} second{'s' if secs != 1 else ''}"
    return f"{minutes} min {secs:02d} s"


#: The first sentence for an ``awaiting`` send, by reason (``{approvers}`` is filled in). Total over the
#: ``awaiting`` reasons of ``states.STATE_OF_REASON`` (a test checks it).
AWAITING_SENTENCE: dict[StateReason, str] = {
    StateReason.POLICY_HOLD: "Awaiting release: a policy holds it until someone who may send from the mailbox "
                             "releases it.",
    StateReason.POLICY_APPROVAL_REQUIRED: "Awaiting approval from {approvers}.",
    StateReason.BUTLER_RELEASE_REQUIRED: "Awaiting release: a person who may send from the mailbox must release "
                                         "this Butler's send.",
    StateReason.PROVIDER_UNAVAILABLE: "Awaiting the provider: it is unavailable; the send leaves when it recovers.",
    StateReason.BREAKER_VOLUME: "Awaiting the volume breaker: too many recipients in the last hour.",
    StateReason.BREAKER_BOUNCE_RATE: "Awaiting the bounce-rate breaker: too many recent sends bounced.",
    StateReason.BREAKER_COMPLAINT_RATE: "Awaiting the complaint-rate breaker: too many recent complaints.",
}


def gate_outcome(state: str | None, reason: str | None, *, send_id: str, now: datetime,
                 release_at: datetime | None = None, approvers: tuple[str, ...] = (),
                 approval_id: str | None = None) -> Outcome:
    """The outcome a person reads for a send in ``state`` with ``reason`` (stored strings). Pure.

    ``now`` and ``release_at`` are aware UTC datetimes; ``approvers`` are the display names of who may
    decide the open approval stage, in the order to show (empty: "an eligible approver"). A state or reason
    outside the vocabularies, or a reason that does not belong to the state (``STATE_OF_REASON``), is
    ``UNKNOWN``: stopped, no Cancel.
    """
    s = parse_state(state)
    r = parse_reason(reason)
    if s is None or (reason is not None and r is None) or (r is not None and STATE_OF_REASON[r] is not s):
        return Outcome(OutcomeKind.UNKNOWN,
                       f"This send's state ({state!r}, reason {reason!r}) is not one mailnode knows; "
                       "treat it as stopped.",
                       next_step(reason, send_id=send_id, approval_id=approval_id) if reason is not None else
                       "Report it (mailnode doctor).", may_cancel=False)
    may_cancel = s in STOPPABLE
    if s is SendState.HELD:
        if release_at is None:
            # A held send without its release time cannot show a countdown: fail closed, nothing offered.
            return Outcome(OutcomeKind.UNKNOWN, "This send is held but its release time is missing; treat it "
                           "as stopped.", "Report it (mailnode doctor).", may_cancel=False)
        seconds = max(0, math.ceil((release_at - now).total_seconds()))
        sentence = (f"Held: it leaves in {_left(seconds)} unless you cancel it." if seconds > 0 else
                    "Held: its hold window is over; it leaves at the next hand-over.")
        return Outcome(OutcomeKind.HELD, sentence, None, may_cancel=True, seconds_left=seconds,
                       release_at=release_at.isoformat())
    if s is SendState.AWAITING:
        if r is None:
            return Outcome(OutcomeKind.UNKNOWN, "This send is awaiting a gate it does not name; treat it as "
                           "stopped.", "Report it (mailnode doctor).", may_cancel=False)
        return Outcome(OutcomeKind.AWAITING, AWAITING_SENTENCE[r].replace("{approvers}", _names(approvers)),
                       next_step(reason, send_id=send_id, approval_id=approval_id), may_cancel=may_cancel)
    if s is SendState.WITHHELD:
        if r is None:
            return Outcome(OutcomeKind.UNKNOWN, "This send was withheld without a reason; treat it as stopped.",
                           "Report it (mailnode doctor).", may_cancel=False)
        return Outcome(OutcomeKind.WITHHELD, f"Withheld: {REASON_WORDS[r]}",
                       next_step(reason, send_id=send_id, approval_id=approval_id), may_cancel=False)
    if s is SendState.HANDED_OVER:
        return Outcome(OutcomeKind.LEFT, f"Handed over: {STATE_WORDS[s]}", None, may_cancel=False)
    fix = next_step(reason, send_id=send_id, approval_id=approval_id) if r is not None else None
    return Outcome(OutcomeKind.SETTLED, f"{s.value.replace('_', ' ').capitalize()}: {STATE_WORDS[s]}", fix,
                   may_cancel=False)
