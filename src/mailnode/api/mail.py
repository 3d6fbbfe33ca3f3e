"""The application mail API: ``POST /api/mail`` and ``GET /api/mail/{id}`` (spec/transactional.md §6).

Any principal holding ``send.propose`` on the mailbox may call it (an application, a person). ``realtime``
answers 200 only after the provider accepted the mail, or the vague 503 (``E_SEND_UNAVAILABLE``, with
``detail.send_id`` when a send was sealed); ``deferrable`` answers 202 with the id; the next dispatch
sweep makes its first hand-over and the sweeper retries what fails. The same ``idempotency_key`` from the
same principal returns the same send, never a second one; the same key with a different mail (another mailbox, class, recipient set, subject or text) is refused
``E_IDEMPOTENCY_KEY_REUSED`` (409, ``detail.send_id`` the first send, ``detail.differs`` the fields), so a
caller is never told that a mail it did not send was sent. A realtime replay while the first request is
still with the provider answers ``E_MAIL_IN_FLIGHT`` (409, ``detail.send_id``), not the 503 that would
read as a failure (``realtime_replay_answer``). A subject with no visible character is refused
``E_MAIL_SUBJECT_EMPTY`` (422), a key holding a control character ``E_IDEMPOTENCY_KEY_MALFORMED`` (422,
PostgreSQL cannot store NUL) and a key in the node's own namespace (``mailnode:``, the keys its notices
are sealed under) ``E_IDEMPOTENCY_KEY_RESERVED`` (422) before anything is read or sealed. Realtime mail
names at most ``budgets.REALTIME_RECIPIENTS_MAX`` recipients (``E_REALTIME_TOO_MANY_RECIPIENTS``, 422) and
is refused by the provider breaker when its recipients, one provider request each, would take the day's
reading past the realtime ceiling (``notify.sending.send_realtime``). ``GET /api/mail/{id}`` says
``content_deleted_at`` (ISO 8601 UTC, or null) once retention deleted the send's body. Correspondence is
not sent here (``POST /api/sends``).
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.models import Strict
from mailnode.errors import MailnodeError, conflict, invalid, not_found
from mailnode.ids import parse_id
from mailnode.notify import retention_io
from mailnode.notify.classes import MailClass, parse_mail_class
from mailnode.notify.notices import NODE_KEY_PREFIX
from mailnode.notify.sending import find_by_key, send_realtime, unavailable
from mailnode.outbound.seal import SealRequest, seal, validate_recipients
from mailnode.outbound.states import SendState, words_for
from mailnode.outbound.tables import send_manifests, send_recipients

router = APIRouter(prefix="/api/mail", tags=["mail"])

_CLASSES = (MailClass.REALTIME, MailClass.DEFERRABLE)


class MailIn(Strict):
    """Body of POST /api/mail (``class`` is ``realtime`` or ``deferrable``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mailbox_id: str
    mail_class: str = Field(alias="class")
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    bcc: list[str] = Field(default_factory=list)
    subject: str
    text: str
    idempotency_key: str = Field(min_length=1, max_length=256)


@dataclass(frozen=True)
class MailFingerprint:
    """What makes two requests under one idempotency key the same mail.

    Attributes:
        mailbox_id: the sending mailbox (``mbx_...``).
        mail_class: ``realtime`` or ``deferrable``.
        to, cc, bcc: the normalised recipients of each kind, lower-cased and sorted (order is not content).
        subject: the Subject as sent.
        text_sha256: hex SHA-256 of the UTF-8 text (the evidence store's digest of the typed body).
    """

    mailbox_id: str
    mail_class: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    bcc: tuple[str, ...]
    subject: str
    text_sha256: str


#: The fields ``differing_fields`` compares, in the order it names them.
FINGERPRINT_FIELDS: tuple[str, ...] = ("mailbox_id", "mail_class", "to", "cc", "bcc", "subject", "text")


def differing_fields(stored: MailFingerprint, asked: MailFingerprint) -> tuple[str, ...]:
    """The request fields (``FINGERPRINT_FIELDS`` names) in which ``asked`` is not the mail ``stored``; () when same.

    Pure. ``text`` compares the digests.
    """
    pairs = {"mailbox_id": (stored.mailbox_id, asked.mailbox_id),
             "mail_class": (stored.mail_class, asked.mail_class),
             "to": (stored.to, asked.to), "cc": (stored.cc, asked.cc), "bcc": (stored.bcc, asked.bcc),
             "subject": (stored.subject, asked.subject),
             "text": (stored.text_sha256, asked.text_sha256)}
    return tuple(name for name in FINGERPRINT_FIELDS if pairs[name][0] != pairs[name][1])


def _sorted_lower(addresses: Any) -> tuple[str, ...]:
    return tuple(sorted(str(a).lower() for a in (addresses or ())))


def fingerprint_of_request(body: MailIn, mail_class: MailClass) -> MailFingerprint:
    """The fingerprint of a request, its recipients normalised as the seal normalises them (its 422s apply)."""
    recipients = validate_recipients(body.to, body.cc, body.bcc)
    by_kind = {kind: _sorted_lower(a.address for k, a in recipients if k == kind) for kind in ("to", "cc", "bcc")}
    return MailFingerprint(mailbox_id=body.mailbox_id, mail_class=mail_class.value, to=by_kind["to"],
                           cc=by_kind["cc"], bcc=by_kind["bcc"], subject=body.subject,
                           text_sha256=hashlib.sha256(body.text.encode("utf-8")).hexdigest())


def fingerprint_of_send(node: Any, send_id: str) -> MailFingerprint:
    """The fingerprint of a sealed manifest (one read)."""
    m = send_manifests.c
    with node.read() as conn:
        row = conn.execute(select(m.mailbox_id, m.mail_class, m.to_addresses, m.cc_addresses, m.bcc_addresses,
                                  m.subject, m.body_typed_sha256).where(m.id == send_id)).one()
    return MailFingerprint(mailbox_id=row.mailbox_id, mail_class=row.mail_class, to=_sorted_lower(row.to_addresses),
                           cc=_sorted_lower(row.cc_addresses), bcc=_sorted_lower(row.bcc_addresses),
                           subject=row.subject, text_sha256=row.body_typed_sha256)


def key_reused(send_id: str, key: str, differs: tuple[str, ...]) -> MailnodeError:
    """409 ``E_IDEMPOTENCY_KEY_REUSED``: the key already names a different mail (``differs``: its fields)."""
    return conflict("E_IDEMPOTENCY_KEY_REUSED",
                    f"The idempotency key {key[:80]!r} already names a different mail ({send_id}).",
                    "A key names one mail: a retry must repeat the first request exactly, so the node never "
                    "answers for a mail it did not send. Differs: " + ", ".join(differs) + ".",
                    f"Send this mail under a new idempotency_key; the first is at GET /api/mail/{send_id}.",
                    send_id=send_id, idempotency_key=key[:80], differs=list(differs))


class ReplayAnswer(StrEnum):
    """What a realtime replay (or the request that sealed it) answers, from the send's state.

    - ``handed_over``: 200 with the mail (the provider took it).
    - ``in_flight``: 409 ``E_MAIL_IN_FLIGHT``: the request that sealed it is still waiting for the provider
      (or died; the sweeper makes it terminal after ``sweeper_lease_seconds``). Ask again with the key.
    - ``unavailable``: the vague 503 ``E_SEND_UNAVAILABLE`` with ``detail.send_id``: it will not go.
    """

    HANDED_OVER = "handed_over"
    IN_FLIGHT = "in_flight"
    UNAVAILABLE = "unavailable"


#: Total over ``SendState`` for a send nobody holds a claim on: not yet handed over and not terminal is in
#: flight (its request makes any failure terminal before answering); everything else that did not leave
#: will not. A claimed send (``outcome_unknown`` under a lease: dispatch's mark while the provider is
#: asked) is in flight whatever this says (``realtime_replay_answer``).
REALTIME_REPLAY: dict[SendState, ReplayAnswer] = {
    SendState.HANDED_OVER: ReplayAnswer.HANDED_OVER,
    SendState.HELD: ReplayAnswer.IN_FLIGHT,
    SendState.AWAITING: ReplayAnswer.IN_FLIGHT,
    SendState.THROTTLED: ReplayAnswer.IN_FLIGHT,
    SendState.CANCELLED: ReplayAnswer.UNAVAILABLE,
    SendState.WITHHELD: ReplayAnswer.UNAVAILABLE,
    SendState.REFUSED: ReplayAnswer.UNAVAILABLE,
    SendState.SUPPRESSED: ReplayAnswer.UNAVAILABLE,
    SendState.OUTCOME_UNKNOWN: ReplayAnswer.UNAVAILABLE,
}


def realtime_replay_answer(state: str, *, claimed: bool) -> ReplayAnswer:
    """The answer for a realtime send in stored ``state``; ``claimed``: its ``lease_until`` is set (a
    dispatch is asking the provider now). ``unavailable`` for a state never seen (fail closed). Pure."""
    try:
        known = SendState(state)
    except ValueError:
        return ReplayAnswer.UNAVAILABLE
    if claimed and known is SendState.OUTCOME_UNKNOWN:
        return ReplayAnswer.IN_FLIGHT
    return REALTIME_REPLAY[known]


def in_flight(send_id: str) -> MailnodeError:
    """409 ``E_MAIL_IN_FLIGHT``: the first request with this key is still waiting for the provider."""
    return conflict("E_MAIL_IN_FLIGHT",
                    f"The mail {send_id} under this idempotency key is still being handed over.",
                    "The request that sealed it has not had the provider's answer yet; realtime mail is tried "
                    "once, so this request sends nothing.",
                    f"Repeat this request with the same key in a moment, or read GET /api/mail/{send_id}.",
                    send_id=send_id)


def mail_json(node: Any, org_id: str, author_id: str, send_id: str) -> dict[str, Any]:
    """The API shape of one send the caller sealed; ``E_NO_SUCH_MAIL`` (404) otherwise.

    ``content_deleted_at``: when retention deleted its sealed body (ISO 8601 UTC), else null.
    """
    parse_id(send_id, "snd", "id")
    with node.read() as conn:
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id,
                                                        send_manifests.c.org_id == org_id,
                                                        send_manifests.c.author_id == author_id)).first()
        if row is None:
            raise not_found("E_NO_SUCH_MAIL", f"No mail {send_id}.",
                            fix="Use the id POST /api/mail answered with.", id=send_id)
        recipients = conn.execute(select(send_recipients.c.address, send_recipients.c.kind,
                                         send_recipients.c.submission_state, send_recipients.c.delivery_state)
                                  .where(send_recipients.c.manifest_id == send_id)
                                  .order_by(send_recipients.c.kind, send_recipients.c.address)).all()
        purge = retention_io.purges_of(conn, [send_id]).get(send_id)
    return {"id": row.id, "mail_class": row.mail_class, "mailbox_id": row.mailbox_id, "state": row.state,
            "state_reason": row.state_reason, "words": words_for(row.state, row.state_reason),
            "idempotency_key": row.idempotency_key, "sealed_at": row.sealed_at.isoformat(),
            "attempts": int(row.attempts),
            "content_deleted_at": purge[1].isoformat() if purge is not None else None,
            "recipients": [{"address": r.address, "kind": r.kind, "submission_state": r.submission_state,
                            "delivery_state": r.delivery_state} for r in recipients]}


