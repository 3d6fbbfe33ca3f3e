"""One-time sign-in codes for the web inbox, mailed to a person's verified contact address (issue 16).

The same rules and mail path as contact-address verification codes (``directory.verification``, pure, and
``outbound.realtime.send_realtime``): the provider breaker for the realtime class, the person's daily cap
(their ``web.signin_code_requested`` audit entries this UTC day against
``budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY``) and the cooldown are read before anything is minted or
written; a shut breaker costs no provider request and answers the vague 503 (``VAGUE_UNAVAILABLE_MESSAGE``);
the record holds a keyed hash of the code, never the code; a failed send leaves a cooldown with its code
cleared. The record lives in ``signin_codes``, apart from ``verification_records``, so asking for a sign-in
code never replaces a pending contact-address code and a contact-address code never signs anyone in.

Who an address signs in: the person whose VERIFIED contact address it is (``person_for``). An address that
is nobody's verified contact address is told the same as one that is (``request`` returns None), so the
form does not disclose who works here; an address verified by several people is refused, since the code
could open only one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from mailnode import audit, budgets
from mailnode.directory import verification_io
from mailnode.directory.contact_tables import contact_addresses, signin_codes
from mailnode.directory.secret import node_secret
from mailnode.directory.verification import (
    VAGUE_UNAVAILABLE_MESSAGE,
    RequestOutcome,
    VerificationRecord,
    VerifyOutcome,
    after_send_failed,
    issue,
    may_request,
    mint_code,
    verify,
)
from mailnode.directory.verification_io import lock_person
from mailnode.errors import MailnodeError
from mailnode.governance import provider_io
from mailnode.node import Node
from mailnode.outbound.realtime import send_realtime, system_sender
from mailnode.outbound.seal import SealRequest

#: The audit action a code request writes (before the send); the daily cap counts it.
CODE_REQUESTED = "web.signin_code_requested"


@dataclass(frozen=True)
class Person:
    """Who a verified contact address belongs to."""

    org_id: str
    user_id: str
    address: str


def person_for(conn: Connection, address: str) -> Person | None:
    """The person whose verified contact address is ``address`` (compared case-insensitively), or None.
    Raises ``E_SIGNIN_ADDRESS_SHARED`` (409) when several people verified it."""
    rows = conn.execute(select(contact_addresses.c.org_id, contact_addresses.c.user_id, contact_addresses.c.address)
                        .where(func.lower(contact_addresses.c.address) == address.lower(),
                               contact_addresses.c.verified.is_(True)).limit(2)).all()
    if len(rows) > 1:
        raise MailnodeError(
            code="E_SIGNIN_ADDRESS_SHARED", what="That address is the verified contact address of more than "
            "one person, so a code mailed to it could not say whose sign-in it is.",
            why="A code signs in exactly one person.",
            fix="Sign in with your API token, then give yourself an address of your own (POST "
                "/api/me/contact-email).", status=409)
    if not rows:
        return None
    return Person(org_id=rows[0].org_id, user_id=rows[0].user_id, address=rows[0].address)


def read_record(conn: Connection, user_id: str) -> VerificationRecord | None:
    """The person's sign-in code record, or None (``verification_io.read_record`` on ``signin_codes``)."""
    return verification_io.read_record(conn, user_id, table=signin_codes)


def write_record(conn: Connection, org_id: str, record: VerificationRecord, send_id: str | None = None) -> None:
    """Insert or replace the person's sign-in code record (one per person)."""
    verification_io.write_record(conn, org_id, record, send_id, table=signin_codes)


def codes_today(conn: Connection, org_id: str, user_id: str, now: datetime) -> int:
    """The person's sign-in code requests in the UTC day holding ``now`` (one statement)."""
    return verification_io.codes_today(conn, org_id, user_id, now, action=CODE_REQUESTED)


