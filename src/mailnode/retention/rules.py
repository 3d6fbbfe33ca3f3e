"""Retention: may this content be deleted now, and what the deletion sweep does with a page of candidates.

spec/transactional.md §5 (seed 002, second and third commits). Deletion is the least reversible act in
the node, so its predicate is this pure function and nothing else decides it. In order:

| condition | verdict |
|---|---|
| a legal hold in force covers it | retain (a hold always wins) |
| a dispatch worker holds its send under a live lease | retain (it is being handed over now; the next pass decides) |
| older than the ceiling | delete (the ceiling wins over everything but a hold) |
| younger than its kind's content retention | retain |
| a send about it is still pending with attempts left | retain (it may yet go) |
| ``retain_until`` ahead (a notice about it is undelivered) | retain |
| otherwise | delete |

An unknown content kind is retained (fail closed toward keeping). Every setting is a strict integer of
seconds, at most ``budgets.RETENTION_SECONDS_MAX`` (``setting_refusal``, ``check_changes``,
``RetentionSettings``); a stored value above it (written before the bound, or by hand) is clamped when
it is read (``settings_from_stored``), so no age the sweep computes can overflow ``timedelta``. ``retain_until_write``
is the notice sweeper's half-window rewrite floor; ``retain_until_at_give_up`` the fresh grace period a give-up writes
(seed 002, "the more important half"); ``hold_blocked_audit_due`` keeps ``hold.blocked`` to once per row
per hold episode; ``page_deletions`` walks a scanned page past what is retained so a
retained head never reads as an empty queue. ``read_refusal`` decides what a read of content answers once
retention may have deleted it (``E_CONTENT_DELETED``, 410, versus the store's own 500s). Pure: no I/O.

What a deletion deletes (the purge, ``retention_io.sweep_org``, writes all of it in the transaction that
records ``purged_at``):

- ``inbound_raw``: the raw bytes (the evidence blob, once nothing else names it) and everything the node
  derived from them that is not the mailbox's index: the stored header list, the text body, and the parse
  diagnostics (``defects``, ``parse_error``: they may quote a header's words). ``MESSAGE_PURGE`` names each
  ``messages`` column as cleared or kept. Kept: ids, the envelope, ``From`` (name and address), the
  subject, the dates, the Message-ID and threading references, the authentication verdicts, the
  automated / reply-refusal / report classification, attachment counts and size. The subject is kept on
  purpose, though it is arguably content: this node already treats it as the mailbox's index (a holder
  of ``mailbox.metadata.read``, who may not read bodies, sees it in every list), and the same line is
  copied where retention does not reach it (the conversation's subject, a reply's ``Re:`` subject on its
  send, the send-failure notice that quotes it, a Butler run's trigger facts); clearing it from the
  message alone would claim a deletion that did not happen.
- ``sealed_body``: the typed, normalised and rendered bytes of a send. A send still pending
  (``PENDING_SEND_STATES``: only the ceiling deletes one) that provably has not left (``NOT_YET_LEFT``:
  ``held``, ``awaiting``, ``throttled``) is made terminal with it: ``withheld`` with ``state_reason``
  ``retention_deleted``, recipients that never left following, audited ``send.withheld`` (so its author
  hears of it), never left waiting for a dispatch that would find no body. An ``outcome_unknown`` send
  keeps its state (``purge_ends_send``): it may already have reached its recipients, so calling it
  withheld "while it still waited to leave" would be false; its retry offer becomes ``none`` /
  ``content_deleted`` (``outbound.states.retry_offer``). A send under a live lease (``lease_live``) is
  never deleted: the worker holding it is handing it over now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from mailnode import budgets
from mailnode.clock import utc
from mailnode.errors import MailnodeError, invalid, limit_exceeded
from mailnode.vocabulary import send_states as states
from mailnode.vocabulary.send_states import SendState


class ContentKind(StrEnum):
    """Content under retention (an organisation setting per kind).

    - ``inbound_raw``: the raw bytes of a received message (the evidence store blob).
    - ``sealed_body``: the body of a sealed send (what was, or would have been, submitted).
    """

    INBOUND_RAW = "inbound_raw"
    SEALED_BODY = "sealed_body"


#: Content retention per kind when the organisation sets none, seconds. Total over ``ContentKind``.
DEFAULT_CONTENT_SECONDS: dict[ContentKind, int] = {
    ContentKind.INBOUND_RAW: budgets.RETENTION_INBOUND_RAW_SECONDS_DEFAULT,
    ContentKind.SEALED_BODY: budgets.RETENTION_SEALED_BODY_SECONDS_DEFAULT,
}


#: The settings' names in the API, each with the ``ContentKind`` it ages (None: the ceiling). Total over
#: ``ContentKind`` plus the ceiling.
SETTING_KINDS: Mapping[str, ContentKind | None] = MappingProxyType({
    "inbound_raw_seconds": ContentKind.INBOUND_RAW,
    "sealed_body_seconds": ContentKind.SEALED_BODY,
    "ceiling_seconds": None,
})


def setting_refusal(name: str, value: object) -> MailnodeError | None:
    """Why ``value`` cannot be the retention setting ``name`` (seconds), or None. Pure.

    | ``value`` | answer |
    |---|---|
    | a ``bool``, a string, a float, anything not an ``int`` | ``E_RETENTION_SETTING_NOT_INTEGER`` (422) |
    | an ``int`` above ``budgets.RETENTION_SECONDS_MAX`` | ``E_BUDGET_EXCEEDED`` (422) |
    | any other ``int`` | None (positivity and the ceiling are ``RetentionSettings``' coherence check) |

    ``E_BUDGET_EXCEEDED``'s ``detail`` holds ``limit_name``, ``limit``, ``observed`` and ``field``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        return invalid("E_RETENTION_SETTING_NOT_INTEGER",
                       f"{name} is {str(value)[:40]!r} ({type(value).__name__}), not a whole number of seconds.",
                       "Retention settings are integers of seconds; true, a string or a fraction would be "
                       "read as a different period than the one meant.",
                       f"PATCH /api/settings/retention with {name} as a JSON integer, e.g. {{\"{name}\": 604800}} "
                       "(7 days).", field=name, type=type(value).__name__)
    if value > budgets.RETENTION_SECONDS_MAX:
        err = limit_exceeded("E_BUDGET_EXCEEDED", "RETENTION_SECONDS_MAX", budgets.RETENTION_SECONDS_MAX, value,
                             f"Send {name} of at most {budgets.RETENTION_SECONDS_MAX} seconds "
                             f"({budgets.RETENTION_SECONDS_MAX // (365 * 86_400)} years); to keep "
                             "a mailbox's content longer, place a legal hold: POST /api/holds.")
        err.detail["field"] = name
        return err
    return None


