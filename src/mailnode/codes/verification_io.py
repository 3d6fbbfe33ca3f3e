"""Verification codes for a person's contact address: the I/O around ``codes.verification`` (spec §4).

``request_code``: the provider breaker (realtime class), the person's daily cap (``codes_today``: their
``contact_email.code_requested`` audit entries this UTC day) and the cooldown are read before anything is
minted, written or armed (a shut breaker costs zero provider requests and answers the vague 503; the cap
answers 429 ``E_VERIFICATION_DAILY_CAP`` with ``detail.resets_at``); then
the contact address and the record (a keyed hash of the code) are written, and the code is sent as
realtime system mail and awaited (``outbound.realtime.send_realtime``). A failed send keeps the record as a
cooldown with its code cleared (``after_send_failed``) and answers the vague 503.

``verify_code``: ``verification.verify`` decides; its record is written (or deleted on success) and the
attempt it spent is committed before a refusal is raised. The address is marked verified only if it is
still the person's contact address. ``contact_json`` is what ``GET /api/me`` shows.

Concurrency: both write transactions first lock the person's ``users`` row (``lock_person``; ``FOR
UPDATE`` on PostgreSQL, the ``BEGIN IMMEDIATE`` write lock on SQLite) and decide on the record read under
that lock. So requests fired in parallel cannot each pass the cooldown (one code, one provider request)
nor the daily cap (the count is read under the lock, and the entry it counts is written in that transaction),
and guesses fired in parallel cannot each spend the same attempt (at most ``max_attempts`` guesses per code).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from mailnode import audit, budgets
from mailnode.audit import audit_entries
from mailnode.codes.verification import (
    RequestDecision,
    RequestOutcome,
    VerificationRecord,
    VerifyOutcome,
    after_send_failed,
    error_for,
    issue,
    may_request,
    mint_code,
    utc_day_bounds,
    verify,
)
from mailnode.directory.people import require_person
from mailnode.directory.secret import node_secret
from mailnode.errors import MailnodeError
from mailnode.governance import provider_io
from mailnode.node import Node
from mailnode.outbound.realtime import send_realtime, system_sender
from mailnode.schema.directory import users
from mailnode.schema.directory_contacts import contact_addresses, verification_records

#: The audit action a code request writes (under the person's lock, before the send); the daily cap counts it.
CODE_REQUESTED = "contact_email.code_requested"
from mailnode.addresses import normalise_address
from mailnode.outbound.seal import SealRequest


def lock_person(conn: Connection, user_id: str) -> None:
    """Lock the person's ``users`` row for the rest of this write transaction (``FOR UPDATE`` on PostgreSQL;
    on SQLite the write transaction's ``BEGIN IMMEDIATE`` already serialises writers). The row always exists,
    unlike the verification record, so the first request of a person is serialised too."""
    conn.execute(select(users.c.id).where(users.c.id == user_id).with_for_update())


def read_record(conn: Connection, user_id: str, table: Table = verification_records) -> VerificationRecord | None:
    """The person's code record in ``table`` (contact-address codes by default; ``signin_codes`` shares the
    shape), or None."""
    row = conn.execute(select(table).where(table.c.user_id == user_id)).first()
    if row is None:
        return None
    return VerificationRecord(user_id=row.user_id, address=row.address, code_hash=row.code_hash,
                              sent_at=row.sent_at, expires_at=row.expires_at, attempts=int(row.attempts))


def codes_today(conn: Connection, org_id: str, user_id: str, now: datetime, action: str = CODE_REQUESTED) -> int:
    """The person's code requests in the UTC day holding ``now`` (``action`` audit entries they wrote, sent
    or not; contact-address codes by default). One statement, on ``ix_audit_entries_action`` (org, action,
    at)."""
    start, end = utc_day_bounds(now)
    a = audit_entries.c
    return int(conn.execute(select(func.count()).select_from(audit_entries).where(
        a.org_id == org_id, a.action == action, a.at >= start, a.at < end,
        a.actor_id == user_id)).scalar_one())


def write_record(conn: Connection, org_id: str, record: VerificationRecord, send_id: str | None = None,
                 table: Table = verification_records) -> None:
    """Insert or replace the person's record in ``table`` (one per person; contact-address codes by
    default)."""
    values = {"org_id": org_id, "address": record.address, "code_hash": record.code_hash,
              "sent_at": record.sent_at, "expires_at": record.expires_at, "attempts": record.attempts,
              "send_id": send_id}
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = insert(table).values(user_id=record.user_id, **values)
    conn.execute(stmt.on_conflict_do_update(index_elements=["user_id"], set_=values))


def _set_contact(conn: Connection, org_id: str, user_id: str, address: str, now: datetime) -> None:
    row = conn.execute(select(contact_addresses).where(contact_addresses.c.user_id == user_id)).first()
    if row is None:
        conn.execute(contact_addresses.insert().values(user_id=user_id, org_id=org_id, address=address,
                                                       verified=False, verified_at=None, updated_at=now))
    elif row.address != address:
        conn.execute(update(contact_addresses).where(contact_addresses.c.user_id == user_id)
                     .values(address=address, verified=False, verified_at=None, updated_at=now))


def contact_json(conn: Connection, user_id: str) -> dict[str, Any]:
    """``{"contact_email": address or None, "contact_email_verified": bool}`` for ``GET /api/me``."""
    row = conn.execute(select(contact_addresses).where(contact_addresses.c.user_id == user_id)).first()
    if row is None:
        return {"contact_email": None, "contact_email_verified": False}
    return {"contact_email": row.address, "contact_email_verified": bool(row.verified)}


def request_code(node: Node, *, org_id: str, user_id: str, address: str) -> dict[str, Any]:
    """Set ``address`` as the person's contact address and send it a code (realtime, awaited).

    Raises ``E_NOT_A_PERSON`` (403), the address errors (422), ``E_VERIFICATION_UNAVAILABLE`` (503, vague:
    the breaker refuses realtime mail, or the send failed), ``E_VERIFICATION_DAILY_CAP`` (429, with
    ``detail.resets_at`` ISO 8601 UTC and ``retry_after_seconds``) and ``E_VERIFICATION_COOLDOWN`` (429).
    """
    require_person(user_id, "have a contact address")
    normalised = normalise_address(address, "address").address
    now = node.clock.now()
    limits = provider_io.limits_of(node.settings)
    with node.read() as conn:
        record = read_record(conn, user_id)
        status = provider_io.read_status(conn, node.settings.transport)
        sender = system_sender(conn, org_id, node.settings)
        count = codes_today(conn, org_id, user_id, now)
    decision = may_request(record, status, now, limits=limits, codes_today=count)
    provider_io.emit(decision.logs)
    _refuse_unless_allowed(decision, count)
    code = mint_code()
    issued = issue(user_id, normalised, code, now, secret=node_secret(node.settings))
    with node.begin() as conn:
        # Decide again on the record and the count read under the person's lock: a parallel request may
        # have armed the cooldown or spent the day's last code since the read above (its logs were
        # emitted once, above).
        lock_person(conn, user_id)
        locked_count = codes_today(conn, org_id, user_id, now)
        again = may_request(read_record(conn, user_id), status, now, limits=limits, codes_today=locked_count)
        _refuse_unless_allowed(again, locked_count)
        _set_contact(conn, org_id, user_id, normalised, now)
        write_record(conn, org_id, issued)
        audit.append(conn, org_id=org_id, at=now, action=CODE_REQUESTED, actor_id=user_id,
                     subject=user_id, detail={"address": normalised})
    request = SealRequest(mailbox_id=sender.mailbox_id, to=[normalised], subject="Your verification code",
                          body=f"Your verification code is {code}. It expires in 24 hours.",
                          sender_address=sender.address, system=True)
    try:
        sealed = send_realtime(node, org_id=org_id, author_id=user_id, request=request)
    except MailnodeError as exc:
        # The record stays as the cooldown, its code cleared: nobody received it (spec §4).
        with node.begin() as conn:
            write_record(conn, org_id, after_send_failed(issued), exc.detail.get("send_id"))
        if exc.code == "E_SEND_UNAVAILABLE":
            unavailable = error_for(RequestOutcome.PROVIDER_UNAVAILABLE)
            if unavailable is not None:
                raise unavailable from exc
        raise
    with node.begin() as conn:
        conn.execute(update(verification_records).where(verification_records.c.user_id == user_id)
                     .values(send_id=sealed.id))
    return {"contact_email": {"address": normalised, "verified": False, "code_sent": True,
                              "expires_at": issued.expires_at.isoformat() if issued.expires_at else None}}


def _refuse_unless_allowed(decision: RequestDecision, count: int) -> None:
    """Raise the decision's error: ``retry_after_seconds`` in its detail when there is one; for the daily
    cap also ``resets_at`` (ISO 8601 UTC), ``limit_name``, ``limit`` and ``observed`` (``count``)."""
    if decision.outcome is RequestOutcome.ALLOWED:
        return
    detail: dict[str, Any] = {}
    if decision.retry_after_seconds is not None:
        detail["retry_after_seconds"] = decision.retry_after_seconds
    if decision.outcome is RequestOutcome.DAILY_CAP:
        detail.update(resets_at=decision.resets_at.isoformat() if decision.resets_at else None,
                      limit_name="VERIFICATION_CODES_PER_PERSON_PER_DAY",
                      limit=budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY, observed=count)
    error = error_for(decision.outcome, **detail)
    if error is not None:
        raise error


def already_verified(address: str) -> MailnodeError:
    """The 409 ``E_CONTACT_EMAIL_ALREADY_VERIFIED``: no code is outstanding because the address is verified."""
    return MailnodeError(code="E_CONTACT_EMAIL_ALREADY_VERIFIED", what=f"{address} is already verified.",
                         why="Its code was used; no code is outstanding, so there is nothing to check.",
                         fix="Nothing to do. To use another address, POST /api/me/contact-email {address}.",
                         status=409, detail={"address": address})


def verify_code(node: Node, *, org_id: str, user_id: str, code: str) -> dict[str, Any]:
    """Check ``code``; on success the contact address is verified (if it is still the contact address).

    Raises ``E_NOT_A_PERSON`` (403), ``E_VERIFICATION_CODE_WRONG`` / ``_EXPIRED`` / ``_ATTEMPTS_EXHAUSTED``
    (422), ``E_VERIFICATION_REQUEST_NEW`` (409) and, when no code is outstanding because the address is
    verified already, ``E_CONTACT_EMAIL_ALREADY_VERIFIED`` (409); each after the record's new state is committed.
    """
    require_person(user_id, "have a contact address")
    now = node.clock.now()
    with node.begin() as conn:
        lock_person(conn, user_id)
        record = read_record(conn, user_id)
        result = verify(record, code, now, secret=node_secret(node.settings))
        if result.outcome is VerifyOutcome.VERIFIED:
            conn.execute(delete(verification_records).where(verification_records.c.user_id == user_id))
            conn.execute(update(contact_addresses).where(contact_addresses.c.user_id == user_id,
                                                         contact_addresses.c.address == result.verified_address)
                         .values(verified=True, verified_at=now, updated_at=now))
            audit.append(conn, org_id=org_id, at=now, action="contact_email.verified", actor_id=user_id,
                         subject=user_id, detail={"address": result.verified_address})
            contact = contact_json(conn, user_id)
        elif result.outcome is not VerifyOutcome.REQUEST_NEW and result.record is not None:
            write_record(conn, org_id, result.record)
        elif result.outcome is VerifyOutcome.REQUEST_NEW and record is None:
            current = contact_json(conn, user_id)
            if current["contact_email_verified"]:
                raise already_verified(str(current["contact_email"]))
    error = error_for(result.outcome, attempts_left=result.attempts_left)
    if error is not None:
        raise error
    return {"contact_email": {"address": contact["contact_email"], "verified": contact["contact_email_verified"]}}
