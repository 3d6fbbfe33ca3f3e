"""The notice sweep: read what happened since its cursors, decide with ``notices.rules``, write and seal.

Issue 9 "Notices"; spec/transactional.md §1 and §5. One pass per organisation (``sweep_org``):

1. **Facts.** Audit entries after the ``notices_audit`` cursor (``approval.requested``, ``approval.decided``,
   ``domain.pause_placed``, ``domain.pause_lifted``, ``butler.paused``, and a send's ``send.refused`` /
   ``send.withheld`` / ``send.outcome_unknown`` written at hand-over, at claim recovery or by the sweeper),
   bounced delivery events after the ``notices_events`` cursor, and the rate breakers' readings now
   (``governance.breakers.evaluate``) folded into each breaker's trip episode
   (``notices.advance_trip_episode``, ``notice_trip_episodes``).
2. **Decisions.** An approval entry asks the people of the approval's open stage, while it is pending
   (``open_stage_deciders``, ``notices.stage_deciders``): the first stage when it is requested, each later
   stage when a decision fills the one before, once per stage (the stage is the episode). A send's entry is
   a failure or nothing (``notices.failure_of_audit``: a send left ``outcome_unknown`` that nothing will
   re-drive is ``decision_needed``); ``notices.notice_for_failure`` decides whether its author hears of it
   (a notice's own failure, or any auto-submitted mail's, produces nothing: the bounce storm);
   ``AUDIENCE_OF_KIND`` says who hears of the rest, expanded here to users.
3. **Rows.** One ``notices`` row per (kind, episode, person), unique on ``notices.dedup_key``: a second
   pass, a retried workflow or a second worker writes nothing new.
4. **Retention.** For every notice not yet delivered (unsealed, or its send still pending),
   ``retention_io.extend`` on the content rows it is about (the half-window floor is retention's).
   This step reads no provider state, so it runs while sending is paused.
5. **Seal.** Each unsealed notice that is due is sealed as ``deferrable`` system mail
   (``SealRequest(notice=True)``) from the configured system sender (``outbound.realtime.system_sender``) to
   the person's contact address as it is now (``contact_addresses``, verified or not; the user's own
   address when they have none). The manifest's author is the recipient user (``send_manifests.author_id``
   is NOT NULL); the seal audits the node as the actor and names the reader as ``notice_for``, and skips
   its authority check for system mail, so the recipient needs no relation on the system sender's
   mailbox. The notice's idempotency key is ``notices.notice_idempotency_key`` (``mailnode:notice:<id>``,
   a namespace no caller may use), so a crash between the seal and the write of ``notices.send_id`` is
   healed by ``notice_send`` on the next pass, and a person who sealed mail of their own under the
   notice id cannot have it recorded as the notice (``notices.is_notice_send``).

One bad notice does not stop its pass. A seal that refuses a notice (a ``MailnodeError`` with a 4xx
status, ``notices.seal_refused_the_notice``: an address the seal refuses, a sender that stopped being a
mailbox address) is recorded on that notice, as ``log.error("notice.seal_failed ...")`` and a
``notice.seal_failed`` audit entry (subject: the notice; detail: the error's code, what and fix, the
attempt number and when it is tried again), and the pass goes on with the next notice. The refused notice
stays unsealed and is tried again after ``notices.seal_retry_delay_seconds`` of its refusal count (the
first retry is the next pass with the default interval; the wait doubles up to a day). Its refusals are
counted from those audit entries, so no schema holds them: the page of notices to seal takes only the
due ones, fewest refusals first, so a notice refused for good never sits at the head of the page and
starves the rest, and adds one audit entry a day, not one every pass. Anything else a seal raises (a
5xx ``MailnodeError``, a database or disk error) is not the notice's fault: it propagates, ends the pass,
and reaches the workflow's log; the notice is retried by the next pass as if nothing had happened.
A missing system sender (``E_SYSTEM_SENDER_MISSING``) is raised before any notice is tried.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Select, and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from mailnode import audit, budgets
from mailnode.audit import audit_entries
from mailnode.clock import utc
from mailnode.errors import MailnodeError
from mailnode.governance import approvals as ap
from mailnode.governance import breakers
from mailnode.ids import new_id, prefix_of
from mailnode.node import Node
from mailnode.notices import rules as notices
from mailnode.outbound.realtime import system_sender
from mailnode.outbound.seal import SealRequest, seal
from mailnode.retention import io as retention_io
from mailnode.schema.butler import butlers
from mailnode.schema.directory import organisations, users
from mailnode.schema.directory_contacts import contact_addresses
from mailnode.schema.governance import approval_stages
from mailnode.schema.governance import approvals as approvals_table
from mailnode.schema.notices import notice_trip_episodes
from mailnode.schema.notices import notices as notices_table
from mailnode.schema.outbound import send_manifests, send_recipient_events
from mailnode.schema.retention import sweep_cursors

log = logging.getLogger("mailnode.notices")

AUDIT_CURSOR = "notices_audit"
EVENTS_CURSOR = "notices_events"
#: The audit action recording a notice whose seal was refused (subject: the notice id).
SEAL_FAILED = "notice.seal_failed"

#: Audit actions the sweep reads, and the notice kind each one is about (None: a send's failure, decided by
#: ``notices.failure_of_audit`` and ``notices.notice_for_failure``).
ACTION_KINDS: dict[str, notices.NoticeKind | None] = {
    "approval.requested": notices.NoticeKind.APPROVAL_ASKED,
    "approval.decided": notices.NoticeKind.APPROVAL_ASKED,
    "domain.pause_placed": notices.NoticeKind.DOMAIN_PAUSE_PLACED,
    "domain.pause_lifted": notices.NoticeKind.DOMAIN_PAUSE_LIFTED,
    "butler.paused": notices.NoticeKind.BUTLER_PAUSED,
    **{action: None for action in notices.FAILURE_ACTIONS},
}

#: Send states in which a notice's own send has not yet been delivered (so its content is retained).
UNDELIVERED_STATES: frozenset[str] = retention_io.PENDING_SEND_STATES

#: Subject lines per kind. Total over ``NoticeKind``.
SUBJECT_OF_KIND: dict[notices.NoticeKind, str] = {
    notices.NoticeKind.APPROVAL_ASKED: "An approval is waiting for your decision",
    notices.NoticeKind.DOMAIN_PAUSE_PLACED: "Sending from a domain is paused",
    notices.NoticeKind.DOMAIN_PAUSE_LIFTED: "A domain pause was lifted",
    notices.NoticeKind.BUTLER_PAUSED: "A Butler was paused",
    notices.NoticeKind.SEND_FAILED: "A message you sent did not go out",
    notices.NoticeKind.BREAKER_TRIPPED: "A send breaker tripped",
    notices.NoticeKind.WEBHOOK_DISABLED: "A webhook endpoint was disabled",
}


#: What an approval of each kind asks, in an ``approval_asked`` notice. Total over ``approvals.SubjectKind``
#: (a test checks); an unknown kind reads as unnamed rather than guessed.
APPROVAL_WORDS: dict[str, str] = {
    ap.SubjectKind.SEND_MANIFEST.value: "a send a policy holds until it is approved",
    ap.SubjectKind.DOMAIN_PAUSE.value: "placing a pause on a sending domain",
    ap.SubjectKind.HOLD_LIFT.value: "lifting a legal hold",
    ap.SubjectKind.SUPERVISED_READ.value: "a supervised read of a mailbox's mail facts",
}


@dataclass(frozen=True)
class Pending:
    """A notice decided but not yet written: kind, episode, recipients, what it is about and what it says."""

    kind: notices.NoticeKind
    episode: str
    recipients: frozenset[str]
    about: tuple[str, ...]
    body: str


@dataclass
class SealPass:
    """One page of seals: the notices sealed, and those whose seal was refused (recorded, retried later)."""

    sealed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


@dataclass
class SweepReport:
    """One organisation's pass: notices written, sealed, refused at the seal (``notice.seal_failed``),
    retention rows extended, breaker episodes opened."""

    written: list[str] = field(default_factory=list)
    sealed: list[str] = field(default_factory=list)
    seal_refused: list[str] = field(default_factory=list)
    extended: int = 0
    episodes_opened: list[str] = field(default_factory=list)


# -- cursors -------------------------------------------------------------------------------------------------

def _cursor(conn: Connection, org_id: str, name: str) -> Any:
    c = sweep_cursors.c
    return conn.execute(select(sweep_cursors).where(c.org_id == org_id, c.name == name)).first()


def _save_cursor(conn: Connection, org_id: str, name: str, **values: Any) -> None:
    c = sweep_cursors.c
    done = conn.execute(update(sweep_cursors).where(c.org_id == org_id, c.name == name).values(**values))
    if done.rowcount == 0:
        conn.execute(sweep_cursors.insert().values(org_id=org_id, name=name, **values))


# -- audiences -----------------------------------------------------------------------------------------------

def administrators(conn: Connection, org_id: str) -> frozenset[str]:
    """Users holding ``org.admin`` on the organisation, directly or through a team (one statement)."""
    return ap.approvers(conn, org_id=org_id, scope_type="organisation", relation="org.admin", scope_id=org_id)


def butler_owners(conn: Connection, org_id: str, butler_id: str) -> frozenset[str]:
    """The Butler's creator (when a user) and the administrators, who may edit, release and resume it."""
    row = conn.execute(select(butlers.c.created_by).where(butlers.c.id == butler_id,
                                                          butlers.c.org_id == org_id)).first()
    owners = set(administrators(conn, org_id))
    if row is not None and prefix_of(row.created_by) == "usr":
        owners.add(str(row.created_by))
    return frozenset(owners)