#: The refusal of each outcome that is not a success: (code, status, what, why, fix). Total over
#: ``RequestOutcome`` and ``VerifyOutcome`` (a test checks it); None for the successes.
_REFUSALS: dict[RequestOutcome | VerifyOutcome, tuple[str, int, str, str, str] | None] = {
    RequestOutcome.ALLOWED: None,
    RequestOutcome.PROVIDER_UNAVAILABLE: (
        "E_SIGNIN_CODE_UNAVAILABLE", 503, VAGUE_UNAVAILABLE_MESSAGE, "Sending is unavailable for now.",
        "Try again in a little while, or sign in with your API token."),
    RequestOutcome.DAILY_CAP: (
        "E_SIGNIN_CODE_DAILY_CAP", 429,
        ("You have asked for as many sign-in codes today as one person may "
         f"(VERIFICATION_CODES_PER_PERSON_PER_DAY is {budgets.VERIFICATION_CODES_PER_PERSON_PER_DAY})."),
        "Each code spends one of the node's limited daily sends, so a person's codes are capped per day.",
        "Use the latest code you received, sign in with your API token, or ask again after 00:00 UTC."),
    RequestOutcome.COOLDOWN: (
        "E_SIGNIN_CODE_COOLDOWN", 429, "A code was asked for a moment ago.",
        f"Codes are at least VERIFICATION_COOLDOWN_SECONDS ({budgets.VERIFICATION_COOLDOWN_SECONDS} s) apart.",
        "Use the code in the latest message, or wait a minute and ask again."),
    VerifyOutcome.VERIFIED: None,
    VerifyOutcome.WRONG_CODE: (
        "E_SIGNIN_CODE_WRONG", 422, "That code does not match.",
        f"A code allows VERIFICATION_MAX_ATTEMPTS ({budgets.VERIFICATION_MAX_ATTEMPTS}) tries.",
        "Check the code in the latest message and type it again."),
    VerifyOutcome.ATTEMPTS_EXHAUSTED: (
        "E_SIGNIN_CODE_ATTEMPTS_EXHAUSTED", 422, "Too many wrong codes; this code no longer works.",
        f"A code allows VERIFICATION_MAX_ATTEMPTS ({budgets.VERIFICATION_MAX_ATTEMPTS}) tries.",
        "Ask for a new code."),
    VerifyOutcome.EXPIRED: (
        "E_SIGNIN_CODE_EXPIRED", 422, "This code has expired.",
        f"A code works for VERIFICATION_CODE_TTL_SECONDS ({budgets.VERIFICATION_CODE_TTL_SECONDS} s).",
        "Ask for a new code."),
    VerifyOutcome.REQUEST_NEW: (
        "E_SIGNIN_CODE_REQUEST_NEW", 409, "There is no code to check for that address.",
        "No code is outstanding: none was asked for, it was used, or its mail could not be sent.",
        "Ask for a new code."),
}


def refusal_for(outcome: RequestOutcome | VerifyOutcome, **detail: Any) -> MailnodeError | None:
    """The ``MailnodeError`` of a refusing outcome, None for ``allowed`` and ``verified`` (pure). The 503 is
    deliberately vague: it never says whether a quota, a key or a domain stopped the send."""
    entry = _REFUSALS[outcome]
    if entry is None:
        return None
    code, status, what, why, fix = entry
    return MailnodeError(code=code, what=what, why=why, fix=fix, status=status, detail=dict(detail))


def _refusal(outcome: RequestOutcome | VerifyOutcome) -> MailnodeError:
    """The refusal of an outcome that always refuses (``KeyError`` for a success: a programming error)."""
    refusal = refusal_for(outcome)
    if refusal is None:
        raise KeyError(f"{outcome} does not refuse")
    return refusal


def _refuse_unless_allowed(outcome: RequestOutcome, retry_after_seconds: int | None) -> None:
    detail = {} if retry_after_seconds is None else {"retry_after_seconds": retry_after_seconds}
    refusal = refusal_for(outcome, **detail)
    if refusal is not None:
        raise refusal


def breaker_refuses(node: Node) -> MailnodeError | None:
    """The vague 503 ``E_SIGNIN_CODE_UNAVAILABLE`` when the provider breaker refuses realtime mail now, else
    None. Asked before the address is looked up, so the refusal is the same for every address."""
    with node.read() as conn:
        status = provider_io.read_status(conn, node.settings.transport)
    decision = may_request(None, status, node.clock.now(), limits=provider_io.limits_of(node.settings))
    provider_io.emit(decision.logs)
    return _refusal(decision.outcome) if decision.outcome is RequestOutcome.PROVIDER_UNAVAILABLE else None