def _answer(node: Any, caller: Any, send_id: str, mail_class: MailClass, body: MailIn) -> JSONResponse:
    differs = differing_fields(fingerprint_of_send(node, send_id), fingerprint_of_request(body, mail_class))
    if differs:
        raise key_reused(send_id, body.idempotency_key, differs)
    return _answer_sealed(node, caller, send_id, mail_class.value)


def _answer_sealed(node: Any, caller: Any, send_id: str, mail_class: str) -> JSONResponse:
    mail = mail_json(node, caller.org_id, caller.principal_id, send_id)
    if mail_class == MailClass.REALTIME.value:
        with node.read() as conn:
            row = conn.execute(select(send_manifests.c.state, send_manifests.c.lease_until)
                               .where(send_manifests.c.id == send_id)).one()
        answer = realtime_replay_answer(row.state, claimed=row.lease_until is not None)
        if answer is ReplayAnswer.IN_FLIGHT:
            raise in_flight(send_id)
        if answer is not ReplayAnswer.HANDED_OVER:
            raise unavailable(send_id)
        return JSONResponse({"mail": mail}, status_code=200)
    return JSONResponse({"mail": mail}, status_code=202)


def has_visible_character(text: str) -> bool:
    """Whether ``text`` holds a character a reader sees: not white space, a separator, a control or a format
    character (Unicode categories Z*, Cc, Cf; e.g. U+200B ZERO WIDTH SPACE alone is not visible). Pure."""
    return any(not ch.isspace() and unicodedata.category(ch) not in _INVISIBLE_CATEGORIES for ch in text)