def check_changes(changes: Mapping[str, object]) -> dict[str, int]:
    """The changes of a ``PATCH /api/settings/retention`` checked: ``{name: seconds}`` without the None
    (unchanged) ones. Pure.

    Raises ``E_REQUEST_INVALID`` (422) for a name outside ``SETTING_KINDS`` (fail closed: an unknown
    setting is not silently ignored), else the first ``setting_refusal`` in ``SETTING_KINDS`` order.
    """
    unknown = sorted(k for k in changes if k not in SETTING_KINDS)
    if unknown:
        raise invalid("E_REQUEST_INVALID", f"Unknown retention settings: {', '.join(unknown)}.",
                      f"The retention settings are {', '.join(SETTING_KINDS)}.",
                      "Send only those (seconds); GET /api/settings/retention shows them.", unknown=unknown)
    for name in SETTING_KINDS:
        if changes.get(name) is not None:
            refusal = setting_refusal(name, changes[name])
            if refusal is not None:
                raise refusal
    return {k: v for k, v in changes.items() if isinstance(v, int)}


@dataclass(frozen=True)
class RetentionSettings:
    """An organisation's retention settings (``GET/PATCH /api/settings/retention``).

    Attributes:
        content_seconds: retention per ``ContentKind``, seconds; must cover every kind.
        ceiling_seconds: past this age content is deleted unless a hold covers it.

    Each value must pass ``setting_refusal`` (an ``int`` of at most ``budgets.RETENTION_SECONDS_MAX``:
    ``E_RETENTION_SETTING_NOT_INTEGER`` / ``E_BUDGET_EXCEEDED``, 422), and each kind's retention must be
    positive and at most the ceiling, else ``E_RETENTION_INCOHERENT`` (422). So a ``RetentionSettings``
    never holds a period ``decide`` cannot turn into a ``timedelta``.
    """

    content_seconds: Mapping[ContentKind, int] = field(default_factory=lambda: dict(DEFAULT_CONTENT_SECONDS))
    ceiling_seconds: int = budgets.RETENTION_CEILING_SECONDS_DEFAULT

    def __post_init__(self) -> None:
        names = {kind: name for name, kind in SETTING_KINDS.items()}
        for name, value in [*((names.get(k, str(k)), v) for k, v in self.content_seconds.items()),
                            ("ceiling_seconds", self.ceiling_seconds)]:
            refusal = setting_refusal(name, value)
            if refusal is not None:
                raise refusal
        missing = [k.value for k in ContentKind if k not in self.content_seconds]
        bad = {k.value: v for k, v in self.content_seconds.items() if not 0 < v <= self.ceiling_seconds}
        if missing or bad or self.ceiling_seconds <= 0:
            raise invalid(
                "E_RETENTION_INCOHERENT",
                "The retention settings are not coherent.",
                "Every kind of content needs a retention above zero and at most the ceiling.",
                "PATCH /api/settings/retention with every kind's seconds at or below ceiling_seconds.",
                missing=missing,
                out_of_range=bad,
                ceiling_seconds=self.ceiling_seconds,
            )