def request(node: Node, *, address: str) -> Person | None:
    """Mail a sign-in code to ``address`` when it is a person's verified contact address (realtime, awaited);
    the person, or None when it is nobody's (nothing is sent, and the caller says the same as when it is).

    Raises ``E_SIGNIN_CODE_UNAVAILABLE`` (503, vague: the breaker refuses realtime mail, or the send
    failed), ``E_SIGNIN_CODE_DAILY_CAP`` and ``E_SIGNIN_CODE_COOLDOWN`` (429), ``E_SIGNIN_ADDRESS_SHARED``
    (409)."""
    refused = breaker_refuses(node)
    if refused is not None:
        raise refused
    now = node.clock.now()
    limits = provider_io.limits_of(node.settings)
    with node.read() as conn:
        person = person_for(conn, address)
        if person is None:
            return None
        record = read_record(conn, person.user_id)
        status = provider_io.read_status(conn, node.settings.transport)
        sender = system_sender(conn, person.org_id, node.settings)
    decision = may_request(record, status, now, limits=limits,
                           codes_today=_count(node, person, now))
    _refuse_unless_allowed(decision.outcome, decision.retry_after_seconds)
    code = mint_code()
    issued = issue(person.user_id, person.address, code, now, secret=node_secret(node.settings))
    with node.begin() as conn:
        # Decide again under the person's lock: a parallel request may have armed the cooldown.
        lock_person(conn, person.user_id)
        again = may_request(read_record(conn, person.user_id), status, now, limits=limits,
                            codes_today=codes_today(conn, person.org_id, person.user_id, now))
        _refuse_unless_allowed(again.outcome, again.retry_after_seconds)
        write_record(conn, person.org_id, issued)
        audit.append(conn, org_id=person.org_id, at=now, action=CODE_REQUESTED, actor_id=person.user_id,
                     subject=person.user_id, detail={"address": person.address})
    ttl = budgets.VERIFICATION_CODE_TTL_SECONDS
    lifetime = f"{ttl // 3600} hours" if ttl >= 3600 else f"{max(1, ttl // 60)} minutes"
    mail = SealRequest(mailbox_id=sender.mailbox_id, to=[person.address], subject="Your mailnode sign-in code",
                       body=f"Your sign-in code is {code}. It works once, within {lifetime}.\n\n"
                            "If you did not ask to sign in, ignore this message; nobody can sign in without "
                            "the code.", sender_address=sender.address, system=True)
    try:
        sealed = send_realtime(node, org_id=person.org_id, author_id=person.user_id, request=mail)
    except MailnodeError as exc:
        # The record stays as the cooldown, its code cleared: nobody received it.
        with node.begin() as conn:
            write_record(conn, person.org_id, after_send_failed(issued), exc.detail.get("send_id"))
        if exc.code == "E_SEND_UNAVAILABLE":
            raise _refusal(RequestOutcome.PROVIDER_UNAVAILABLE) from exc
        raise
    with node.begin() as conn:
        conn.execute(update(signin_codes).where(signin_codes.c.user_id == person.user_id)
                     .values(send_id=sealed.id))
    return person


def _count(node: Node, person: Person, now: datetime) -> int:
    with node.read() as conn:
        return codes_today(conn, person.org_id, person.user_id, now)


def check(node: Node, *, address: str, code: str) -> Person:
    """The person ``code`` signs in, for ``address``; the code is spent. Each refusal is raised after the
    record's new state (an attempt spent) is committed: ``E_SIGNIN_CODE_WRONG``, ``_EXPIRED``,
    ``_ATTEMPTS_EXHAUSTED`` (422), ``E_SIGNIN_CODE_REQUEST_NEW`` (409; also for an address that is nobody's,
    so the answer does not disclose it), ``E_SIGNIN_ADDRESS_SHARED`` (409)."""
    now = node.clock.now()
    with node.read() as conn:
        person = person_for(conn, address)
    if person is None:
        raise _refusal(VerifyOutcome.REQUEST_NEW)
    with node.begin() as conn:
        lock_person(conn, person.user_id)
        record = read_record(conn, person.user_id)
        result = verify(record, code, now, secret=node_secret(node.settings))
        if result.outcome is VerifyOutcome.VERIFIED:
            conn.execute(delete(signin_codes).where(signin_codes.c.user_id == person.user_id))
        elif result.outcome is not VerifyOutcome.REQUEST_NEW and result.record is not None:
            write_record(conn, person.org_id, result.record)
    refusal = refusal_for(result.outcome, attempts_left=result.attempts_left)
    if refusal is not None:
        raise refusal
    return person

