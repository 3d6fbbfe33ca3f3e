"""The application mail API: ``POST /api/mail``, ``POST /api/mail/batch``, ``GET /api/mail`` and
``GET /api/mail/{id}`` (spec/transactional.md §6; issue 20; the reads are ``outbound.mail_reads``).

A mail names its sender by ``from`` (``"Name <address>"``, an address of a mailbox the caller may send from:
``outbound.mail_send``) or ``mailbox_id``, and carries text and/or HTML, attachments (base64 ``content``),
Reply-To, allowlisted custom headers, tags and metadata (``outbound.mail_fields``); all of it is part of the
idempotency fingerprint. A batch is a JSON array of up to ``budgets.MAIL_BATCH_MAX`` such bodies, each
answered in place (``post_batch``).

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
not sent here (``POST /api/sends``). ``GET /api/mail`` lists the caller's application mail (an
administrator's: the organisation's) newest first, filtered and paged, each item as ``GET /api/mail/{id}``
shows it.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from mailnode import budgets
from mailnode.api.deps import CallerDep, NodeDep, SendPageDep, address_filter, paged, query_invalid
from mailnode.api.errors import validation_error
from mailnode.api.mail_models import Mail, MailAnswer, MailPage
from mailnode.api.models import Strict
from mailnode.api.responses import ErrorBody, SendId, errors
from mailnode.clock import utc
from mailnode.errors import MailnodeError, conflict, invalid
from mailnode.outbound import mail_reads
from mailnode.outbound.idempotency import Replay, check_key, fingerprint_of, one_key, seal_once
from mailnode.outbound.mail_fields import is_metadata_entry, is_tag
from mailnode.outbound.mail_send import MailAsk, seal_request
from mailnode.outbound.realtime import send_realtime, unavailable
from mailnode.outbound.seal import seal
from mailnode.schema.outbound import send_manifests
from mailnode.vocabulary.mail_classes import MailClass, parse_mail_class
from mailnode.vocabulary.send_states import SendState

router = APIRouter(prefix="/api/mail", tags=["mail"])

_CLASSES = (MailClass.REALTIME, MailClass.DEFERRABLE)


class MailAttachmentIn(Strict):
    """One attachment: its filename (a base name), ``type/subtype`` and bytes as base64 (RFC 4648, padded)."""

    filename: str
    content_type: str = "application/octet-stream"
    content: str


class MailIn(Strict):
    """Body of POST /api/mail (``class`` is ``realtime`` or ``deferrable``).

    ``from`` (``"Name <address>"`` or ``"address"``: an address of a mailbox the caller may send from) or
    ``mailbox_id``, or both naming the same mailbox; ``text`` and/or ``html``; ``reply_to`` a list of
    addresses; ``headers`` a name->value object (``outbound.mail_fields``' allowlist); ``tags`` a list of
    short labels; ``metadata`` a string->string object. Limits: ``budgets.MAIL_*``.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mailbox_id: str | None = None
    from_: str | None = Field(default=None, alias="from")
    mail_class: str = Field(alias="class")
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    bcc: list[str] = Field(default_factory=list)
    reply_to: list[str] = Field(default_factory=list)
    subject: str
    text: str | None = None
    html: str | None = None
    attachments: list[MailAttachmentIn] = Field(default_factory=list)
    headers: dict[str, str] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, str] = Field(default_factory=dict)
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
    """The API shape of one send the caller sealed (``outbound.mail_reads.read_mail``); ``E_NO_SUCH_MAIL``
    (404) otherwise.

    ``content_deleted_at``: when retention deleted its sealed body (ISO 8601 UTC), else null.
    """
    with node.read() as conn:
        return mail_reads.read_mail(conn, org_id=org_id, author_id=author_id, send_id=send_id)


