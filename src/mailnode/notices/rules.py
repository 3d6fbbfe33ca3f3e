"""Notices to people: the closed vocabulary, who receives each, the dedup key per episode, and the rules
that keep notices from breeding notices.

Issue 9 "Notices"; spec/transactional.md §1 (notices are ``deferrable`` system mail). A notice is one row
per (kind, episode, recipient); its dedup key is what makes a second write of the same notice a no-op, so
a sweeper pass, a retried workflow or two workers cannot tell a person the same thing twice. A breaker
trip notifies administrators once per trip episode (``advance_trip_episode``). A delivery report or a
failure about a notice never produces another notice (``notice_for_failure``): a notice to an address
that bounces is recorded as an event and nothing more, so four bouncing notices are four events and zero
new notices.

Also decided here: which audit entry about a send is a failure a person must hear of
(``failure_of_audit``: ``decision_needed`` for a send left ``outcome_unknown`` that nothing re-drives),
who an open approval stage asks (``stage_deciders``), whether a seal error is the notice's own
(``seal_refused_the_notice``) and when a notice whose seal was refused is tried again
(``seal_retry_delay_seconds``). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from mailnode import budgets
from mailnode.clock import utc
from mailnode.ids import prefix_of
from mailnode.outbound.idempotency import NODE_KEY_PREFIX
from mailnode.vocabulary.mail_classes import MailClass, parse_mail_class
from mailnode.vocabulary.send_states import StateReason, parse_reason


class NoticeKind(StrEnum):
    """What a notice tells its recipient.

    - ``approval_asked``: an approval stage asks you to decide (episode: the stage).
    - ``domain_pause_placed`` / ``domain_pause_lifted``: a domain pause took effect or ended (episode: the
      pause).
    - ``butler_paused``: a Butler you answer for was paused (episode: the pause).
    - ``send_failed``: a send you authored failed terminally (episode: the send).
    - ``breaker_tripped``: a rate breaker tripped (episode: the trip episode).
    - ``webhook_disabled``: a webhook endpoint was disabled after its last retry failed (episode: the
      endpoint's disabling, ``<whe id>@<disabled_at>``).
    """

    APPROVAL_ASKED = "approval_asked"
    DOMAIN_PAUSE_PLACED = "domain_pause_placed"
    DOMAIN_PAUSE_LIFTED = "domain_pause_lifted"
    BUTLER_PAUSED = "butler_paused"
    SEND_FAILED = "send_failed"
    BREAKER_TRIPPED = "breaker_tripped"
    WEBHOOK_DISABLED = "webhook_disabled"


class Audience(StrEnum):
    """Whom a kind goes to; the I/O layer expands it to users with a contact address.

    - ``deciders``: the people the approval stage asks (teams expanded).
    - ``administrators``: holders of ``org.admin``.
    - ``butler_owners``: the people who may edit or release the Butler.
    - ``author``: the person who authored the send; for a Butler's send, its owners; nobody for an
      application or the node itself.
    """

    DECIDERS = "deciders"
    ADMINISTRATORS = "administrators"
    BUTLER_OWNERS = "butler_owners"
    AUTHOR = "author"


#: Who receives each kind. Total over ``NoticeKind``.
AUDIENCE_OF_KIND: dict[NoticeKind, Audience] = {
    NoticeKind.APPROVAL_ASKED: Audience.DECIDERS,
    NoticeKind.DOMAIN_PAUSE_PLACED: Audience.ADMINISTRATORS,
    NoticeKind.DOMAIN_PAUSE_LIFTED: Audience.ADMINISTRATORS,
    NoticeKind.BUTLER_PAUSED: Audience.BUTLER_OWNERS,
    NoticeKind.SEND_FAILED: Audience.AUTHOR,
    NoticeKind.BREAKER_TRIPPED: Audience.ADMINISTRATORS,
    NoticeKind.WEBHOOK_DISABLED: Audience.ADMINISTRATORS,
}

#: The id prefix of each kind's episode subject (``ids.PREFIXES``); ``breaker_tripped`` episodes are not
#: ids but ``<breaker>@<started_at>`` (``trip_episode_id``), ``webhook_disabled`` ones
#: ``<whe id>@<disabled_at>`` (an endpoint re-enabled and disabled again is a new episode). Total over ``NoticeKind``.
EPISODE_PREFIX_OF_KIND: dict[NoticeKind, str | None] = {
    NoticeKind.APPROVAL_ASKED: "ast",
    NoticeKind.DOMAIN_PAUSE_PLACED: "dpz",
    NoticeKind.DOMAIN_PAUSE_LIFTED: "dpz",
    NoticeKind.BUTLER_PAUSED: "bpz",
    NoticeKind.SEND_FAILED: "snd",
    NoticeKind.BREAKER_TRIPPED: None,
    NoticeKind.WEBHOOK_DISABLED: None,
}


def parse_notice_kind(value: str | None) -> NoticeKind | None:
    """The ``NoticeKind`` named by ``value``, or None for anything else (callers send nothing)."""
    if value is None:
        return None
    try:
        return NoticeKind(value)
    except ValueError:
        return None


def dedup_key(kind: str | NoticeKind, episode: str, recipient_user_id: str) -> str:
    """``<kind>:<episode>:<user id>``: one notice per kind, episode and person (a unique column).

    Raises ``ValueError`` for an unknown kind, an empty episode, an episode of the wrong id kind, or a
    recipient that is not a user id (a programming error, never a person's input).
    """
    k = parse_notice_kind(kind)
    if k is None:
        raise ValueError(f"unknown notice kind {kind!r}")
    prefix = EPISODE_PREFIX_OF_KIND[k]
    if not episode or (prefix is not None and prefix_of(episode) != prefix):
        raise ValueError(f"episode {episode!r} is not a {prefix or 'breaker episode'} for {k.value}")
    if prefix_of(recipient_user_id) != "usr":
        raise ValueError(f"notice recipient {recipient_user_id!r} is not a user id")
    return f"{k.value}:{episode}:{recipient_user_id}"


class SendFailure(StrEnum):
    """How a send failed terminally (the ``send_failed`` notice says which).

    - ``bounced``: a recipient's delivery report or provider event says it bounced.
    - ``refused``: the transport refused it.
    - ``withheld``: a gate refused it at hand-over (a latched refusal after sealing).
    - ``gave_up``: deferrable mail nobody could hand over within the give-up age.
    - ``decision_needed``: it may have left and cannot be retried safely; a person decides.
    """

    BOUNCED = "bounced"
    REFUSED = "refused"
    WITHHELD = "withheld"
    GAVE_UP = "gave_up"
    DECISION_NEEDED = "decision_needed"


@dataclass(frozen=True)
class FailureFacts:
    """What is known about a terminal failure when deciding whether it produces a notice.

    Attributes:
        send_id: the failed send (``snd_...``).
        author_id: its author's principal id (``usr_``, ``btl_``, ``app_``; anything else: the node).
        mail_class: the send's stored class string.
        notice_id: the notice (``ntf_...``) this send carried, or None when it is not a notice.
        auto_submitted: the send carried ``Auto-Submitted`` other than ``no`` (RFC 3834 §5): system mail.
        failure: the ``SendFailure`` string.
    """

    send_id: str
    author_id: str | None
    mail_class: str | None
    notice_id: str | None
    auto_submitted: bool
    failure: str


@dataclass(frozen=True)
class NoticeRequest:
    """A notice to create: its kind, episode (the send) and audience, resolved to users by the I/O layer."""

    kind: NoticeKind
    episode: str
    audience: Audience
    failure: SendFailure


def is_about_a_notice(facts: FailureFacts) -> bool:
    """Whether the failed send was itself system mail: a notice, or anything auto-submitted.

    A notice's failure is recorded as an event and stops there; telling someone that a notice failed
    would be a notice too, and to an address that bounces it would bounce again (the bounce storm).
    """
    return facts.notice_id is not None or facts.auto_submitted


def notice_for_failure(facts: FailureFacts) -> NoticeRequest | None:
    """The ``send_failed`` notice a terminal failure produces, or None.

    None when the send was a notice or other system mail (``is_about_a_notice``), when its author is not
    a person or a Butler (an application reads its send's state; the node tells nobody about itself),
    when the class is realtime (its caller was answered 503 in the request) or unknown, and when the
    failure is not one mailnode knows (fail closed: no mail about what we cannot name).
    """
    if is_about_a_notice(facts):
        return None
    try:
        failure = SendFailure(facts.failure)
    except ValueError:
        return None
    mail_class = parse_mail_class(facts.mail_class)
    if mail_class is None or mail_class is MailClass.REALTIME:
        return None
    if facts.author_id is None or prefix_of(facts.author_id) not in ("usr", "btl"):
        return None
    return NoticeRequest(NoticeKind.SEND_FAILED, facts.send_id, Audience.AUTHOR, failure)


def notice_idempotency_key(notice_id: str) -> str:
    """The idempotency key a notice's send is sealed under: ``mailnode:notice:<ntf id>``.

    In the node's namespace (``NODE_KEY_PREFIX``), so a person cannot pre-empt it by sealing mail of
    their own under the notice id. Raises ``ValueError`` for an id that is not a notice's.
    """
    if prefix_of(notice_id) != "ntf":
        raise ValueError(f"{notice_id!r} is not a notice id")
    return f"{NODE_KEY_PREFIX}notice:{notice_id}"


def is_notice_send(*, key: str, notice_id: str, auto_submitted: str | None, mail_class: str | None) -> bool:
    """Whether a send found under ``key`` for notice ``notice_id`` really is that notice's, so the sweep
    adopts it instead of sealing the notice (a crash between the seal and the write of ``send_id``).

    | key | send | adopted |
    |---|---|---|
    | ``notice_idempotency_key(notice_id)`` | anything | yes: only the node writes keys in its namespace |
    | the bare notice id (sealed before keys were namespaced) | system mail: ``auto-generated``, ``deferrable`` | yes |
    | the bare notice id | anything else (a person's own mail under that key) | no |
    | any other key | | no |

    Auto-Submitted ``auto-generated`` is written only on the node's own mail (``SealRequest.system`` /
    ``notice``); no caller's request sets it.
    """
    if key == notice_idempotency_key(notice_id):
        return True
    if key != notice_id:
        return False
    return auto_submitted == "auto-generated" and parse_mail_class(mail_class) is MailClass.DEFERRABLE


#: The audit actions that record a send's failure, read by the notice sweep (``failure_of_audit``).
FAILURE_ACTIONS: tuple[str, ...] = ("send.refused", "send.withheld", "send.outcome_unknown")


def failure_of_audit(action: str, reason: str | None, mail_class: str | None) -> SendFailure | None:
    """The failure an audit entry about a send records, or None when it records none a person must hear of.

    ``reason`` is the entry's ``detail.reason`` (None when absent); ``mail_class`` the send's stored class.

    | action | reason | class | failure |
    |---|---|---|---|
    | ``send.refused`` | any | any | ``refused`` |
    | ``send.withheld`` | ``gave_up`` | any | ``gave_up`` |
    | ``send.withheld`` | anything else | any | ``withheld`` |
    | ``send.outcome_unknown`` | ``dedup_window_closed`` | any | ``decision_needed`` (the sweeper's ``to_person``) |
    | ``send.outcome_unknown`` | none | ``correspondence`` | ``decision_needed`` |
    | ``send.outcome_unknown`` | none | ``deferrable``, ``realtime``, unknown | None |
    | ``send.outcome_unknown`` | any other | any | None |
    | anything else | | | None |

    Correspondence left ``outcome_unknown`` after a hand-over (``outbound.dispatch._finish_batch``) or a recovered
    claim (``dispatch.recover_one``, which writes ``send.outcome_unknown`` only when no recipient may be
    re-driven) is never re-driven automatically: ``dispatch.due_ids`` takes only ``movable_now``
    correspondence (held, throttled, drained gates; never ``outcome_unknown``) and the sweeper's re-drive
    query takes only deferrable mail. So only a person can decide it. Deferrable mail left
    ``outcome_unknown`` without a reason is the sweeper's to retry inside its key's window; when the window
    closes the sweeper writes ``dedup_window_closed`` (audited with that reason), and that entry is the
    notice. Realtime mail and unknown classes produce no notice (``notice_for_failure`` agrees); an unknown
    reason fails closed (no mail about what mailnode cannot name).
    """
    if action == "send.refused":
        return SendFailure.REFUSED
    if action == "send.withheld":
        return SendFailure.GAVE_UP if reason == StateReason.GAVE_UP.value else SendFailure.WITHHELD
    if action != "send.outcome_unknown":
        return None
    if reason == StateReason.DEDUP_WINDOW_CLOSED.value:
        return SendFailure.DECISION_NEEDED
    if reason is None and parse_mail_class(mail_class) is MailClass.CORRESPONDENCE:
        return SendFailure.DECISION_NEEDED
    return None


#: What the ``send_failed`` notice says happened, per failure. Total over ``SendFailure``.
FAILURE_WORDS: dict[SendFailure, str] = {
    SendFailure.BOUNCED: "did not reach a recipient: it bounced",
    SendFailure.REFUSED: "did not go out: the transport refused it",
    SendFailure.WITHHELD: "did not go out: the node withheld it",
    SendFailure.GAVE_UP: "did not go out: nobody could hand it over before the give-up age",
    SendFailure.DECISION_NEEDED: ("may or may not have gone out, and nothing will retry it by itself: "
                                  "you decide whether to send it again (a recipient may get it twice) or leave it"),
}


#: What the ``send_failed`` notice says for a send ``withheld`` with each reason, replacing the plain
#: ``FAILURE_WORDS[WITHHELD]``. Total over the reasons whose state is ``withheld``
#: (``outbound.states.STATE_OF_REASON``; a test checks it). Each says what stopped it and where: a
#: retention deletion is not a hand-over refusal, and the words must not say it was.
WITHHELD_WORDS: dict[StateReason, str] = {
    StateReason.POLICY_DENIED: "did not go out: a policy forbids it",
    StateReason.APPROVAL_UNSATISFIABLE: "did not go out: nobody can give the approval it needs",
    StateReason.APPROVAL_DENIED: "did not go out: an approver refused it",
    StateReason.DOMAIN_PAUSED: "did not go out: sending from its domain is paused",
    StateReason.AUTHORITY_LOST: "did not go out: its author no longer may send from its mailbox",
    StateReason.APPROVAL_REVOKED: "did not go out: its approval was withdrawn before it left",
    StateReason.APPROVER_INELIGIBLE: "did not go out: an approver of it no longer may approve",
    StateReason.POLICY_STRICTER: "did not go out: the policy became stricter than the one it was approved under",
    StateReason.APPROVAL_EXPIRED: "did not go out: its approval expired before it left",
    StateReason.EVIDENCE_CHANGED: "did not go out: its stored body no longer matches what was sealed",
    StateReason.GAVE_UP: "did not go out: nobody could hand it over before the give-up age",
    StateReason.REALTIME_NOT_RETRIED: "did not go out: realtime mail is tried once and the provider did not take it",
    StateReason.RETENTION_DELETED: ("did not go out: the organisation's retention setting deleted its content while "
                                    "it still waited to leave, and nothing restores it"),
    StateReason.NOT_CLASSIFIED: "did not go out: its class or state is not one mailnode knows, so it was stopped",
}


def failure_words(failure: SendFailure, reason: str | None) -> str:
    """What the ``send_failed`` notice says happened: ``WITHHELD_WORDS[reason]`` for a ``withheld`` send
    whose ``reason`` (the audit entry's ``detail.reason``) is known, else ``FAILURE_WORDS[failure]`` (an
    absent or unknown reason gets the plain words, which claim no cause)."""
    if failure is SendFailure.WITHHELD:
        r = parse_reason(reason)
        if r is not None and r in WITHHELD_WORDS:
            return WITHHELD_WORDS[r]
    return FAILURE_WORDS[failure]


def stage_deciders(holders: Iterable[str], roster: Iterable[str] | None, actor_id: str | None,
                   decided: Iterable[str]) -> frozenset[str]:
    """The people an open approval stage asks (spec/outbound.md §6.3): the holders of the kind's relation on
    the scope (users, teams expanded), within the stage's team ``roster`` when it names one (None: no team),
    minus the person who asked and minus everyone who already decided this approval (a withdrawn decision
    still counts: they cannot decide it again, so asking them would be noise).
    """
    people = frozenset(holders)
    if roster is not None:
        people &= frozenset(roster)
    return people - {actor_id} - frozenset(decided)


def seal_refused_the_notice(status: int) -> bool:
    """Whether a ``MailnodeError`` of HTTP ``status`` raised by a notice's seal is that notice's own.

    A 4xx is the seal refusing this request (its address, its sender ...): the sweep records it on the
    notice and goes on with the next one. A 5xx is a defect or the node's own trouble, and anything that is
    not a ``MailnodeError`` (a database or disk error) is not the notice's fault either: both propagate and
    end the pass, so the next pass meets them again instead of every notice being marked failed.
    """
    return 400 <= status < 500


def seal_retry_delay_seconds(failures: int,
                             base_seconds: int = budgets.NOTICE_SEAL_RETRY_BASE_SECONDS,
                             max_seconds: int = budgets.NOTICE_SEAL_RETRY_MAX_SECONDS) -> int:
    """Seconds after its last refused seal before a notice is tried again: 0 for a notice never refused,
    then ``base_seconds`` doubling per refusal, at most ``max_seconds`` (so a notice refused for good
    costs one attempt and one audit entry a day, and never sits at the head of a pass)."""
    if failures <= 0:
        return 0
    return min(base_seconds * 2 ** (failures - 1), max_seconds)


@dataclass(frozen=True)
class TripEpisode:
    """One breaker's current or last trip episode (stored per breaker by the I/O layer).

    Attributes:
        breaker: the breaker's reason token (``breaker_volume`` ...).
        started_at: when the episode began (aware UTC): part of its id.
        last_tripped_at: the last observation that found it tripped (aware UTC).
        cleared_at: the first observation after that found it clear, or None while it is tripped.
    """

    breaker: str
    started_at: datetime
    last_tripped_at: datetime
    cleared_at: datetime | None = None


def trip_episode_id(episode: TripEpisode) -> str:
    """``<breaker>@<started_at ISO 8601 UTC>``: the ``breaker_tripped`` notice's episode."""
    return f"{episode.breaker}@{utc(episode.started_at).isoformat()}"


def advance_trip_episode(
    current: TripEpisode | None,
    breaker: str,
    tripped: bool,
    now: datetime,
    quiet_seconds: int = budgets.NOTICE_BREAKER_EPISODE_QUIET_SECONDS,
) -> tuple[TripEpisode | None, bool]:
    """Fold one observation of ``breaker`` into its episode; returns (episode to store, notify now?).

    A trip starts a new episode (and notifies) unless the last one cleared less than ``quiet_seconds``
    ago, in which case it resumes (no notice: a breaker flapping at its threshold is one episode). A
    tripped observation inside an open episode, or a clear one, never notifies.
    """
    if not tripped:
        if current is not None and current.cleared_at is None:
            return replace(current, cleared_at=utc(now)), False
        return current, False
    if current is not None and current.cleared_at is None:
        return replace(current, last_tripped_at=utc(now)), False
    if (
        current is not None
        and current.cleared_at is not None
        and (utc(now) - utc(current.cleared_at) < timedelta(seconds=quiet_seconds))
    ):
        return replace(current, last_tripped_at=utc(now), cleared_at=None), False
    return TripEpisode(breaker, utc(now), utc(now)), True