DEFAULT_SETTINGS = RetentionSettings()


@dataclass(frozen=True)
class StoredSettings:
    """``settings_from_stored``'s answer: the settings the sweep uses, and ``clamped``: ``{name: the stored
    value}`` for each one above ``budgets.RETENTION_SECONDS_MAX`` that was read as the maximum instead
    (empty when the row was in range). A caller logs each clamp at error."""

    settings: RetentionSettings
    clamped: Mapping[str, int]


def settings_from_stored(*, inbound_raw_seconds: int, sealed_body_seconds: int,
                         ceiling_seconds: int) -> StoredSettings:
    """The settings a stored ``retention_settings`` row means, defended against values no write may make
    any more. Pure.

    | stored value | read as |
    |---|---|
    | an ``int`` above ``budgets.RETENTION_SECONDS_MAX`` | the maximum, named in ``clamped`` |
    | anything else | itself, checked by ``RetentionSettings`` (``E_RETENTION_INCOHERENT`` and the rest, as before) |

    A value above the maximum (e.g. 2**63-1, written on SQLite before the bound) is read as the maximum: keeping
    longer than any allowed setting is the direction that deletes nothing early.
    """
    stored = {"inbound_raw_seconds": inbound_raw_seconds, "sealed_body_seconds": sealed_body_seconds,
              "ceiling_seconds": ceiling_seconds}
    clamped = {k: v for k, v in stored.items()
               if isinstance(v, int) and not isinstance(v, bool) and v > budgets.RETENTION_SECONDS_MAX}
    used = {k: budgets.RETENTION_SECONDS_MAX if k in clamped else v for k, v in stored.items()}
    settings = RetentionSettings({ContentKind.INBOUND_RAW: used["inbound_raw_seconds"],
                                  ContentKind.SEALED_BODY: used["sealed_body_seconds"]}, used["ceiling_seconds"])
    return StoredSettings(settings, MappingProxyType(clamped))


@dataclass(frozen=True)
class RetentionFacts:
    """What the deletion sweep knows about one piece of content.

    Attributes:
        kind: the stored ``ContentKind`` string (unknown: retained).
        created_at: when it was stored (aware UTC); every age counts from here.
        under_hold: a legal hold in force covers it.
        send_pending: a send about it is still pending with attempts left (held, awaiting, throttled, or
            ambiguous inside its window).
        send_in_flight: a dispatch worker holds the send under a live lease (``lease_live``): it is
            being handed over now, so not even the ceiling deletes its body under it.
        retain_until: written by the notice sweeper while a notice about it is undelivered (aware UTC).
    """

    kind: str | None
    created_at: datetime
    under_hold: bool = False
    send_pending: bool = False
    send_in_flight: bool = False
    retain_until: datetime | None = None


class Verdict(StrEnum):
    """``delete`` or ``retain``."""

    DELETE = "delete"
    RETAIN = "retain"


class RetentionReason(StrEnum):
    """Which row of the table decided (``RetentionDecision.reason``)."""

    LEGAL_HOLD = "legal_hold"
    SEND_IN_FLIGHT = "send_in_flight"
    CEILING = "ceiling"
    WITHIN_RETENTION = "within_retention"
    SEND_PENDING = "send_pending"
    NOTICE_PENDING = "notice_pending"
    EXPIRED = "expired"
    KIND_NOT_CLASSIFIED = "kind_not_classified"