@dataclass(frozen=True)
class AskedStage:
    """The open stage of a pending approval: its id (the notice's episode), ordinal and the people it asks."""

    stage_id: str
    ordinal: int
    deciders: frozenset[str]


def open_stage_deciders(conn: Connection, org_id: str, approval_id: str) -> AskedStage | None:
    """The approval's open stage now and the people it asks (``notices.stage_deciders``: the relation
    holders on the scope, within the stage's team when it names one, minus the asker and everyone who
    already decided); None when the approval is gone or no longer pending (nobody needs asking).

    The open stage is governance's (``approvals.open_stage``: the first stage with fewer standing approvals
    than it needs), read here rather than restated. Four or five statements.
    """
    a = conn.execute(select(approvals_table).where(approvals_table.c.id == approval_id,
                                                   approvals_table.c.org_id == org_id)).first()
    if a is None or a.state != ap.ApprovalState.PENDING.value:
        return None
    stage, decided = ap.open_stage(conn, approval_id)
    if stage is None:
        return None
    stage_id = conn.execute(select(approval_stages.c.id).where(approval_stages.c.approval_id == approval_id,
                                                               approval_stages.c.ordinal == stage.ordinal)).scalar()
    if stage_id is None:
        return None
    spec = ap.spec_of(a.subject_kind)
    holders = ap.approvers(conn, org_id=org_id, scope_type=spec.scope_type, relation=spec.relation,
                           scope_id=a.scope_id)
    roster = ap.rosters(conn, {stage.team_id}).get(stage.team_id, frozenset()) if stage.team_id else None
    return AskedStage(str(stage_id), stage.ordinal,
                      notices.stage_deciders(holders, roster, a.actor_id, decided))


