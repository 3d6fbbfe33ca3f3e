"""The append-only, per-organisation hash-chained audit trail.

An entry is written in the same transaction as the state change it records, so a record exists if and
only if the act happened. Each entry's ``hash`` is ``sha256_hex(prev_hash + canonical)`` where
``canonical`` joins ``seq, at, actor_id, actor_kind, action, subject, outcome, detail`` with U+001F
(the genesis ``prev_hash`` is 64 zeros). ``seq`` is unique per organisation (``uq_audit_entries_org_seq``).

Appends serialise per organisation instead of racing for the tip: the appending transaction reads the
tip only once it holds the organisation's chain lock, which it keeps until it commits or rolls back, so
no other writer can take the same ``seq`` and an append never fails under concurrency.

- PostgreSQL: ``pg_advisory_xact_lock(chain_lock_key(org_id))`` before the tip is read (a separate
  statement, so the tip read's READ COMMITTED snapshot is taken after the lock is granted), once per
  transaction and organisation. Like SQLite's ``BEGIN IMMEDIATE`` it is transaction control, not counted
  by the statement meter (``db.meter``), so statement budgets read the same on both databases. Different
  organisations never wait for each other.
- SQLite: writers are already serialised by ``BEGIN IMMEDIATE`` (``db.engine``): the write lock is taken
  when the transaction begins, so its tip read cannot be stale.

Deadlock-freedom: the chain lock is taken by the first append of a transaction, and appends come after
the rows they record are written, so a transaction holding the chain lock waits only for rows no other
appender locks first (its own rows, or new ones). A transaction must not, after its first append, update
a shared row that other transactions update before appending (doing so could deadlock, and PostgreSQL
would abort one of them with a deadlock error). The seal, dispatch and claim recovery keep the rule:
each transaction updates only its own send before an append, and after it only inserts.

``actor_kind`` is derived from the actor id: ``usr_`` user, ``btl_`` butler, ``app_`` application, none
node; ``installer`` is given explicitly by ``mailnode init``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from weakref import WeakKeyDictionary

from sqlalchemy import Column, Connection, ForeignKey, Index, Integer, String, Table, Text, func, select, text
from sqlalchemy.engine import RootTransaction

from mailnode import budgets
from mailnode.clock import utc
from mailnode.db.meta import UTCDateTime, metadata
from mailnode.errors import MailnodeError
from mailnode.ids import new_id, prefix_of

ActorKind = Literal["user", "butler", "application", "node", "installer"]
Outcome = Literal["ok", "refused", "failed"]
GENESIS = "0" * 64

audit_entries = Table(
    "audit_entries",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("actor_id", String(80), nullable=True),
    Column("actor_kind", String(20), nullable=False),
    Column("action", String(60), nullable=False),
    Column("subject", Text, nullable=True),
    Column("outcome", String(10), nullable=False),
    Column("detail", Text, nullable=True),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    Index("uq_audit_entries_org_seq", "org_id", "seq", unique=True),
    Index("ix_audit_entries_action", "org_id", "action", "at"),
)

_ACTOR_KIND_BY_PREFIX: dict[str, ActorKind] = {"usr": "user", "btl": "butler", "app": "application"}


def actor_kind_of(actor_id: str | None) -> ActorKind:
    """The actor kind an id implies: usr_ user, btl_ butler, app_ application, None node.

    Raises ``E_ACTOR_UNKNOWN`` (500) for an id of any other kind: an audit entry must not guess.
    """
    if actor_id is None:
        return "node"
    kind = _ACTOR_KIND_BY_PREFIX.get(prefix_of(actor_id) or "")
    if kind is None:
        raise MailnodeError(
            code="E_ACTOR_UNKNOWN",
            what=f"{actor_id!r} is not an id that can act.",
            why="Audit entries name a user, a Butler, an application or the node.",
            fix="This is a defect in mailnode; report it with the id.",
            status=500,
            detail={"actor_id": actor_id},
        )
    return kind


def _detail_text(detail: dict[str, Any] | None) -> str | None:
    if detail is None:
        return None
    text = json.dumps(detail, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    if len(text.encode("utf-8")) > budgets.AUDIT_MAX_DETAIL_BYTES:
        text = json.dumps(
            {"truncated": True, "original_bytes": len(text.encode("utf-8")), "keys": sorted(detail)[:20]},
            sort_keys=True,
            separators=(",", ":"),
        )
    return text


def _at_text(at: datetime) -> str:
    return utc(at).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def entry_hash(prev_hash: str, seq: int, at: datetime, actor_id: str | None, actor_kind: str, action: str,
               subject: str | None, outcome: str, detail: str | None) -> str:
    """The chain hash of one entry (hex SHA-256 of ``prev_hash`` + the U+001F-joined canonical fields)."""
    canonical = "\x1f".join(
        [str(seq), _at_text(at), actor_id or "", actor_kind, action, subject or "", outcome, detail or ""]
    )
    return hashlib.sha256((prev_hash + canonical).encode("utf-8")).hexdigest()


def chain_lock_key(org_id: str) -> int:
    """The PostgreSQL advisory lock key of ``org_id``'s chain: the first 8 bytes of
    ``sha256("mailnode.audit:" + org_id)`` as a signed 64-bit integer (``pg_advisory_xact_lock(bigint)``). Pure."""
    digest = hashlib.sha256(f"mailnode.audit:{org_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


#: The organisations whose chain lock each open transaction holds (PostgreSQL), so a transaction that
#: appends several entries asks for the lock once. Keyed weakly on the root transaction: the entry goes
#: with the transaction, and the lock with its end.
_CHAIN_LOCKS_HELD: WeakKeyDictionary[RootTransaction, set[str]] = WeakKeyDictionary()


def lock_chain(conn: Connection, org_id: str) -> None:
    """Hold ``org_id``'s chain lock until the caller's transaction ends (see the module docstring).

    PostgreSQL: one ``pg_advisory_xact_lock`` statement, the first time in a transaction (a connection
    without one begins it, as any statement would); SQLite: none (``BEGIN IMMEDIATE`` already made this
    transaction the only writer).
    """
    if conn.dialect.name != "postgresql":
        return
    txn = conn.get_transaction()
    if txn is not None and org_id in _CHAIN_LOCKS_HELD.get(txn, ()):
        return
    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": chain_lock_key(org_id)})
    txn = conn.get_transaction()
    if txn is not None:
        _CHAIN_LOCKS_HELD.setdefault(txn, set()).add(org_id)


def _locked_tip(conn: Connection, org_id: str) -> tuple[int, str]:
    """Take the organisation's chain lock (``lock_chain``), then read its tip: ``(seq, hash)`` of the last
    entry, ``(0, GENESIS)`` for an empty chain (1 statement, and the lock on PostgreSQL)."""
    lock_chain(conn, org_id)
    tip = conn.execute(
        select(audit_entries.c.seq, audit_entries.c.hash)
        .where(audit_entries.c.org_id == org_id)
        .order_by(audit_entries.c.seq.desc())
        .limit(1)
    ).first()
    return (int(tip.seq), str(tip.hash)) if tip else (0, GENESIS)


def append(
    conn: Connection,
    *,
    org_id: str,
    at: datetime,
    action: str,
    actor_id: str | None,
    subject: str | None = None,
    outcome: Outcome = "ok",
    detail: dict[str, Any] | None = None,
    actor_kind: ActorKind | None = None,
) -> str:
    """Append one entry inside the caller's transaction and return its id.

    Takes the organisation's chain lock first (``lock_chain``), then reads the tip and inserts: 2
    statements (and the lock, on PostgreSQL, once per transaction). Never fails because another writer
    appended concurrently; a failure of the insert itself (the database's error) propagates and the
    caller's transaction rolls back, so the act does not happen without its record.
    """
    kind = actor_kind or actor_kind_of(actor_id)
    detail_text = _detail_text(detail)
    last, prev = _locked_tip(conn, org_id)
    seq = last + 1
    entry_id = new_id("aud")
    conn.execute(audit_entries.insert().values(
        id=entry_id, org_id=org_id, seq=seq, at=at, actor_id=actor_id, actor_kind=kind, action=action,
        subject=subject, outcome=outcome, detail=detail_text, prev_hash=prev,
        hash=entry_hash(prev, seq, at, actor_id, kind, action, subject, outcome, detail_text),
    ))
    return entry_id


@dataclass(frozen=True)
class Entry:
    """One entry for ``append_many``: the fields ``append`` takes, the organisation given once."""

    at: datetime
    action: str
    actor_id: str | None
    subject: str | None = None
    outcome: Outcome = "ok"
    detail: dict[str, Any] | None = None
    actor_kind: ActorKind | None = None


def append_many(conn: Connection, *, org_id: str, entries: list[Entry]) -> list[str]:
    """Append ``entries`` to ``org_id``'s chain in order, inside the caller's transaction; returns their ids.

    The same chain as that many ``append`` calls (each entry's ``prev_hash`` the one before it), in 2
    statements whatever their number (the tip read once, one multi-row insert; the chain lock on
    PostgreSQL once per transaction). Nothing is written for an empty list. The dispatch batch writes its
    sends' ``send.<state>`` entries with it (issue 19).
    """
    if not entries:
        return []
    seq, prev = _locked_tip(conn, org_id)
    rows: list[dict[str, Any]] = []
    for e in entries:
        seq += 1
        kind = e.actor_kind or actor_kind_of(e.actor_id)
        detail_text = _detail_text(e.detail)
        digest = entry_hash(prev, seq, e.at, e.actor_id, kind, e.action, e.subject, e.outcome, detail_text)
        rows.append({"id": new_id("aud"), "org_id": org_id, "seq": seq, "at": e.at, "actor_id": e.actor_id,
                     "actor_kind": kind, "action": e.action, "subject": e.subject, "outcome": e.outcome,
                     "detail": detail_text, "prev_hash": prev, "hash": digest})
        prev = digest
    conn.execute(audit_entries.insert(), rows)
    return [r["id"] for r in rows]


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of a chain check: ``checked`` rows, ``intact``, and the first broken link if any."""

    checked: int
    intact: bool
    broken_seq: int | None = None
    broken_id: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        broken = None
        if not self.intact:
            broken = {"seq": self.broken_seq, "id": self.broken_id, "reason": self.reason}
        return {"checked": self.checked, "intact": self.intact, "broken_at": broken}


def verify(conn: Connection, org_id: str) -> VerifyResult:
    """Walk the organisation's chain in pages of ``budgets.AUDIT_VERIFY_BATCH`` and report the first break.

    A break is a gap in ``seq``, a ``prev_hash`` that is not the previous entry's hash, or a ``hash``
    that does not match the entry's fields (a tampered row).
    """
    prev_hash = GENESIS
    expected_seq = 1
    checked = 0
    last_seq = 0
    while True:
        rows = conn.execute(
            select(audit_entries)
            .where(audit_entries.c.org_id == org_id, audit_entries.c.seq > last_seq)
            .order_by(audit_entries.c.seq)
            .limit(budgets.AUDIT_VERIFY_BATCH)
        ).all()
        if not rows:
            return VerifyResult(checked=checked, intact=True)
        for r in rows:
            reason = None
            if r.seq != expected_seq:
                reason = f"sequence gap: expected {expected_seq}"
            elif r.prev_hash != prev_hash:
                reason = "prev_hash does not match the previous entry's hash"
            elif r.hash != entry_hash(r.prev_hash, r.seq, r.at, r.actor_id, r.actor_kind, r.action,
                                      r.subject, r.outcome, r.detail):
                reason = "hash does not match the entry's fields (the row was changed)"
            if reason:
                return VerifyResult(checked=checked, intact=False, broken_seq=r.seq, broken_id=r.id,
                                    reason=reason)
            checked += 1
            prev_hash = r.hash
            expected_seq += 1
            last_seq = r.seq


#: The action a recorded chain check is appended under (``record_verification``).
VERIFIED_ACTION = "audit.verified"


def record_verification(conn: Connection, org_id: str, result: VerifyResult, *, actor_id: str | None,
                        now: datetime) -> None:
    """Append ``verify``'s verdict as ``audit.verified`` (detail: ``checked``, ``intact``, ``broken_seq``) in the
    caller's write transaction, so the last verdict can be shown without walking the chain again
    (``last_verification``). Walk the chain in a read transaction first and record after: a walk inside the
    write transaction would hold SQLite's write lock (and with it every receipt and hand-over) for the whole
    walk. ``actor_id`` None is the installer at the data directory (the CLI). Entries appended between the
    walk and the record are not among the ``checked`` rows."""
    append(conn, org_id=org_id, at=now, action=VERIFIED_ACTION, actor_id=actor_id, subject=org_id,
           outcome="ok" if result.intact else "failed",
           detail={"checked": result.checked, "intact": result.intact, "broken_seq": result.broken_seq},
           actor_kind="installer" if actor_id is None else None)


@dataclass(frozen=True)
class LastVerification:
    """The newest recorded chain check: when (aware UTC), by whom, and its verdict."""

    at: datetime
    actor_id: str | None
    actor_kind: str
    checked: int
    intact: bool
    broken_seq: int | None


def last_verification(conn: Connection, org_id: str) -> LastVerification | None:
    """The newest ``audit.verified`` entry of ``org_id``, or None when the chain was never checked through
    ``record_verification``. One statement (an index seek on ``ix_audit_entries_action``); walks nothing."""
    t = audit_entries
    row = conn.execute(select(t.c.at, t.c.actor_id, t.c.actor_kind, t.c.detail)
                       .where(t.c.org_id == org_id, t.c.action == VERIFIED_ACTION)
                       .order_by(t.c.at.desc(), t.c.seq.desc()).limit(1)).first()
    if row is None:
        return None
    detail = json.loads(row.detail) if row.detail else {}
    return LastVerification(at=utc(row.at), actor_id=row.actor_id, actor_kind=row.actor_kind,
                            checked=int(detail.get("checked", 0)), intact=bool(detail.get("intact", False)),
                            broken_seq=detail.get("broken_seq"))


def chain_length(conn: Connection, org_id: str) -> int:
    """How many entries ``org_id``'s chain holds (its highest ``seq``; 0 when empty). One statement, an index
    seek on ``uq_audit_entries_org_seq``: it walks nothing and says nothing about whether the chain holds."""
    found = conn.execute(select(func.max(audit_entries.c.seq)).where(audit_entries.c.org_id == org_id)).scalar()
    return int(found or 0)