#: The verdict of each reason. Total over ``RetentionReason``.
VERDICT_OF_REASON: dict[RetentionReason, Verdict] = {
    RetentionReason.LEGAL_HOLD: Verdict.RETAIN,
    RetentionReason.SEND_IN_FLIGHT: Verdict.RETAIN,
    RetentionReason.CEILING: Verdict.DELETE,
    RetentionReason.WITHIN_RETENTION: Verdict.RETAIN,
    RetentionReason.SEND_PENDING: Verdict.RETAIN,
    RetentionReason.NOTICE_PENDING: Verdict.RETAIN,
    RetentionReason.EXPIRED: Verdict.DELETE,
    RetentionReason.KIND_NOT_CLASSIFIED: Verdict.RETAIN,
}


@dataclass(frozen=True)
class RetentionDecision:
    """The answer of ``decide``.

    Attributes:
        verdict: ``delete`` or ``retain``.
        reason: the deciding ``RetentionReason``.
        hold_blocked: a hold stopped a deletion that every other rule allowed; audit ``hold.blocked``.
    """

    verdict: Verdict
    reason: RetentionReason
    hold_blocked: bool = False


def _without_hold(facts: RetentionFacts, settings: RetentionSettings, now: datetime) -> RetentionReason:
    try:
        kind = ContentKind(facts.kind) if facts.kind is not None else None
    except ValueError:
        kind = None
    if kind is None:
        return RetentionReason.KIND_NOT_CLASSIFIED
    if facts.send_in_flight:
        return RetentionReason.SEND_IN_FLIGHT
    age = utc(now) - utc(facts.created_at)
    if age > timedelta(seconds=settings.ceiling_seconds):
        return RetentionReason.CEILING
    if age <= timedelta(seconds=settings.content_seconds[kind]):
        return RetentionReason.WITHIN_RETENTION
    if facts.send_pending:
        return RetentionReason.SEND_PENDING
    if facts.retain_until is not None and utc(facts.retain_until) > utc(now):
        return RetentionReason.NOTICE_PENDING
    return RetentionReason.EXPIRED


def decide(
    facts: RetentionFacts, now: datetime, settings: RetentionSettings = DEFAULT_SETTINGS
) -> RetentionDecision:
    """May this content be deleted at ``now``? The table in the module docstring, in its order.

    ``hold_blocked`` is True when a hold is all that keeps it (the rules without the hold say delete).
    """
    reason = _without_hold(facts, settings, now)
    if facts.under_hold:
        return RetentionDecision(
            Verdict.RETAIN,
            RetentionReason.LEGAL_HOLD,
            hold_blocked=VERDICT_OF_REASON[reason] is Verdict.DELETE,
        )
    return RetentionDecision(VERDICT_OF_REASON[reason], reason)


def retain_until_write(
    current: datetime | None, now: datetime, grace_seconds: int = budgets.RETENTION_NOTICE_GRACE_SECONDS
) -> datetime | None:
    """The ``retain_until`` the notice sweeper writes while a notice is undelivered, or None to skip.

    Writes ``now + grace`` unless the stored value is already more than half the grace ahead (the rewrite
    floor: a long outage must not rewrite one field on every pass). Never moves a value backwards. A write
    that does not happen costs an extension, never data (spec/transactional.md §5).
    """
    target = utc(now) + timedelta(seconds=grace_seconds)
    if current is not None and utc(current) - utc(now) > timedelta(seconds=grace_seconds / 2):
        return None
    if current is not None and utc(current) >= target:
        return None
    return target


def retain_until_at_give_up(
    current: datetime | None, now: datetime, grace_seconds: int = budgets.RETENTION_NOTICE_GRACE_SECONDS
) -> datetime | None:
    """The ``retain_until`` written when a notice or a deferrable send gives up, or None to skip.

    Seed 002, "the more important half": giving up is when the person will never be told, so the content
    gets a fresh grace period from the give-up, ``now + grace``. No half-window floor here (that floor is
    for the many passes of an undelivered notice; a give-up happens once per send): written unless the
    stored value already reaches ``now + grace``. Never moves a value backwards. spec/transactional.md §5.
    """
    target = utc(now) + timedelta(seconds=grace_seconds)
    if current is not None and utc(current) >= target:
        return None
    return target


def hold_blocked_audit_due(recorded: Sequence[str] | None, holding: Sequence[str]) -> bool:
    """Whether a row a hold kept from deletion gets a ``hold.blocked`` entry on this pass.

    Once per row per hold episode (issue 17 item 5): an episode is the set of holds in force covering the
    row (``holding``, hold ids); ``recorded`` is the set the last entry named (``retained_content.
    hold_blocked_by``), None when none was written. Due when the set changed (a first hold, another hold
    placed, one lifted while another still covers it); never for an empty ``holding``.
    """
    return bool(holding) and sorted(set(holding)) != sorted(set(recorded or ()))