def contact_address(conn: Connection, user_id: str) -> str | None:
    """Where ``user_id``'s notices go: their contact address (verified or not; doctor lists the unverified),
    else their own address; None when the user is gone."""
    row = conn.execute(select(contact_addresses.c.address, users.c.email)
                       .select_from(users.outerjoin(contact_addresses, contact_addresses.c.user_id == users.c.id))
                       .where(users.c.id == user_id)).first()
    if row is None:
        return None
    return str(row.address or row.email)


# -- facts and decisions -------------------------------------------------------------------------------------

def _manifest(conn: Connection, org_id: str, send_id: str) -> Any:
    m = send_manifests.c
    return conn.execute(select(m.id, m.author_id, m.mail_class, m.auto_submitted, m.subject)
                        .where(m.id == send_id, m.org_id == org_id)).first()


def _send_failed(conn: Connection, org_id: str, row: Any, failure: notices.SendFailure,
                 reason: str | None = None) -> Pending | None:
    """The ``send_failed`` notice ``failure`` of the send ``row`` produces, or None (``notice_for_failure``).

    ``reason``: the audit entry's ``detail.reason``; a ``withheld`` notice says in words what withheld
    it (``notices.failure_words``: retention deleting its content is not a refusal at hand-over).
    """
    send_id = str(row.id)
    notice_row = conn.execute(select(notices_table.c.id).where(notices_table.c.send_id == send_id)).first()
    facts = notices.FailureFacts(
        send_id=send_id, author_id=row.author_id, mail_class=row.mail_class,
        notice_id=None if notice_row is None else str(notice_row.id),
        auto_submitted=row.auto_submitted not in (None, "no"), failure=failure.value)
    request = notices.notice_for_failure(facts)
    if request is None:
        return None
    author = str(row.author_id)
    people = frozenset({author}) if prefix_of(author) == "usr" else butler_owners(conn, org_id, author)
    body = (f"Your message \"{row.subject}\" ({send_id}) {notices.failure_words(request.failure, reason)} "
            f"({request.failure.value}).\nIts state and what to do next: GET /api/sends/{send_id}\n")
    if request.failure is notices.SendFailure.DECISION_NEEDED:
        body += (f"To send it again: POST /api/sends/{send_id}/retry with "
                 "{\"mode\": \"resend-may-duplicate\", \"reason\": \"...\", \"accept_duplicate_risk\": true}\n")
    return Pending(request.kind, request.episode, people, (send_id,), body)