#: Unicode categories no reader sees: separators (space, line, paragraph), controls and format characters.
_INVISIBLE_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})


@router.post("", status_code=202, responses={200: {"description": "realtime mail the provider accepted"},
                                             503: {"description": "realtime mail could not be sent"}})
def post_mail(body: MailIn, node: NodeDep, caller: CallerDep) -> JSONResponse:
    """Send realtime (200 after the provider accepted) or deferrable (202) mail under an idempotency key.

    Raises ``E_MAIL_CLASS_UNKNOWN`` / ``E_IDEMPOTENCY_KEY_MALFORMED`` / ``E_IDEMPOTENCY_KEY_RESERVED`` /
    ``E_MAIL_SUBJECT_EMPTY`` (422), the seal's codes, ``E_IDEMPOTENCY_KEY_REUSED`` (409) and, for realtime
    mail, ``E_REALTIME_TOO_MANY_RECIPIENTS`` (422), ``E_MAIL_IN_FLIGHT`` (409) or ``E_SEND_UNAVAILABLE`` (503).
    """
    mail_class = parse_mail_class(body.mail_class)
    if mail_class is None or mail_class not in _CLASSES:
        raise invalid("E_MAIL_CLASS_UNKNOWN", f"{body.mail_class[:40]!r} is not a class this route sends.",
                      "POST /api/mail sends realtime or deferrable mail; correspondence goes through POST /api/sends.",
                      "Send class realtime or deferrable.", mail_class=body.mail_class[:40])
    bad = next((c for c in body.idempotency_key if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise invalid("E_IDEMPOTENCY_KEY_MALFORMED",
                      f"The idempotency key contains the control character U+{ord(bad):04X}.",
                      "A key is printable text: it is stored and compared as text, and PostgreSQL cannot hold NUL.",
                      "Send an idempotency_key of printable characters, e.g. a UUID.",
                      character=f"U+{ord(bad):04X}")
    if body.idempotency_key.startswith(NODE_KEY_PREFIX):
        raise invalid("E_IDEMPOTENCY_KEY_RESERVED",
                      f"Idempotency keys starting {NODE_KEY_PREFIX!r} belong to the node.",
                      "The node seals its own notices under keys in that namespace; a caller's mail under one "
                      "could be taken for a notice.",
                      f"Send an idempotency_key that does not start with {NODE_KEY_PREFIX!r}, e.g. a UUID.",
                      prefix=NODE_KEY_PREFIX)
    if not has_visible_character(body.subject):
        raise invalid("E_MAIL_SUBJECT_EMPTY", "The mail has no subject.",
                      "Application mail needs a subject: providers refuse mail without one (Resend: "
                      "missing_required_field), and a realtime mail would fail after its request was spent.",
                      "Send a subject with at least one visible character.")
    with node.read() as conn:
        existing = find_by_key(conn, caller.org_id, caller.principal_id, body.idempotency_key)
    if existing is not None:
        return _answer(node, caller, existing, mail_class, body)
    request = SealRequest(mailbox_id=body.mailbox_id, to=body.to, cc=body.cc, bcc=body.bcc, subject=body.subject,
                          body=body.text, mail_class=mail_class.value, idempotency_key=body.idempotency_key)
    try:
        if mail_class is MailClass.REALTIME:
            sealed = send_realtime(node, org_id=caller.org_id, author_id=caller.principal_id, request=request)
        else:
            sealed = seal(node, org_id=caller.org_id, author_id=caller.principal_id, request=request)
    except IntegrityError:
        # Two requests raced on one key: the other sealed first, so this answers with its send.
        with node.read() as conn:
            raced = find_by_key(conn, caller.org_id, caller.principal_id, body.idempotency_key)
        if raced is None:
            raise
        return _answer(node, caller, raced, mail_class, body)
    return _answer_sealed(node, caller, sealed.id, mail_class.value)


@router.get("/{send_id}")
def get_mail(send_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One send the caller made through this API, in the node's vocabulary."""
    return {"mail": mail_json(node, caller.org_id, caller.principal_id, send_id)}
