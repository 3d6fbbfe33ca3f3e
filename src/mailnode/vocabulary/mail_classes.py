"""Mail classes: ``correspondence`` | ``realtime`` | ``deferrable`` and the rules each one lives by.

spec/transactional.md §1 (seed 002's "verification code" vs "upload-failure notification"). Every manifest
carries a class; ``CLASS_RULES`` says, for each, who delivers it, whether and how it is retried, what a
failure does, and which gates govern it. The map is total over ``MailClass`` (a test generated from the
enum checks it). A stored class string mailnode has never seen fails closed through ``rules_for``: it is
governed by every gate, never retried, and delivered by nobody. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class MailClass(StrEnum):
    """The class of a send (spec/transactional.md §1).

    - ``correspondence``: people and Butlers writing through mailboxes (the default).
    - ``realtime``: a person is waiting (verification, sign-in, invitation codes); sent inside the request.
    - ``deferrable``: still true an hour later (notices to people, applications' queued mail).
    """

    CORRESPONDENCE = "correspondence"
    REALTIME = "realtime"
    DEFERRABLE = "deferrable"


#: The class of a manifest sealed without one (spec/transactional.md §1: "correspondence (default)").
DEFAULT_MAIL_CLASS = MailClass.CORRESPONDENCE


class Gate(StrEnum):
    """A gate that may stop a send at seal or at hand-over (ARCHITECTURE "The total order at seal").

    The names are the families of ``outbound.gates.Gate``; this vocabulary says which family applies to
    a class, the outbound gate order says which one wins.
    """

    POLICY = "policy"
    APPROVALS = "approvals"
    BUTLER_RELEASE = "butler_release"
    DOMAIN_PAUSE = "domain_pause"
    PROVIDER_BREAKER = "provider_breaker"
    RATE_BREAKERS = "rate_breakers"


class DeliveredBy(StrEnum):
    """What hands a class's mail to the transport.

    - ``dispatch_sweep``: the outbound dispatch sweep, after the hold window and every gate.
    - ``request``: the request that created it, synchronously, before it answers.
    - ``first_by_dispatch_then_sweeper``: queued; the dispatch sweep makes its first hand-over as soon as
      it may move (a notice reaches a person within a dispatch interval), and anything that fails comes
      round through the notify sweeper only (spec/transactional.md §3).
    - ``nobody``: an unknown class (fail closed).
    """

    DISPATCH_SWEEP = "dispatch_sweep"
    REQUEST = "request"
    FIRST_BY_DISPATCH_THEN_SWEEPER = "first_by_dispatch_then_sweeper"
    NOBODY = "nobody"


class RetryRule(StrEnum):
    """How a class's failed hand-over comes round again.

    - ``throttled_and_dedup_window``: ``throttled`` automatically; ``outcome_unknown`` only under a
      deduplicating key inside its window measured from the first attempt (spec/outbound.md Part A 6).
    - ``never``: a failure is terminal at once.
    - ``sweeper``: the sweeper re-drives it under its three refusals (``sweeper_rules``).
    """

    THROTTLED_AND_DEDUP_WINDOW = "throttled_and_dedup_window"
    NEVER = "never"
    SWEEPER = "sweeper"


class FailureRule(StrEnum):
    """What a failure of a class's send does.

    - ``state_and_author_notice``: the send's state says so and its author gets a ``send_failed`` notice.
    - ``terminal_vague_503``: terminal at once; the caller answers 503 with a deliberately vague message
      and any record the send was for stays as a cooldown (spec/transactional.md §4).
    - ``aged_out``: stays queued; after the give-up age it is made terminal, ``withheld/gave_up``.
    - ``quarantine``: an unknown class; nothing moves until a person looks.
    """

    STATE_AND_AUTHOR_NOTICE = "state_and_author_notice"
    TERMINAL_VAGUE_503 = "terminal_vague_503"
    AGED_OUT = "aged_out"
    QUARANTINE = "quarantine"


#: Gates that govern every class (spec/transactional.md §1: "breakers, the provider breaker and the domain
#: pause govern every class").
UNIVERSAL_GATES: frozenset[Gate] = frozenset({Gate.DOMAIN_PAUSE, Gate.PROVIDER_BREAKER, Gate.RATE_BREAKERS})
#: Every gate; what an unknown class meets (fail closed).
ALL_GATES: frozenset[Gate] = frozenset(Gate)


@dataclass(frozen=True)
class ClassRules:
    """The rules of one mail class.

    Attributes:
        delivered_by: ``DeliveredBy``.
        retry: ``RetryRule``.
        on_failure: ``FailureRule``.
        gates: the gates that govern it (a frozenset of ``Gate``).
        swept: whether the notify sweeper may ever re-drive it (never for ``realtime``, seed 002 refusal 1).
    """

    delivered_by: DeliveredBy
    retry: RetryRule
    on_failure: FailureRule
    gates: frozenset[Gate]
    swept: bool


#: The rules of each class (spec/transactional.md §1). Total over ``MailClass``. Policy, approvals and the
#: Butler release govern correspondence only: system mail and application mail are not people's words.
CLASS_RULES: dict[MailClass, ClassRules] = {
    MailClass.CORRESPONDENCE: ClassRules(
        delivered_by=DeliveredBy.DISPATCH_SWEEP,
        retry=RetryRule.THROTTLED_AND_DEDUP_WINDOW,
        on_failure=FailureRule.STATE_AND_AUTHOR_NOTICE,
        gates=ALL_GATES,
        swept=True,
    ),
    MailClass.REALTIME: ClassRules(
        delivered_by=DeliveredBy.REQUEST,
        retry=RetryRule.NEVER,
        on_failure=FailureRule.TERMINAL_VAGUE_503,
        gates=UNIVERSAL_GATES,
        swept=False,
    ),
    MailClass.DEFERRABLE: ClassRules(
        delivered_by=DeliveredBy.FIRST_BY_DISPATCH_THEN_SWEEPER,
        retry=RetryRule.SWEEPER,
        on_failure=FailureRule.AGED_OUT,
        gates=UNIVERSAL_GATES,
        swept=True,
    ),
}

#: The rules an unknown class string gets: every gate, never retried, delivered by nobody, quarantined.
UNKNOWN_CLASS_RULES = ClassRules(
    delivered_by=DeliveredBy.NOBODY,
    retry=RetryRule.NEVER,
    on_failure=FailureRule.QUARANTINE,
    gates=ALL_GATES,
    swept=False,
)

#: The header system mail carries (RFC 3834 §5: ``auto-generated`` for mail no person wrote), so
#: auto-responders and Butlers listening on the recipient's side do not answer it.
SYSTEM_MAIL_HEADERS: tuple[tuple[str, str], ...] = (("Auto-Submitted", "auto-generated"),)


def parse_mail_class(value: str | None) -> MailClass | None:
    """The ``MailClass`` named by a stored or requested string; None for anything else (fail closed).

    ``None`` (absent) is not the default here: a caller sealing a new send uses ``DEFAULT_MAIL_CLASS``
    for an absent field; a stored row whose class is NULL or unknown is not classified.
    """
    if value is None:
        return None
    try:
        return MailClass(value)
    except ValueError:
        return None


def rules_for(value: str | None) -> ClassRules:
    """The ``ClassRules`` of a stored class string; ``UNKNOWN_CLASS_RULES`` for one never seen."""
    mail_class = parse_mail_class(value)
    if mail_class is None:
        return UNKNOWN_CLASS_RULES
    return CLASS_RULES[mail_class]


def governed_by(value: str | None, gate: Gate) -> bool:
    """Whether ``gate`` applies to mail of class ``value`` (an unknown class meets every gate)."""
    return gate in rules_for(value).gates