def _reason(detail: dict[str, Any]) -> str | None:
    value = detail.get("reason")
    return value if isinstance(value, str) else None


def _from_audit(conn: Connection, org_id: str, action: str, subject: str | None,
                detail: dict[str, Any]) -> Pending | None:
    kind = ACTION_KINDS[action]
    if kind is None:
        row = _manifest(conn, org_id, str(subject)) if subject else None
        if row is None:
            return None
        failure = notices.failure_of_audit(action, _reason(detail), row.mail_class)
        return None if failure is None else _send_failed(conn, org_id, row, failure, _reason(detail))
    if kind is notices.NoticeKind.APPROVAL_ASKED:
        asked = open_stage_deciders(conn, org_id, str(subject)) if subject else None
        if asked is None:
            return None
        about_id = str(detail.get("subject_id") or "")
        about = (about_id,) if prefix_of(about_id) in ("snd", "msg") else ()
        what = APPROVAL_WORDS.get(str(detail.get("subject_kind")), "an act mailnode does not name here")
        return Pending(kind, asked.stage_id, asked.deciders, about,
                       f"An approval ({subject}) asks for your decision at stage {asked.ordinal}: {what} "
                       f"({about_id or 'see the approval'}).\n"
                       f"Read what it asks and decide it: GET /api/approvals, then "
                       f"POST /api/approvals/{subject}/decide {{\"decision\": \"approve\" or \"deny\"}}\n")
    if kind in (notices.NoticeKind.DOMAIN_PAUSE_PLACED, notices.NoticeKind.DOMAIN_PAUSE_LIFTED):
        verb = "paused" if kind is notices.NoticeKind.DOMAIN_PAUSE_PLACED else "no longer paused"
        return Pending(kind, str(subject), administrators(conn, org_id), (),
                       f"Sending from {detail.get('domain', 'a domain')} is {verb} ({subject}).\n"
                       "See GET /api/domain-pauses\n")
    pause_id = str(detail.get("pause_id") or "")
    if not pause_id:
        return None
    return Pending(kind, pause_id, butler_owners(conn, org_id, str(subject)), (),
                   f"The Butler {detail.get('name', subject)} was paused: {detail.get('said', '')}\n"
                   "Resume it: GET /api/butler-pauses\n")


def _episode_of(row: Any) -> notices.TripEpisode | None:
    if row is None:
        return None
    return notices.TripEpisode(str(row.breaker), utc(row.started_at), utc(row.last_tripped_at),
                               utc(row.cleared_at) if row.cleared_at is not None else None)