K = TypeVar("K")
I = TypeVar("I")


@dataclass(frozen=True)
class Candidate(Generic[K, I]):
    """One scanned row: its cursor key (the scan's sort key, e.g. ``(created_at, id)``), id and decision."""

    key: K
    row_id: I
    decision: RetentionDecision


@dataclass(frozen=True)
class DeletionPage(Generic[K, I]):
    """What one deletion pass does with a scanned page.

    Attributes:
        delete: ids to delete, at most ``batch_max``, in scan order.
        hold_blocked: ids a hold kept (each audited ``hold.blocked``).
        next_cursor: the key to scan after next time (past every row examined, retained ones included);
            None when the scan reached the end, so the next pass starts from the oldest again.
        examined: rows examined (deleted + retained), for metrics.
    """

    delete: tuple[I, ...]
    hold_blocked: tuple[I, ...]
    next_cursor: K | None
    examined: int


def page_deletions(
    candidates: Sequence[Candidate[K, I]],
    *,
    scan_complete: bool,
    batch_max: int = budgets.RETENTION_DELETE_BATCH_MAX,
) -> DeletionPage[K, I]:
    """Walk a scanned page in order, collecting up to ``batch_max`` deletions past retained rows.

    Args:
        candidates: the scan from the previous cursor, in key order (at most ``RETENTION_SCAN_WINDOW_MAX``).
        scan_complete: True when the scan returned fewer rows than it asked for (the end was reached).
        batch_max: deletions per pass.

    The cursor moves past every examined row, retained or not, so fifty retained rows at the head never
    stop row fifty-one from being deleted (seed 002: "a blocked head for an empty queue"). When the batch
    fills, the cursor stops after the last deleted row and the rest is examined next pass.
    """
    delete: list[I] = []
    blocked: list[I] = []
    examined = 0
    last_key: K | None = None
    for candidate in candidates:
        if len(delete) >= batch_max:
            break
        examined += 1
        last_key = candidate.key
        if candidate.decision.verdict is Verdict.DELETE:
            delete.append(candidate.row_id)
        elif candidate.decision.hold_blocked:
            blocked.append(candidate.row_id)
    reached_end = scan_complete and examined == len(candidates)
    return DeletionPage(tuple(delete), tuple(blocked), None if reached_end else last_key, examined)


#: How each kind of content is named to a reader (noun phrase, its verb) and the setting that ages it out.
#: Total over ``ContentKind``; a stored kind outside it reads with ``UNCLASSIFIED_WORDS``.
CONTENT_WORDS: dict[ContentKind, tuple[str, str, str]] = {
    ContentKind.INBOUND_RAW: ("The raw bytes of message", "were", "inbound_raw_seconds"),
    ContentKind.SEALED_BODY: ("The sealed body of send", "was", "sealed_body_seconds"),
}
UNCLASSIFIED_WORDS: tuple[str, str, str] = ("The content of", "was", "ceiling_seconds")


def content_deleted(*, source_id: str, kind: str | None, purged_at: datetime) -> MailnodeError:
    """``E_CONTENT_DELETED`` (410 Gone): ``source_id``'s content was deleted by retention at ``purged_at``.

    Not a fault: the organisation's retention settings (``GET /api/settings/retention``) aged it out, and
    nothing restores it. ``detail``: ``{source_id, kind, purged_at (ISO 8601, UTC), setting}``.
    """
    try:
        words, verb, setting = CONTENT_WORDS[ContentKind(kind)] if kind is not None else UNCLASSIFIED_WORDS
    except ValueError:
        words, verb, setting = UNCLASSIFIED_WORDS
    when = utc(purged_at).isoformat()
    return MailnodeError(
        code="E_CONTENT_DELETED",
        what=f"{words} {source_id} {verb} deleted by retention at {when}.",
        why=f"The organisation's retention setting ({setting}, or ceiling_seconds past the ceiling) deletes "
            "this content once it is old enough and nothing holds it; its metadata and audit trail stay.",
        fix="Nothing can restore it. GET /api/settings/retention shows the setting; a legal hold "
            "(POST /api/holds) keeps a mailbox's content from deletion from now on.",
        status=410,
        detail={"source_id": source_id, "kind": kind, "purged_at": when, "setting": setting},
    )