def _answer_status(node: Any, send_id: str, mail_class: str) -> int:
    """The status a request that sealed (or replayed) ``send_id`` answers: 202 for deferrable mail; for
    realtime mail 200 once handed over, else ``E_MAIL_IN_FLIGHT`` (409) or ``E_SEND_UNAVAILABLE`` (503),
    raised (``realtime_replay_answer``)."""
    if mail_class != MailClass.REALTIME.value:
        return 202
    with node.read() as conn:
        row = conn.execute(select(send_manifests.c.state, send_manifests.c.lease_until)
                           .where(send_manifests.c.id == send_id)).one()
    answer = realtime_replay_answer(row.state, claimed=row.lease_until is not None)
    if answer is ReplayAnswer.IN_FLIGHT:
        raise in_flight(send_id)
    if answer is not ReplayAnswer.HANDED_OVER:
        raise unavailable(send_id)
    return 200


def has_visible_character(text: str) -> bool:
    """Whether ``text`` holds a character a reader sees: not white space, a separator, a control or a format
    character (Unicode categories Z*, Cc, Cf; e.g. U+200B ZERO WIDTH SPACE alone is not visible). Pure."""
    return any(not ch.isspace() and unicodedata.category(ch) not in _INVISIBLE_CATEGORIES for ch in text)


#: Unicode categories no reader sees: separators (space, line, paragraph), controls and format characters.
_INVISIBLE_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})


#: How ``POST /api/mail`` names its key and the route that reads a send, in its refusals.
_KEY_WHERE = "idempotency_key"
_READ_AT = "GET /api/mail/{id}"


def seal_one(node: Any, caller: Any, body: MailIn, header_key: str | None,
             senders: dict[Any, Any] | None = None) -> tuple[int, str]:
    """Seal one application mail and answer ``(status, send id)``: 200 for realtime mail the provider took,
    202 for deferrable mail; the codes of ``post_mail`` otherwise (raised). ``POST /api/mail`` and each item
    of ``POST /api/mail/batch`` go through here, so a batch item is exactly the single request; ``senders``
    as ``outbound.mail_send.seal_request`` takes it."""
    mail_class = parse_mail_class(body.mail_class)
    if mail_class is None or mail_class not in _CLASSES:
        raise invalid("E_MAIL_CLASS_UNKNOWN", f"{body.mail_class[:40]!r} is not a class this route sends.",
                      "POST /api/mail sends realtime or deferrable mail; correspondence goes through POST /api/sends.",
                      "Send class realtime or deferrable.", mail_class=body.mail_class[:40])
    key = one_key(header_key, body.idempotency_key)
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
    ask = MailAsk(mail_class=mail_class.value, key=key, subject=body.subject, mailbox_id=body.mailbox_id,
                  from_=body.from_, to=body.to, cc=body.cc, bcc=body.bcc, text=body.text, html=body.html,
                  attachments=[(a.filename, a.content_type, a.content) for a in body.attachments],
                  reply_to=body.reply_to, headers=body.headers, tags=body.tags, metadata=body.metadata)
    request = seal_request(node, org_id=caller.org_id, principal_id=caller.principal_id, ask=ask, senders=senders)

    def sealing() -> Any:
        if mail_class is MailClass.REALTIME:
            return send_realtime(node, org_id=caller.org_id, author_id=caller.principal_id, request=request)
        return seal(node, org_id=caller.org_id, author_id=caller.principal_id, request=request)

    done = seal_once(node, org_id=caller.org_id, author_id=caller.principal_id, key=key,
                     asked=lambda conn: fingerprint_of(request), seal=sealing, where=_KEY_WHERE, read_at=_READ_AT)
    send_id = done.send_id if isinstance(done, Replay) else done.id
    return _answer_status(node, send_id, mail_class.value), send_id


@router.post("", status_code=202, response_model=MailAnswer,
             responses={200: {"model": MailAnswer, "description": "realtime mail the provider accepted"},
                        202: {"description": "deferrable mail sealed; the next dispatch sweep hands it over"},
                        **errors(403, 404, 409, 503)})