def breaker_episodes(conn: Connection, org_id: str, now: datetime, delivery_signals: str) -> list[Pending]:
    """Fold the breakers' readings now into their trip episodes (stored); a ``breaker_tripped`` notice to
    the administrators for each episode that opens."""
    state = breakers.evaluate(conn, org_id=org_id, now=now, delivery_signals=delivery_signals)
    t = notice_trip_episodes.c
    stored = {r.breaker: r for r in conn.execute(select(notice_trip_episodes).where(t.org_id == org_id)).all()}
    out: list[Pending] = []
    for reading in state.readings:
        token = breakers.REASON_OF[reading.breaker]
        before = _episode_of(stored.get(token))
        after, notify = notices.advance_trip_episode(before, token, reading.tripped, now)
        if after is not None and after != before:
            values = {"started_at": after.started_at, "last_tripped_at": after.last_tripped_at,
                      "cleared_at": after.cleared_at}
            if before is None:
                conn.execute(notice_trip_episodes.insert().values(org_id=org_id, breaker=token, **values))
            else:
                conn.execute(update(notice_trip_episodes).where(t.org_id == org_id, t.breaker == token)
                             .values(**values))
        if notify and after is not None:
            out.append(Pending(notices.NoticeKind.BREAKER_TRIPPED, notices.trip_episode_id(after),
                               administrators(conn, org_id), (),
                               f"{reading.sentence}\nSee GET /api/breakers\n"))
    return out


def write(conn: Connection, org_id: str, pending: Pending, now: datetime) -> list[str]:
    """Write one ``notices`` row per recipient of ``pending`` whose dedup key is new; returns the new ids.

    A concurrent writer of the same key loses on the unique index inside a savepoint and writes nothing
    (the row it lost to is the notice); any other integrity error re-raises.
    """
    written: list[str] = []
    for user_id in sorted(pending.recipients):
        key = notices.dedup_key(pending.kind, pending.episode, user_id)
        if conn.execute(select(notices_table.c.id).where(notices_table.c.dedup_key == key)).first() is not None:
            continue
        address = contact_address(conn, user_id)
        if address is None:
            continue
        nid = new_id("ntf")
        try:
            with conn.begin_nested():
                conn.execute(notices_table.insert().values(
                    id=nid, org_id=org_id, dedup_key=key, kind=pending.kind.value, episode=pending.episode,
                    recipient_user_id=user_id, address=address, about=list(pending.about),
                    subject=SUBJECT_OF_KIND[pending.kind], body=pending.body, created_at=now))
        except IntegrityError:
            if conn.execute(select(notices_table.c.id).where(notices_table.c.dedup_key == key)).first() is None:
                raise
            continue
        written.append(nid)
    return written


def collect(conn: Connection, org_id: str, now: datetime, delivery_signals: str,
            page_max: int = budgets.NOTICE_SWEEP_PAGE_MAX) -> tuple[list[Pending], list[str]]:
    """Read the facts after both cursors (advancing them) and the breaker episodes; the notices they make
    and the episodes opened (``breaker_tripped`` episode ids)."""
    out: list[Pending] = []
    a = audit_entries.c
    cur = _cursor(conn, org_id, AUDIT_CURSOR)
    q = select(a.seq, a.action, a.subject, a.detail).where(a.org_id == org_id, a.action.in_(list(ACTION_KINDS)))
    if cur is not None and cur.seq is not None:
        q = q.where(a.seq > cur.seq)
    rows = conn.execute(q.order_by(a.seq).limit(page_max)).all()
    for r in rows:
        detail = _detail(r.detail)
        p = _from_audit(conn, org_id, str(r.action), r.subject, detail)
        if p is not None:
            out.append(p)
    if rows:
        _save_cursor(conn, org_id, AUDIT_CURSOR, seq=int(rows[-1].seq))
    e = send_recipient_events.c
    ecur = _cursor(conn, org_id, EVENTS_CURSOR)
    eq = select(e.id, e.manifest_id, e.received_at).where(e.org_id == org_id, e.event_type == "bounced",
                                                          e.manifest_id.is_not(None))
    if ecur is not None and ecur.at is not None:
        eq = eq.where(or_(e.received_at > ecur.at, and_(e.received_at == ecur.at, e.id > ecur.key)))
    events = conn.execute(eq.order_by(e.received_at, e.id).limit(page_max)).all()
    for ev in events:
        row = _manifest(conn, org_id, str(ev.manifest_id))
        p = None if row is None else _send_failed(conn, org_id, row, notices.SendFailure.BOUNCED)
        if p is not None:
            out.append(p)
    if events:
        _save_cursor(conn, org_id, EVENTS_CURSOR, at=events[-1].received_at, key=str(events[-1].id))
    tripped = breaker_episodes(conn, org_id, now, delivery_signals)
    out.extend(tripped)
    return out, [p.episode for p in tripped]


