"""The application mail API: ``POST /api/mail`` and ``GET /api/mail/{id}`` (spec/transactional.md §6).

Any principal holding ``send.propose`` on the mailbox may call it (an application, a person). ``realtime``
answers 200 only after the provider accepted the mail, or the vague 503 (``E_SEND_UNAVAILABLE``, with
``detail.send_id`` when a send was sealed); ``deferrable`` answers 202 with the id; the next dispatch
sweep makes its first hand-over and the sweeper retries what fails. The idempotency key is the body's
``idempotency_key`` or the ``Idempotency-Key`` header (both given and different: ``E_IDEMPOTENCY_KEY_CONFLICT``,
422; neither: ``E_IDEMPOTENCY_KEY_MISSING``, 422), under ``outbound.idempotency``, the mechanism
``POST /api/sends`` shares: the same key from the same principal returns the same send, never a second one;
the same key with a different mail (another mailbox, class, recipient set, subject or text) is refused
``E_IDEMPOTENCY_KEY_REUSED`` (409, ``detail.send_id`` the first send, ``detail.differs`` the fields), so a
caller is never told that a mail it did not send was sent. A realtime replay while the first request is
still with the provider answers ``E_MAIL_IN_FLIGHT`` (409, ``detail.send_id``), not the 503 that would
read as a failure (``realtime_replay_answer``). A subject with no visible character is refused
``E_MAIL_SUBJECT_EMPTY`` (422), a key holding a control character ``E_IDEMPOTENCY_KEY_MALFORMED`` (422,
PostgreSQL cannot store NUL) and a key in the node's own namespace (``mailnode:``, the keys its notices
are sealed under) ``E_IDEMPOTENCY_KEY_RESERVED`` (422) before anything is read or sealed. Realtime mail
names at most ``budgets.REALTIME_RECIPIENTS_MAX`` recipients (``E_REALTIME_TOO_MANY_RECIPIENTS``, 422) and
is refused by the provider breaker when its recipients, one provider request each, would take the day's
reading past the realtime ceiling (``outbound.realtime.send_realtime``). ``GET /api/mail/{id}`` says
``content_deleted_at`` (ISO 8601 UTC, or null) once retention deleted the send's body. Correspondence is
not sent here (``POST /api/sends``).
"""

from __future__ import annotations

import unicodedata
from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field
from sqlalchemy import select

from mailnode import budgets
from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.models import Strict
from mailnode.errors import MailnodeError, conflict, invalid, not_found
from mailnode.ids import parse_id
from mailnode.outbound.idempotency import Replay, check_key, fingerprint_of, one_key, seal_once
from mailnode.outbound.realtime import send_realtime, unavailable
from mailnode.outbound.seal import SealRequest, seal
from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.vocabulary.mail_classes import MailClass, parse_mail_class
from mailnode.vocabulary.send_states import SendState, words_for

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
    #: Or the ``Idempotency-Key`` header (``outbound.idempotency.one_key``); checked by ``check_key``.
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=budgets.IDEMPOTENCY_KEY_MAX_CHARS)


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


#: How ``POST /api/mail`` names its key and the route that reads a send, in its refusals.
_KEY_WHERE = "idempotency_key"
_READ_AT = "GET /api/mail/{id}"


@router.post("", status_code=202, responses={200: {"description": "realtime mail the provider accepted"},
                                             503: {"description": "realtime mail could not be sent"}})
def post_mail(body: MailIn, node: NodeDep, caller: CallerDep,
              idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None) -> JSONResponse:
    """Send realtime (200 after the provider accepted) or deferrable (202) mail under an idempotency key.

    Raises ``E_MAIL_CLASS_UNKNOWN`` / ``E_IDEMPOTENCY_KEY_MISSING`` / ``E_IDEMPOTENCY_KEY_CONFLICT`` /
    ``E_IDEMPOTENCY_KEY_MALFORMED`` / ``E_IDEMPOTENCY_KEY_RESERVED`` / ``E_MAIL_SUBJECT_EMPTY`` (422), the
    seal's codes, ``E_IDEMPOTENCY_KEY_REUSED`` (409) and, for realtime mail, ``E_REALTIME_TOO_MANY_RECIPIENTS``
    (422), ``E_MAIL_IN_FLIGHT`` (409) or ``E_SEND_UNAVAILABLE`` (503).
    """
    mail_class = parse_mail_class(body.mail_class)
    if mail_class is None or mail_class not in _CLASSES:
        raise invalid("E_MAIL_CLASS_UNKNOWN", f"{body.mail_class[:40]!r} is not a class this route sends.",
                      "POST /api/mail sends realtime or deferrable mail; correspondence goes through POST /api/sends.",
                      "Send class realtime or deferrable.", mail_class=body.mail_class[:40])
    key = one_key(idempotency_key, body.idempotency_key)
    if key is None:
        raise invalid("E_IDEMPOTENCY_KEY_MISSING", "The mail has no idempotency key.",
                      "Application mail is sent under a key, so a retry after a lost answer never sends twice.",
                      "Send an idempotency_key in the body or an Idempotency-Key header, e.g. a UUID.")
    check_key(key, _KEY_WHERE)
    if not has_visible_character(body.subject):
        raise invalid("E_MAIL_SUBJECT_EMPTY", "The mail has no subject.",
                      "Application mail needs a subject: providers refuse mail without one (Resend: "
                      "missing_required_field), and a realtime mail would fail after its request was spent.",
                      "Send a subject with at least one visible character.")
    request = SealRequest(mailbox_id=body.mailbox_id, to=body.to, cc=body.cc, bcc=body.bcc, subject=body.subject,
                          body=body.text, mail_class=mail_class.value, idempotency_key=key)

    def sealing() -> Any:
        if mail_class is MailClass.REALTIME:
            return send_realtime(node, org_id=caller.org_id, author_id=caller.principal_id, request=request)
        return seal(node, org_id=caller.org_id, author_id=caller.principal_id, request=request)

    done = seal_once(node, org_id=caller.org_id, author_id=caller.principal_id, key=key,
                     asked=lambda conn: fingerprint_of(request), seal=sealing, where=_KEY_WHERE, read_at=_READ_AT)
    send_id = done.send_id if isinstance(done, Replay) else done.id
    return _answer_sealed(node, caller, send_id, mail_class.value)


@router.get("/{send_id}")
def get_mail(send_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One send the caller made through this API, in the node's vocabulary."""
    return {"mail": mail_json(node, caller.org_id, caller.principal_id, send_id)}