def post_mail(body: MailIn, node: NodeDep, caller: CallerDep,
              idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None) -> JSONResponse:
    """Send realtime (200 after the provider accepted) or deferrable (202) mail under an idempotency key.

    Raises ``E_MAIL_CLASS_UNKNOWN`` / ``E_IDEMPOTENCY_KEY_MISSING`` / ``E_IDEMPOTENCY_KEY_CONFLICT`` /
    ``E_IDEMPOTENCY_KEY_MALFORMED`` / ``E_IDEMPOTENCY_KEY_RESERVED`` / ``E_MAIL_SUBJECT_EMPTY`` /
    ``E_MAIL_BODY_MISSING`` / ``E_MAIL_FROM_MISSING`` / ``E_MAIL_FROM_MISMATCH`` / ``E_ATTACHMENT_MALFORMED``
    (422), ``E_MAY_NOT_SEND_FROM_ADDRESS`` (404), the seal's codes (``outbound.mail_fields``' among them),
    ``E_IDEMPOTENCY_KEY_REUSED`` (409) and, for realtime mail, ``E_REALTIME_TOO_MANY_RECIPIENTS`` (422),
    ``E_MAIL_IN_FLIGHT`` (409) or ``E_SEND_UNAVAILABLE`` (503).
    """
    status, send_id = seal_one(node, caller, body, idempotency_key)
    return JSONResponse({"mail": mail_json(node, caller.org_id, caller.principal_id, send_id)}, status_code=status)