def _detail(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    parsed = json.loads(value) if isinstance(value, str) else value
    return parsed if isinstance(parsed, dict) else {}


def undelivered_about(conn: Connection, org_id: str, page_max: int = budgets.NOTICE_SWEEP_PAGE_MAX) -> set[str]:
    """The content ids every undelivered notice is about: unsealed, or its send still pending."""
    n, m = notices_table.c, send_manifests.c
    rows = conn.execute(select(n.about).select_from(notices_table.outerjoin(send_manifests, m.id == n.send_id))
                        .where(n.org_id == org_id, or_(n.send_id.is_(None), m.state.in_(sorted(UNDELIVERED_STATES))))
                        .order_by(n.created_at, n.id).limit(page_max)).all()
    return {str(i) for r in rows for i in (r.about or [])}


def _seal_due(failures: Any, last_failed_at: Any, now: datetime) -> ColumnElement[bool]:
    """Never refused, or refused ``n`` times and last refused at least ``seal_retry_delay_seconds(n)`` ago:
    one disjunct per refusal count until the delay stops growing, then one for every count beyond."""
    clauses: list[ColumnElement[bool]] = [failures.is_(None)]
    n = 1
    while notices.seal_retry_delay_seconds(n) < notices.seal_retry_delay_seconds(n + 1):
        clauses.append(and_(failures == n,
                            last_failed_at <= now - timedelta(seconds=notices.seal_retry_delay_seconds(n))))
        n += 1
    clauses.append(and_(failures >= n, last_failed_at <= now - timedelta(seconds=notices.seal_retry_delay_seconds(n))))
    return or_(*clauses)


def unsealed_due(org_id: str, now: datetime, page_max: int = budgets.NOTICE_SWEEP_PAGE_MAX) -> Select[Any]:
    """The page of unsealed notices to seal now: due ones only (``_seal_due``), fewest refusals first, then
    oldest; each row with ``failures`` (its ``notice.seal_failed`` entries). One statement."""
    n, a = notices_table.c, audit_entries.c
    unsealed = select(n.id).where(n.org_id == org_id, n.send_id.is_(None))
    refused = (select(a.subject.label("notice_id"), func.count().label("failures"),
                      func.max(a.at).label("last_failed_at"))
               .where(a.org_id == org_id, a.action == SEAL_FAILED, a.subject.in_(unsealed))
               .group_by(a.subject).subquery())
    failures = func.coalesce(refused.c.failures, 0)
    return (select(notices_table, failures.label("failures"))
            .select_from(notices_table.outerjoin(refused, refused.c.notice_id == n.id))
            .where(n.org_id == org_id, n.send_id.is_(None),
                   _seal_due(refused.c.failures, refused.c.last_failed_at, now))
            .order_by(failures, n.created_at, n.id).limit(page_max))


def notice_send(conn: Connection, org_id: str, recipient_user_id: str, notice_id: str) -> str | None:
    """The send already sealed for notice ``notice_id`` (its reader is the author), or None.

    Reads the sends the reader authored under the notice's key or under the bare notice id (the key
    before it was namespaced) and adopts only one ``notices.is_notice_send`` accepts. One statement.
    """
    m = send_manifests.c
    key = notices.notice_idempotency_key(notice_id)
    rows = conn.execute(select(m.id, m.idempotency_key, m.auto_submitted, m.mail_class).where(
        m.org_id == org_id, m.author_id == recipient_user_id, m.idempotency_key.in_([key, notice_id]))
        .order_by(m.idempotency_key.desc())).all()
    for row in rows:
        if notices.is_notice_send(key=str(row.idempotency_key), notice_id=notice_id,
                                  auto_submitted=row.auto_submitted, mail_class=row.mail_class):
            return str(row.id)
    return None


def _record_refusal(node: Node, org_id: str, r: Any, address: str, exc: MailnodeError) -> None:
    """The failure of one notice's seal, where a person looks: the log (stable token) and the audit trail."""
    now = node.clock.now()
    attempt = int(r.failures) + 1
    retry_in = notices.seal_retry_delay_seconds(attempt)
    log.error("notice.seal_failed notice=%s org=%s kind=%s code=%s attempt=%d retry_in_seconds=%d: %s",
              r.id, org_id, r.kind, exc.code, attempt, retry_in, exc.what)
    with node.begin() as conn:
        audit.append(conn, org_id=org_id, at=now, action=SEAL_FAILED, actor_id=None, subject=str(r.id),
                     outcome="failed",
                     detail={"code": exc.code, "what": exc.what[:300], "fix": exc.fix[:300], "kind": r.kind,
                             "recipient_user_id": r.recipient_user_id, "address": address[:320],
                             "attempt": attempt, "retry_at": (now + timedelta(seconds=retry_in)).isoformat()})


def seal_pending(node: Node, org_id: str, page_max: int = budgets.NOTICE_SWEEP_PAGE_MAX) -> SealPass:
    """Seal one page of due unsealed notices (``unsealed_due``) as deferrable system mail.

    Returns the notices sealed and those the seal refused (each recorded by ``_record_refusal`` and left
    unsealed for a later pass). Raises ``E_SYSTEM_SENDER_MISSING`` (409) before trying any, and whatever a
    seal raises that is not the notice's own refusal (``notices.seal_refused_the_notice``: a 5xx
    ``MailnodeError``, a database or disk error), which ends the pass.
    """
    n = notices_table.c
    with node.read() as conn:
        rows = conn.execute(unsealed_due(org_id, node.clock.now(), page_max)).all()
        if not rows:
            return SealPass()
        sender = system_sender(conn, org_id, node.settings)
    done = SealPass()
    for r in rows:
        address = str(r.address)
        with node.read() as conn:
            send_id = notice_send(conn, org_id, r.recipient_user_id, str(r.id))
            if send_id is None:
                # Where the person reads their notices now: a retry after they fixed their address uses it.
                address = contact_address(conn, r.recipient_user_id) or address
        if send_id is None:
            try:
                send_id = seal(node, org_id=org_id, author_id=r.recipient_user_id, request=SealRequest(
                    mailbox_id=sender.mailbox_id, sender_address=sender.address, to=[address], subject=r.subject,
                    body=r.body, notice=True, idempotency_key=notices.notice_idempotency_key(str(r.id)))).id
            except MailnodeError as exc:
                if not notices.seal_refused_the_notice(exc.status):
                    raise
                _record_refusal(node, org_id, r, address, exc)
                done.refused.append(str(r.id))
                continue
        with node.begin() as conn:
            conn.execute(update(notices_table).where(n.id == r.id, n.send_id.is_(None))
                         .values(send_id=send_id, address=address))
        done.sealed.append(str(r.id))
    return done


def sweep_org(node: Node, *, org_id: str, now: datetime) -> SweepReport:
    """One notice pass over one organisation: facts and rows (one transaction), retention, then the seals."""
    report = SweepReport()
    signals = breakers.delivery_signals_of(node.settings.transport)
    with node.begin() as conn:
        pending, opened = collect(conn, org_id, now, signals)
        for p in pending:
            report.written.extend(write(conn, org_id, p, now))
        report.episodes_opened.extend(opened)
    # Retention before sealing: it reads no provider state and must happen even when a seal raises.
    with node.begin() as conn:
        report.extended = retention_io.extend(conn, source_ids=undelivered_about(conn, org_id), now=now)
    sealed = seal_pending(node, org_id)
    report.sealed.extend(sealed.sealed)
    report.seal_refused.extend(sealed.refused)
    return report


def run_pass(node: Node, now: datetime | None = None) -> dict[str, SweepReport]:
    """A notice pass over every organisation; ``{org_id: SweepReport}``."""
    at = now or node.clock.now()
    with node.read() as conn:
        org_ids = [str(r.id) for r in conn.execute(select(organisations.c.id).order_by(organisations.c.id)).all()]
    return {org_id: sweep_org(node, org_id=org_id, now=at) for org_id in org_ids}


def notices_of(conn: Connection, org_id: str, kinds: Iterable[str] | None = None) -> Sequence[Any]:
    """The organisation's notices, oldest first (optionally of ``kinds``): for doctor and tests."""
    n = notices_table.c
    q = select(notices_table).where(n.org_id == org_id)
    if kinds is not None:
        q = q.where(n.kind.in_(list(kinds)))
    return conn.execute(q.order_by(n.created_at, n.id)).all()
