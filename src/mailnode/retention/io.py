"""Retention I/O: organisation settings, the ledger of content, the deletion sweep and ``retain_until``.

spec/transactional.md §5; issue 9 part B. The decision is ``retention.rules.decide`` and nothing else;
this module reads its facts, calls it, and writes what it returns.

- The ledger (``retained_content``) has one row per message (``inbound_raw``: its raw bytes) and per send
  (``sealed_body``: the typed, normalised and rendered bytes). ``enrol`` adds rows for content not yet in
  it, a bounded page per pass. Deleting content removes its evidence blobs (only when no row still names
  the digest: blobs are shared) and clears the ledger row's ``digests`` with ``purged_at``; the row, the
  message or send row and the audit trail stay. The content tables' own digest columns are not cleared
  (they are NOT NULL and belong to ingress and outbound); a digest whose ledger row is purged names
  nothing any more.
- What a purge deletes besides the blob is decided in ``retention.rules`` (its docstring): a message's
  derived content (``retention.MESSAGE_CLEARED``: headers, text body, parse diagnostics; and its
  ``message_attachments`` rows) is cleared, its search document (``search.index.forget``) deleted, and a
  send that provably has not left (``retention.purge_ends_send``: ``held``, ``awaiting``, ``throttled``)
  is made terminal (``withheld/retention_deleted``, recipients that never left following, a pending
  approval of it settled ``cancelled``, ``send.withheld`` audited); an ``outcome_unknown`` send keeps its
  state. Both go in one savepoint with the ledger's ``purged_at`` (``_purge``): the ledger ``UPDATE``
  first, then the send guarded on the state the scan read and no live lease; when either guard misses
  the pair is rolled back and the row is reported ``raced`` only (never also ``withheld``), and a later
  pass meets it again.
- ``sweep_org`` is ``scan`` then ``write`` in one transaction: ``scan`` reads at most
  ``RETENTION_SCAN_WINDOW_MAX`` unpurged rows after its cursor, decides each, and lets
  ``retention.page_deletions`` pick up to ``RETENTION_DELETE_BATCH_MAX`` past retained ones; ``write``
  purges them (``retention.deleted``), audits a hold-blocked row ``hold.blocked`` once per hold episode
  (``retention.hold_blocked_audit_due``; the holds named are kept in ``hold_blocked_by``), and stores the
  cursor. The blobs go after the commit: a crash between leaves an orphan blob, never a row naming a
  missing one.
- Settings: ``update_settings`` writes only what ``retention.check_changes`` and ``RetentionSettings``
  accept (strict integers of seconds, at most ``budgets.RETENTION_SECONDS_MAX``, coherent), so a refusal
  writes nothing; ``settings_for`` reads a row through ``retention.settings_from_stored``, which clamps a
  stored value above the maximum and is logged at error as ``retention.setting_clamped`` (a stored
  2**63-1 once made every pass raise ``OverflowError``).
- ``run_pass(node, now)``: every organisation, enrol then sweep. It reads no provider state, so the
  notify sweeper runs it as its pre-send pass (``outbound.sweeper.PRE_SEND_PASSES``), before its
  provider-breaker check, and it works while sending is paused. That is the only place the node runs it:
  it has no schedule of its own (``server.schedules`` registers none), so it runs every
  ``sweeper_interval_seconds``.
- ``extend(conn, ...)``: the notice sweeper's write of ``retain_until`` (half-window rewrite floor);
  ``extend_at_give_up(conn, ...)``: the notify sweeper's write when a deferrable send gives up (a fresh
  grace period from the give-up, ``retention.retain_until_at_give_up``).
- ``read_content(node, ...)``: every person's read of content (a message's raw bytes, a send's sealed body)
  goes through it, so content retention deleted answers ``E_CONTENT_DELETED`` (410) and only a blob lost
  without a purge record answers the store's ``E_EVIDENCE_MISSING`` (500). ``content_refusal(conn, ...)``
  is the same answer inside a caller's transaction (a retry refused up front, dispatch meeting a missing
  body); ``purges_of(conn, ids)`` is what a read route needs to say a row's content was deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Select, and_, delete, exists, func, or_, select, update

from mailnode import audit, budgets, hooks
from mailnode.authz import is_admin
from mailnode.clock import utc
from mailnode.errors import MailnodeError, not_an_administrator
from mailnode.governance import approvals
from mailnode.node import Node
from mailnode.retention import rules as retention
from mailnode.schema.directory import organisations
from mailnode.schema.ingress import ingress_receipts
from mailnode.schema.mail_messages import message_attachments, messages
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.schema.retention import holds, retained_content, retention_settings, sweep_cursors
from mailnode.search import index as search_index
from mailnode.vocabulary.send_states import NOT_YET_LEFT, SendState, StateReason

#: Send states in which a send may still go (``retention.PENDING_SEND_STATES``; the notice sweeper reads
#: this name for a notice's own undelivered send).
PENDING_SEND_STATES: frozenset[str] = retention.PENDING_SEND_STATES
#: Recipient states a retention withholding moves to ``withheld``: rows that provably never left
#: (``retention.NOT_YET_LEFT``). An ``outcome_unknown`` row may have left and says so still.
DELETE_CURSOR = "retention_delete"
rc = retained_content.c
log = logging.getLogger("mailnode.retention.rules")


def settings_for(conn: Connection, org_id: str) -> retention.RetentionSettings:
    """The organisation's settings, or the defaults when it set none (one statement).

    A stored value above ``budgets.RETENTION_SECONDS_MAX`` is read as the maximum
    (``retention.settings_from_stored``) and logged at error, token ``retention.setting_clamped``, on every
    read until an administrator sets it again (``PATCH /api/settings/retention``). A stored row that is not
    coherent raises ``E_RETENTION_INCOHERENT`` (422) as before.
    """
    row = conn.execute(select(retention_settings).where(retention_settings.c.org_id == org_id)).first()
    if row is None:
        return retention.DEFAULT_SETTINGS
    read = retention.settings_from_stored(inbound_raw_seconds=row.inbound_raw_seconds,
                                          sealed_body_seconds=row.sealed_body_seconds,
                                          ceiling_seconds=row.ceiling_seconds)
    for name, stored in sorted(read.clamped.items()):
        log.error("retention.setting_clamped org=%s setting=%s stored=%s used=%d: a stored retention setting "
                  "is above RETENTION_SECONDS_MAX and is read as the maximum; set it again with "
                  "PATCH /api/settings/retention", org_id, name, stored, budgets.RETENTION_SECONDS_MAX)
    return read.settings


def settings_json(s: retention.RetentionSettings) -> dict[str, Any]:
    """The API shape: ``{inbound_raw_seconds, sealed_body_seconds, ceiling_seconds}``."""
    return {"inbound_raw_seconds": s.content_seconds[retention.ContentKind.INBOUND_RAW],
            "sealed_body_seconds": s.content_seconds[retention.ContentKind.SEALED_BODY],
            "ceiling_seconds": s.ceiling_seconds}


def get_settings(conn: Connection, *, org_id: str, actor_id: str) -> dict[str, Any]:
    """The settings, for administrators (``E_NOT_AN_ADMINISTRATOR``, 403, otherwise)."""
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("read the retention settings")
    return settings_json(settings_for(conn, org_id))


def update_settings(conn: Connection, *, org_id: str, actor_id: str, changes: dict[str, Any],
                    now: datetime) -> dict[str, Any]:
    """Change some of the three settings (``changes``: ``{name: seconds or None}``, None = unchanged); the
    result must be coherent. Audited ``retention.settings_changed`` with before and after.

    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), then ``retention.check_changes``' refusals (422:
    ``E_REQUEST_INVALID`` for an unknown name, ``E_RETENTION_SETTING_NOT_INTEGER`` for a value that is not
    an ``int`` (``True``, ``"10"``), ``E_BUDGET_EXCEEDED`` above ``budgets.RETENTION_SECONDS_MAX``), and
    ``E_RETENTION_INCOHERENT`` (422, from ``RetentionSettings``). Nothing is written when it raises.
    """
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("change the retention settings")
    asked = retention.check_changes(changes)
    before = settings_json(settings_for(conn, org_id))
    after = {**before, **asked}
    checked = retention.RetentionSettings(
        {retention.ContentKind.INBOUND_RAW: after["inbound_raw_seconds"],
         retention.ContentKind.SEALED_BODY: after["sealed_body_seconds"]}, after["ceiling_seconds"])
    values = {**settings_json(checked), "updated_by": actor_id, "updated_at": now}
    done = conn.execute(update(retention_settings).where(retention_settings.c.org_id == org_id).values(**values))
    if done.rowcount == 0:
        conn.execute(retention_settings.insert().values(org_id=org_id, **values))
    audit.append(conn, org_id=org_id, at=now, action="retention.settings_changed", actor_id=actor_id,
                 subject=org_id, detail={"before": before, "after": settings_json(checked)})
    return settings_json(checked)


def enrol(conn: Connection, *, org_id: str, limit: int = budgets.RETENTION_ENROL_BATCH_MAX) -> int:
    """Add ledger rows for messages and sends not in it yet (at most ``limit`` of each); returns how many."""
    added = 0
    m = messages.c
    rows = conn.execute(select(m.id, m.mailbox_id, m.received_at, m.raw_sha256)
                        .where(m.org_id == org_id, ~exists().where(rc.source_id == m.id))
                        .order_by(m.id).limit(limit)).all()
    if rows:
        conn.execute(retained_content.insert(), [
            {"source_id": r.id, "org_id": org_id, "kind": retention.ContentKind.INBOUND_RAW.value,
             "mailbox_id": r.mailbox_id, "created_at": r.received_at, "digests": [r.raw_sha256]} for r in rows])
        added += len(rows)
    s = send_manifests.c
    sends = conn.execute(select(s.id, s.mailbox_id, s.sealed_at, s.body_typed_sha256, s.body_normalised_sha256,
                               s.rendered_sha256, s.body_html_sha256)
                        .where(s.org_id == org_id, ~exists().where(rc.source_id == s.id))
                        .order_by(s.id).limit(limit)).all()
    if sends:
        conn.execute(retained_content.insert(), [
            {"source_id": r.id, "org_id": org_id, "kind": retention.ContentKind.SEALED_BODY.value,
             "mailbox_id": r.mailbox_id, "created_at": r.sealed_at,
             "digests": sorted({d for d in (r.body_typed_sha256, r.body_normalised_sha256, r.rendered_sha256,
                                            r.body_html_sha256) if d})}
            for r in sends])
        added += len(sends)
    return added


def extend(conn: Connection, *, source_ids: Iterable[str], now: datetime) -> int:
    """Write ``retain_until`` on the unpurged ledger rows of ``source_ids`` where
    ``retention.retain_until_write`` says so (the half-window floor); returns rows written."""
    return _move_retain_until(conn, source_ids, now, retention.retain_until_write)


def extend_at_give_up(conn: Connection, *, source_ids: Iterable[str], now: datetime) -> int:
    """Give the unpurged ledger rows of ``source_ids`` a fresh grace period from ``now`` (a give-up: the
    person will not be told; seed 002, ``retention.retain_until_at_give_up``); returns rows written.
    One read and one write per row moved; in the caller's transaction (the give-up's)."""
    return _move_retain_until(conn, source_ids, now, retention.retain_until_at_give_up)


def _move_retain_until(conn: Connection, source_ids: Iterable[str], now: datetime,
                       rule: Callable[[datetime | None, datetime], datetime | None]) -> int:
    """Apply the pure ``rule(current retain_until, now) -> new value or None`` to the unpurged ledger rows of
    ``source_ids``; one read, then one write per row the rule moves; returns rows written."""
    ids = sorted(set(source_ids))
    if not ids:
        return 0
    written = 0
    for r in conn.execute(select(rc.source_id, rc.retain_until)
                          .where(rc.source_id.in_(ids), rc.purged_at.is_(None))).all():
        target = rule(r.retain_until, now)
        if target is not None:
            conn.execute(update(retained_content).where(rc.source_id == r.source_id).values(retain_until=target))
            written += 1
    return written


def _not_purged(source_id_col: Any) -> Any:
    return ~exists().where(rc.source_id == source_id_col, rc.purged_at.is_not(None))


def referenced_query(digest: str) -> Select[Any]:
    """The one statement of ``referenced``: ``SELECT <bool>`` over three ``EXISTS``, each answered from an
    index on the digest column it asks (``ix_messages_raw_sha256``, ``ix_ingress_receipts_sha256`` and the
    four ``ix_send_manifests_*_sha256``, migrations 0011 and 0015), never a scan of the content tables."""
    m, r, s = messages.c, ingress_receipts.c, send_manifests.c
    return select(or_(
        exists().where(m.raw_sha256 == digest, _not_purged(m.id)),
        exists().where(r.sha256 == digest, or_(r.message_id.is_(None), _not_purged(r.message_id))),
        exists().where(or_(s.body_typed_sha256 == digest, s.body_normalised_sha256 == digest,
                           s.rendered_sha256 == digest, s.body_html_sha256 == digest), _not_purged(s.id)),
    ))


def referenced(conn: Connection, digest: str) -> bool:
    """Whether any row still names ``digest``: a message, receipt or send whose content is not purged."""
    return bool(conn.execute(referenced_query(digest)).scalar())


def content_refusal(conn: Connection, *, source_id: str,
                    read_error: MailnodeError | None = None) -> MailnodeError | None:
    """What a read of ``source_id``'s content answers (``retention.read_refusal``), given the evidence
    store's answer (``read_error``, None when the bytes were read or not asked for): ``E_CONTENT_DELETED``
    (410) once its ledger row is purged, else ``read_error``. One statement. spec/transactional.md §5."""
    row = conn.execute(select(rc.kind, rc.purged_at).where(rc.source_id == source_id)).first()
    return retention.read_refusal(source_id=source_id, kind=row.kind if row is not None else None,
                                  purged_at=row.purged_at if row is not None else None, read_error=read_error)


def purges_of(conn: Connection, source_ids: Iterable[str]) -> dict[str, tuple[str, datetime]]:
    """``{source_id: (kind, purged_at)}`` for those of ``source_ids`` whose content retention deleted (one
    statement; none for an empty list). A read route shows ``retention.deletion_note`` for each."""
    ids = sorted(set(source_ids))
    if not ids:
        return {}
    rows = conn.execute(select(rc.source_id, rc.kind, rc.purged_at)
                        .where(rc.source_id.in_(ids), rc.purged_at.is_not(None))).all()
    return {str(r.source_id): (str(r.kind), utc(r.purged_at)) for r in rows}


def read_content(node: Node, *, source_id: str, digest: str) -> bytes:
    """The bytes of ``digest`` read as ``source_id``'s content (a ``msg_`` raw message or a ``snd_`` body).

    Raises ``E_CONTENT_DELETED`` (410) when the ledger row of ``source_id`` is purged, whatever the store
    holds (a blob shared with content still retained is not this content any more), else the store's
    ``E_EVIDENCE_MISSING`` / ``E_EVIDENCE_ALTERED`` (500). The blob is read before the ledger: the sweep
    commits ``purged_at`` before it removes a blob, so a blob found missing because retention removed it
    always finds its purge record. One statement besides the file read. spec/transactional.md §5.
    """
    read_error: MailnodeError | None = None
    data = b""
    try:
        data = node.evidence.get(digest)
    except MailnodeError as exc:
        read_error = exc
    with node.read() as conn:
        refusal = content_refusal(conn, source_id=source_id, read_error=read_error)
    if refusal is None:
        return data
    if refusal is read_error:
        raise refusal
    raise refusal from read_error


@dataclass(frozen=True)
class SweepReport:
    """One organisation's deletion pass: rows examined, purged, hold-blocked, blobs removed, the cursor.

    ``withheld``: the purged sends that had not left and are now ``withheld/retention_deleted``;
    ``raced``: rows the pass chose but left whole, because their ledger row or send moved between the
    scan and the write (never also in ``purged`` or ``withheld``).
    """

    examined: int
    purged: tuple[str, ...]
    hold_blocked: tuple[str, ...]
    blobs_removed: int
    next_cursor: tuple[datetime, str] | None
    withheld: tuple[str, ...] = ()
    raced: tuple[str, ...] = ()


def _cursor(conn: Connection, org_id: str) -> tuple[datetime, str] | None:
    row = conn.execute(select(sweep_cursors).where(sweep_cursors.c.org_id == org_id,
                                                   sweep_cursors.c.name == DELETE_CURSOR)).first()
    return (utc(row.at), str(row.key)) if row is not None and row.at is not None else None


def _save_cursor(conn: Connection, org_id: str, cursor: tuple[datetime, str] | None) -> None:
    values = {"at": cursor[0] if cursor else None, "key": cursor[1] if cursor else None}
    c = sweep_cursors.c
    done = conn.execute(update(sweep_cursors).where(c.org_id == org_id, c.name == DELETE_CURSOR).values(**values))
    if done.rowcount == 0:
        conn.execute(sweep_cursors.insert().values(org_id=org_id, name=DELETE_CURSOR, **values))


def _covered(hold_rows: Sequence[Any], mailbox_id: str, at: datetime) -> bool:
    t = utc(at)
    return any(h.mailbox_id == mailbox_id and (h.from_date is None or utc(h.from_date) <= t)
               and (h.to_date is None or utc(h.to_date) >= t) for h in hold_rows)


def _clear_message(conn: Connection, message_id: str) -> None:
    """Clear a message's derived content (``retention.MESSAGE_CLEARED``) and its attachment list (file names and
    digests are content); its metadata stays."""
    conn.execute(update(messages).where(messages.c.id == message_id).values(**retention.MESSAGE_CLEARED))
    conn.execute(delete(message_attachments).where(message_attachments.c.message_id == message_id))


def _unmoved(send_id: str, before: str, now: datetime) -> Any:
    """The write guard on a send whose body the sweep deletes: still in ``before`` (the state the scan read,
    not merely some pending state) and under no live lease (``retention.lease_live``'s rule in SQL)."""
    m = send_manifests.c
    return and_(m.id == send_id, m.state == before, or_(m.lease_until.is_(None), m.lease_until <= now))


def _end_send(conn: Connection, *, org_id: str, send_id: str, before: str, now: datetime,
              retention_reason: str) -> bool:
    """Make a send that has not left (``retention.purge_ends_send``) and whose body is being deleted
    ``withheld/retention_deleted``, in the purge's transaction: recipients that never left follow, a
    pending approval of it is settled ``cancelled``, ``send.withheld`` is audited with ``from`` = ``before``
    (the notice sweep tells its author). Guarded (``_unmoved``): the send must still be in ``before``, the
    state the scan read, and under no live lease; returns False (nothing written) when it moved meanwhile."""
    reason = StateReason.RETENTION_DELETED
    words = retention.content_deleted(source_id=send_id, kind=retention.ContentKind.SEALED_BODY.value,
                                      purged_at=now).what
    done = conn.execute(update(send_manifests).where(_unmoved(send_id, before, now))
                        .values(state=SendState.WITHHELD.value, state_reason=reason.value, state_at=now,
                                last_error=words, lease_until=None, claim_token=None))
    if done.rowcount != 1:
        return False
    conn.execute(update(send_recipients)
                 .where(send_recipients.c.manifest_id == send_id, send_recipients.c.submission_state.in_(NOT_YET_LEFT))
                 .values(submission_state=SendState.WITHHELD.value, submission_state_at=now))
    approval_cancelled = approvals.cancel_pending(conn, kind=approvals.SubjectKind.SEND_MANIFEST, subject_id=send_id,
                                                  now=now)
    # A Butler run parked on this send's release ends with it (``sweep_org`` tells its workflow).
    ended = hooks.END_PARKED_RUN(conn, org_id=org_id, send_id=send_id, send_state=SendState.WITHHELD.value,
                                 at=now)
    audit.append(conn, org_id=org_id, at=now, action="send.withheld", actor_id=None, subject=send_id,
                 outcome="refused", detail={"reason": reason.value, "from": before, "retention": retention_reason,
                                            "approval_cancelled": approval_cancelled, "evidence": words,
                                            **({"run_stopped": ended.run_id} if ended is not None else {})})
    return True


def _send_still_as_read(conn: Connection, *, send_id: str, before: str, now: datetime) -> bool:
    """Whether a send whose body is deleted without ending it (``outcome_unknown``, terminal) is still in
    ``before`` under no live lease (``_unmoved``); the row is locked (``FOR UPDATE``, PostgreSQL) until
    the purge commits, so a claim or a retry waits for it and then meets the purge."""
    return conn.execute(select(send_manifests.c.id).where(_unmoved(send_id, before, now))
                        .with_for_update()).first() is not None


class PurgeOutcome(StrEnum):
    """What ``_purge`` did with one chosen row."""

    PURGED = "purged"  # the content is deleted; no send is ended
    WITHHELD = "withheld"  # the content is deleted and its send, which had not left, is withheld
    RACED = "raced"  # nothing: the ledger row or its send moved between the scan and the write


def _purge(conn: Connection, *, org_id: str, row: Any, send: Any, now: datetime,
           retention_reason: str) -> PurgeOutcome:
    """Delete one chosen ledger row's content as the scan read it (``row``: its ``retained_content`` row;
    ``send``: ``(id, state, lease_until)`` of its send, or None), all or nothing.

    In one savepoint: the ledger ``UPDATE`` first (guarded ``purged_at IS NULL``: another sweep may have
    purged it), then the send's guard (``_unmoved``: the state the scan read, no live lease), ending the
    send when ``retention.purge_ends_send`` says so, then the message's derived content and the
    ``retention.deleted`` audit. When either guard misses the savepoint is rolled back, so a send is
    never withheld (nor audited) for a purge that did not happen, and the row is ``RACED`` only.
    """
    sid = str(row.source_id)
    ends = send is not None and retention.purge_ends_send(row.kind, send.state)
    with conn.begin_nested() as pair:
        done = conn.execute(update(retained_content).where(rc.source_id == sid, rc.purged_at.is_(None))
                            .values(digests=None, purged_at=now))
        if done.rowcount != 1:
            pair.rollback()
            return PurgeOutcome.RACED
        if send is not None:
            kept = (_end_send(conn, org_id=org_id, send_id=sid, before=send.state, now=now,
                              retention_reason=retention_reason) if ends
                    else _send_still_as_read(conn, send_id=sid, before=send.state, now=now))
            if not kept:
                pair.rollback()
                return PurgeOutcome.RACED
        if row.kind == retention.ContentKind.INBOUND_RAW.value:
            _clear_message(conn, sid)
        # The search index holds the words of the content: they go with it (issue 15).
        search_index.forget(conn, [sid])
        audit.append(conn, org_id=org_id, at=now, action="retention.deleted", actor_id=None, subject=sid,
                     detail={"kind": row.kind, "reason": retention_reason, "created_at": row.created_at.isoformat()})
    return PurgeOutcome.WITHHELD if ends else PurgeOutcome.PURGED


@dataclass(frozen=True)
class Scan:
    """What ``scan`` read and decided for one organisation, for ``write`` to carry out.

    Attributes:
        rows: the scanned ``retained_content`` rows by ``source_id``.
        sends: ``(id, state, lease_until)`` of the scanned sealed bodies' sends, by id.
        hold_rows: the organisation's holds in force.
        page: ``retention.page_deletions``' answer (what to delete, what a hold blocked, the cursor).
        reasons: the deciding ``RetentionReason`` value per scanned id.
    """

    rows: dict[str, Any]
    sends: dict[str, Any]
    hold_rows: Sequence[Any]
    page: retention.DeletionPage[tuple[datetime, str], str]
    reasons: dict[str, str]


@dataclass(frozen=True)
class Written:
    """What ``write`` did: ids ``purged`` (in page order), the ``withheld`` sends among them, the ``raced``
    ids (disjoint from both), and the blob digests the purged rows named (removed after the commit)."""

    purged: tuple[str, ...]
    withheld: tuple[str, ...]
    raced: tuple[str, ...]
    digests: frozenset[str]


def scan(conn: Connection, *, org_id: str, now: datetime, scan_max: int = budgets.RETENTION_SCAN_WINDOW_MAX,
         batch_max: int = budgets.RETENTION_DELETE_BATCH_MAX) -> Scan:
    """Read at most ``scan_max`` unpurged ledger rows after the cursor, their sends and the holds, and
    decide each (``retention.decide``, ``retention.page_deletions``). Reads only."""
    settings = settings_for(conn, org_id)
    cursor = _cursor(conn, org_id)
    q = select(retained_content).where(rc.org_id == org_id, rc.purged_at.is_(None))
    if cursor is not None:
        q = q.where(or_(rc.created_at > cursor[0], and_(rc.created_at == cursor[0], rc.source_id > cursor[1])))
    rows = conn.execute(q.order_by(rc.created_at, rc.source_id).limit(scan_max)).all()
    hold_rows = conn.execute(select(holds).where(holds.c.org_id == org_id, holds.c.lifted_at.is_(None))).all()
    send_ids = [r.source_id for r in rows if r.kind == retention.ContentKind.SEALED_BODY.value]
    m = send_manifests.c
    sends = {r.id: r for r in conn.execute(select(m.id, m.state, m.lease_until)
                                            .where(m.id.in_(send_ids))).all()} if send_ids else {}

    def facts(r: Any) -> retention.RetentionFacts:
        send = sends.get(r.source_id)
        return retention.RetentionFacts(
            kind=r.kind, created_at=r.created_at, under_hold=_covered(hold_rows, r.mailbox_id, r.created_at),
            send_pending=send is not None and retention.send_pending(send.state),
            send_in_flight=send is not None and retention.lease_live(send.lease_until, now),
            retain_until=r.retain_until)

    candidates = [retention.Candidate((utc(r.created_at), str(r.source_id)), str(r.source_id),
                                      retention.decide(facts(r), now, settings)) for r in rows]
    page = retention.page_deletions(candidates, scan_complete=len(rows) < scan_max, batch_max=batch_max)
    return Scan({str(r.source_id): r for r in rows}, sends, hold_rows, page,
                {c.row_id: c.decision.reason.value for c in candidates})


def write(conn: Connection, scanned: Scan, *, org_id: str, now: datetime) -> Written:
    """Carry out a ``scan``: ``_purge`` each chosen row (each all or nothing, guarded against what moved
    since the scan), audit a hold-blocked row ``hold.blocked`` once per hold episode (the set of holds
    covering it, recorded in ``hold_blocked_by``), and store the cursor."""
    purged: list[str] = []
    withheld: list[str] = []
    raced: list[str] = []
    digests: set[str] = set()
    for sid in scanned.page.delete:
        row = scanned.rows[sid]
        outcome = _purge(conn, org_id=org_id, row=row, send=scanned.sends.get(sid), now=now,
                         retention_reason=scanned.reasons[sid])
        if outcome is PurgeOutcome.RACED:
            raced.append(sid)
            continue
        if outcome is PurgeOutcome.WITHHELD:
            withheld.append(sid)
        purged.append(sid)
        digests.update(row.digests or [])
    for sid in scanned.page.hold_blocked:
        row = scanned.rows[sid]
        ids = sorted(h.id for h in scanned.hold_rows if _covered([h], row.mailbox_id, row.created_at))
        # Once per row per hold episode, not on every pass (``retention.hold_blocked_audit_due``).
        if not retention.hold_blocked_audit_due(row.hold_blocked_by, ids):
            continue
        conn.execute(update(retained_content).where(rc.source_id == sid).values(hold_blocked_by=ids))
        audit.append(conn, org_id=org_id, at=now, action="hold.blocked", actor_id=None, subject=sid,
                     outcome="refused", detail={"hold_ids": ids, "act": "retention.delete", "kind": row.kind})
    _save_cursor(conn, org_id, scanned.page.next_cursor)
    return Written(tuple(purged), tuple(withheld), tuple(raced), frozenset(digests))


def sweep_org(node: Node, *, org_id: str, now: datetime, scan_max: int = budgets.RETENTION_SCAN_WINDOW_MAX,
              batch_max: int = budgets.RETENTION_DELETE_BATCH_MAX) -> SweepReport:
    """One deletion pass over one organisation's ledger: ``scan`` then ``write`` in one transaction, then
    the blobs.

    Each purge clears the message's derived content or ends the send that had not left (see the module
    docstring) in the same savepoint as ``purged_at``. A send under a live lease is retained
    (``RetentionFacts.send_in_flight``); a row whose ledger or send moved after the scan is ``raced``.
    A Butler run parked on a withheld send was ended in the purge's transaction; its workflow is told after
    the commit (``butler.parked``, through ``hooks.TELL_PARKED_RUNS``).
    """
    with node.begin() as conn:
        scanned = scan(conn, org_id=org_id, now=now, scan_max=scan_max, batch_max=batch_max)
        written = write(conn, scanned, org_id=org_id, now=now)
    hooks.TELL_PARKED_RUNS(node, org_id, written.withheld)
    removed = 0
    for digest in sorted(written.digests):
        with node.read() as conn:
            if node.evidence.delete(digest, referenced=lambda d: referenced(conn, d)):
                removed += 1
    return SweepReport(scanned.page.examined, written.purged, scanned.page.hold_blocked, removed,
                       scanned.page.next_cursor, written.withheld, written.raced)


@dataclass(frozen=True)
class PassReport:
    """A retention pass over every organisation: rows enrolled and each organisation's sweep."""

    enrolled: int
    sweeps: dict[str, SweepReport]


def run_pass(node: Node, now: datetime) -> PassReport:
    """Enrol new content and run one deletion pass for every organisation. Reads no provider state, so it
    runs before (and regardless of) the provider-breaker check."""
    with node.read() as conn:
        org_ids = [r.id for r in conn.execute(select(organisations.c.id).order_by(organisations.c.id)).all()]
    enrolled = 0
    sweeps: dict[str, SweepReport] = {}
    for org_id in org_ids:
        with node.begin() as conn:
            enrolled += enrol(conn, org_id=org_id)
        sweeps[org_id] = sweep_org(node, org_id=org_id, now=now)
    return PassReport(enrolled, sweeps)


def ledger_counts(conn: Connection, *, org_id: str) -> dict[str, int]:
    """``{"retained": n, "purged": n}`` for an organisation (doctor and tests)."""
    rows = conn.execute(select(rc.purged_at.is_(None).label("live"), func.count())
                        .where(rc.org_id == org_id).group_by(rc.purged_at.is_(None))).all()
    out = {"retained": 0, "purged": 0}
    for live, n in rows:
        out["retained" if live else "purged"] = int(n)
    return out
