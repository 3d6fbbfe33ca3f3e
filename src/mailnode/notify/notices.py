"""Notices to people: the closed vocabulary, who receives each, the dedup key per episode, and the rules
that keep notices from breeding notices.

Issue 9 "Notices"; spec/transactional.md §1 (notices are ``deferrable`` system mail). A notice is one row
per (kind, episode, recipient); its dedup key is what makes a second write of the same notice a no-op, so
a sweeper pass, a retried workflow or two workers cannot tell a person the same thing twice. A breaker
trip notifies administrators once per trip episode (``advance_trip_episode``). A delivery report or a
failure about a notice never produces another notice (``notice_for_failure``): a notice to an address
that bounces is recorded as an event and nothing more, so four bouncing notices are four events and zero
new notices. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from mailnode import budgets
from mailnode.clock import utc
from mailnode.ids import prefix_of
from mailnode.notify.classes import MailClass, parse_mail_class


class NoticeKind(StrEnum):
    """What a notice tells its recipient.

    - ``approval_asked``: an approval stage asks you to decide (episode: the stage).
    - ``domain_pause_placed`` / ``domain_pause_lifted``: a domain pause took effect or ended (episode: the
      pause).
    - ``butler_paused``: a Butler you answer for was paused (episode: the pause).
    - ``send_failed``: a send you authored failed terminally (episode: the send).
    - ``breaker_tripped``: a rate breaker tripped (episode: the trip episode).
    """

    APPROVAL_ASKED = "approval_asked"
    DOMAIN_PAUSE_PLACED = "domain_pause_placed"
    DOMAIN_PAUSE_LIFTED = "domain_pause_lifted"
    BUTLER_PAUSED = "butler_paused"
    SEND_FAILED = "send_failed"
    BREAKER_TRIPPED = "breaker_tripped"


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
}

#: The id prefix of each kind's episode subject (``ids.PREFIXES``); ``breaker_tripped`` episodes are not
#: ids but ``<breaker>@<started_at>`` (``trip_episode_id``). Total over ``NoticeKind``.
EPISODE_PREFIX_OF_KIND: dict[NoticeKind, str | None] = {
    NoticeKind.APPROVAL_ASKED: "ast",
    NoticeKind.DOMAIN_PAUSE_PLACED: "dpz",
    NoticeKind.DOMAIN_PAUSE_LIFTED: "dpz",
    NoticeKind.BUTLER_PAUSED: "bpz",
    NoticeKind.SEND_FAILED: "snd",
    NoticeKind.BREAKER_TRIPPED: None,
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