def read_refusal(*, source_id: str, kind: str | None, purged_at: datetime | None,
                 read_error: MailnodeError | None) -> MailnodeError | None:
    """What a read of ``source_id``'s content answers, given its ledger row and the evidence store's answer.

    | ledger ``purged_at`` | blob read | answer |
    |---|---|---|
    | set | anything (a blob shared with unpurged content may still be there) | ``E_CONTENT_DELETED`` (410) |
    | NULL, or no ledger row yet | the bytes | None: serve them |
    | NULL, or no ledger row yet | ``E_EVIDENCE_MISSING`` / ``E_EVIDENCE_ALTERED`` (500) | that error |

    A blob missing without a purge record stays ``E_EVIDENCE_MISSING``: that is corruption, not retention.
    """
    if purged_at is not None:
        return content_deleted(source_id=source_id, kind=kind, purged_at=purged_at)
    return read_error


def deletion_note(*, source_id: str, kind: str | None, purged_at: datetime) -> dict[str, Any]:
    """How a read route that still shows the row says its content is gone (the 410's words, as data).

    ``{"at": ISO 8601 UTC, "setting": the setting that aged it out, "words": what happened, "fix": what
    can be done}``; the same words as ``content_deleted`` (``E_CONTENT_DELETED``).
    """
    error = content_deleted(source_id=source_id, kind=kind, purged_at=purged_at)
    return {"at": error.detail["purged_at"], "setting": error.detail["setting"], "words": error.what,
            "fix": error.fix}


#: What the purge of a message's ``inbound_raw`` content writes in its ``messages`` row: each cleared
#: column and the value left in it (NOT NULL JSON columns an empty list). See the module docstring.
MESSAGE_CLEARED: Mapping[str, Any] = MappingProxyType({
    "headers": (),
    "text_body": None,
    "defects": (),
    "parse_error": None,
})
#: ``messages`` columns the purge keeps: the metadata a mailbox needs to stay coherent. With
#: ``MESSAGE_CLEARED`` it covers every column (a test fails until a new column is classified).
MESSAGE_KEPT: frozenset[str] = frozenset({
    "id", "org_id", "mailbox_id", "receipt_id", "conversation_id", "case_id", "envelope_from", "envelope_to",
    "rfc_message_id", "in_reply_to", "references", "subject", "from_name", "from_address", "date", "received_at",
    "automated", "reply_refusal", "dmarc", "spf", "dkim", "attachments", "dangerous_attachments", "report_kind",
    "raw_sha256", "size_bytes", "text_body_type", "html_part",
})

#: Send states in which a send provably has not left (``outbound.states.NOT_YET_LEFT``). Only a purge of a
#: send in one of these ends it.
NOT_YET_LEFT: frozenset[str] = frozenset(states.NOT_YET_LEFT)

#: Send states in which a send may still go (``RetentionFacts.send_pending``): gated, queued or retryable.
#: ``outcome_unknown`` counts as pending (it may be retried inside its window); the ceiling still deletes.
PENDING_SEND_STATES: frozenset[str] = NOT_YET_LEFT | {SendState.OUTCOME_UNKNOWN.value}


def send_pending(state: str | None) -> bool:
    """Whether a send in ``state`` (a stored string) may still go; an unknown state is not pending (no
    dispatch moves it: ``outbound.movable``)."""
    return state in PENDING_SEND_STATES


def lease_live(lease_until: datetime | None, now: datetime) -> bool:
    """Whether a dispatch claim's lease (``send_manifests.lease_until``, aware UTC) still runs at ``now``.

    A lapsed lease is not live: its claim is recovered (``outbound.dispatch.recover_claims``) and the send
    may be deleted under it like any other.
    """
    return lease_until is not None and utc(lease_until) > utc(now)


def purge_ends_send(kind: str | None, state: str | None) -> bool:
    """Whether deleting this content must also make its send terminal (``withheld/retention_deleted``).

    | kind | send state | answer |
    |---|---|---|
    | ``sealed_body`` | not yet left: ``NOT_YET_LEFT`` (held, awaiting, throttled) | True: no dispatch may meet it |
    | ``sealed_body`` | ``outcome_unknown`` | False: it may have reached its recipients, so it is not "withheld" |
    | ``sealed_body`` | terminal, unknown, or no send row | False: nothing waits on it |
    | anything else | any | False |

    A send left ``outcome_unknown`` keeps its state, and its retry offer becomes ``none/content_deleted``.

    spec/transactional.md §5.
    """
    return kind == ContentKind.SEALED_BODY.value and state in NOT_YET_LEFT