class BatchResult(BaseModel):
    """One item's answer: its ``index`` in the batch, the ``status`` the single request would have answered,
    and either ``mail`` (as ``GET /api/mail/{id}`` shows it) or ``error`` (the node's error body)."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0)
    status: int
    mail: Mail | None = None
    error: ErrorBody | None = None


class BatchOut(BaseModel):
    """``POST /api/mail/batch``'s answer: one result per item, in the items' order."""

    model_config = ConfigDict(extra="forbid")

    results: list[BatchResult]


def batch_too_large(observed: int) -> MailnodeError:
    """422 ``E_MAIL_BATCH_TOO_LARGE``: more than ``budgets.MAIL_BATCH_MAX`` items."""
    limit = budgets.MAIL_BATCH_MAX
    return MailnodeError(code="E_MAIL_BATCH_TOO_LARGE", what=f"MAIL_BATCH_MAX is {limit}; this batch has {observed}.",
                         why="A batch is answered in one response, item by item; a bounded batch keeps the "
                             "request short.", fix=f"Split it into batches of at most {limit} messages.",
                         status=422, detail={"limit_name": "MAIL_BATCH_MAX", "limit": limit, "observed": observed})


@router.post("/batch", response_model=BatchOut,
             responses=errors(422))
def post_batch(items: Annotated[list[Any], Body()], node: NodeDep, caller: CallerDep) -> BatchOut:
    """Send up to ``budgets.MAIL_BATCH_MAX`` mails, each a ``POST /api/mail`` body with its own
    ``idempotency_key``; 200 with one result per item in order. One bad item fails only itself: its result
    carries the error body and status the single request would have answered (a 422, 404, 409 or 503), and
    the others are sealed. A body that is not a JSON array is ``E_REQUEST_INVALID`` and one over the limit
    ``E_MAIL_BATCH_TOO_LARGE`` (422), refused whole before any item is read. Items are sealed one after
    another, so a repeated batch replays each item under its key.
    """
    if len(items) > budgets.MAIL_BATCH_MAX:
        raise batch_too_large(len(items))
    results: list[BatchResult] = []
    sealed: dict[int, str] = {}
    senders: dict[Any, Any] = {}
    for index, item in enumerate(items):
        try:
            body = MailIn.model_validate(item)
        except ValidationError as exc:
            err = validation_error([{**e, "loc": (index, *e.get("loc", ()))} for e in exc.errors()])
            results.append(BatchResult(index=index, status=err.status, error=ErrorBody.model_validate(err.to_json())))
            continue
        try:
            status, send_id = seal_one(node, caller, body, None, senders)
        except MailnodeError as refused:
            # The item's refusal is its answer, in place; the rest of the batch proceeds.
            results.append(BatchResult(index=index, status=refused.status,
                                       error=ErrorBody.model_validate(refused.to_json())))
            continue
        sealed[index] = send_id
        results.append(BatchResult(index=index, status=status))
    # Every sealed item's mail is read at once, as GET /api/mail/{id} shows it.
    with node.read() as conn:
        mails = mail_reads.read_mails(conn, org_id=caller.org_id, author_id=caller.principal_id,
                                      send_ids=list(sealed.values()))
    for index, send_id in sealed.items():
        results[index].mail = Mail.model_validate(mails[send_id])
    return BatchOut(results=results)


def _instant(value: datetime | None, name: str) -> datetime | None:
    """``value`` in UTC (a naive one taken as UTC), or None; one that leaves the calendar once in UTC
    (``0001-01-01T00:00:00+05:00``) is ``query_invalid`` naming ``query.<name>``."""
    if value is None:
        return None
    try:
        return utc(value)
    except OverflowError:
        raise query_invalid(name, value, "the instant is outside the years 1..9999 in UTC") from None


@router.get("", response_model=MailPage)
def list_mail(node: NodeDep, caller: CallerDep, page: SendPageDep, state: SendState | None = None,
              mail_class: Annotated[Literal["realtime", "deferrable"] | None, Query(alias="class")] = None,
              recipient: str | None = None, after: datetime | None = None,
              before: datetime | None = None, tag: str | None = None,
              metadata: str | None = None) -> dict[str, Any]:
    """The caller's application mail (an administrator's: the organisation's), newest first, each as
    ``GET /api/mail/{id}`` shows it: ``{"mail": [...], "next_cursor"}``.

    Filters: ``state`` (a send state), ``class`` (``realtime`` | ``deferrable``), ``recipient`` (an address in
    to, cc or bcc, compared case-insensitively), ``after`` (sealed at or after) and ``before`` (sealed
    before): ISO 8601 dates (midnight UTC) or date-times (UTC when no offset is given); ``tag`` (the mail
    carries this tag, exactly) and ``metadata=key:value`` (its metadata holds ``key`` with exactly ``value``;
    split on the first colon, which no key may hold). A value outside its vocabulary, a malformed address,
    date or metadata pair, or ``before`` not later than ``after`` is 422 ``E_REQUEST_INVALID`` naming
    ``query.<name>``.
    """
    since, until = _instant(after, "after"), _instant(before, "before")
    if since is not None and until is not None and until <= since:
        raise query_invalid("before", before, "before must be later than after: nothing is sealed in an empty range")
    if tag is not None and not is_tag(tag):
        raise query_invalid("tag", tag, "a tag is 1 to MAIL_TAG_MAX_CHARS letters, digits or _ - . : /")
    pair = None
    if metadata is not None:
        key, colon, value = metadata.partition(":")
        if not colon or not is_metadata_entry(key, value):
            raise query_invalid("metadata", metadata, "metadata is key:value with a metadata key (letters, digits, "
                                                      "_ - .) and a printable value, e.g. order_id:42")
        pair = (key, value)
    filters = mail_reads.MailFilter(state=state, mail_class=MailClass(mail_class) if mail_class else None,
                                    recipient=address_filter(recipient, "recipient"), after=since, before=until,
                                    tag=tag, metadata=pair)
    with node.read() as conn:
        items = mail_reads.list_mail(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                     filters=filters, limit=page.limit, cursor=page.cursor)
    return paged("mail", items, page)


@router.get("/{send_id}", response_model=MailAnswer, responses=errors(404))
def get_mail(send_id: SendId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One send the caller made through this API, in the node's vocabulary."""
    return {"mail": mail_json(node, caller.org_id, caller.principal_id, send_id)}
