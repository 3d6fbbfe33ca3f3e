"""Routes for sends: seal (``POST /api/sends``), read, cancel, release a policy hold, and retry.

``POST /api/sends`` seals from ``{"draft_id"}`` (the caller's draft, retired by the seal) or from an
inline composition, then wakes the dispatcher (at ``release_at``). ``POST /api/sends/{id}/release-hold``
releases ``awaiting/policy_hold`` (``send.propose``) and wakes the dispatcher too. Codes: see
``outbound.seal``, ``outbound.retry``; an unknown ``state`` filter is ``E_STATE_UNKNOWN`` (422).

``POST /api/sends`` takes an ``Idempotency-Key`` header with the application mail API's semantics
(``outbound.idempotency``): the same request again under the same key answers the send the first sealed
(201, the same shape, ``Idempotent-Replayed: true``) and seals nothing; the key with a different mail is
``E_IDEMPOTENCY_KEY_REUSED`` (409); a malformed or ``mailnode:`` key is refused (422) before anything is
read. A retry from a draft replays when the key's send was sealed from that draft (the seal retired it).

Answering (issue 15; ``outbound.compose``, ``outbound.answer``): an inline send with
``in_reply_to_message_id`` may leave out its recipients and ``subject`` (filled from the parent: Reply-To or
From, ``Re: ...``), ask ``reply_all`` and ``quote``; ``forward_message_id`` with ``forward_as`` (``inline`` |
``attachment``) forwards a message. Recipients may carry display names; ``html`` adds an HTML alternative
and ``attachments`` files (``{filename, content_type, content_base64}``). The idempotency fingerprint is
taken over the completed composition, so it covers all of these.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Response
from pydantic import Field
from sqlalchemy import select

from mailnode.api.deps import CallerDep, NodeDep, SendPageDep, address_filter, id_filter, paged, query_invalid
from mailnode.api.models import Strict
from mailnode.api.responses import SendId, bytes_response, errors
from mailnode.api.send_models import (
    SendActedAnswer,
    SendPage,
    SendReadAnswer,
    SendRetried,
    SendSealedAnswer,
)
from mailnode.clock import utc
from mailnode.mail.thread import body_of, grant_for
from mailnode.outbound import reads, retry, submit
from mailnode.outbound.workflows import wake
from mailnode.schema.outbound import send_manifests
from mailnode.vocabulary.mail_classes import MailClass

router = APIRouter(prefix="/api/sends", tags=["sends"])


class AttachmentIn(Strict):
    """One attachment: its filename, ``type/subtype`` and bytes as base64 (RFC 4648)."""

    filename: str
    content_type: str = "application/octet-stream"
    content_base64: str


class SendIn(Strict):
    """Either ``draft_id`` alone, or an inline composition (``mailbox_id``, recipients, subject, body).

    A reply (``in_reply_to_message_id``) or forward (``forward_message_id``) may leave out ``subject``, and a
    reply its recipients; ``body`` defaults to empty for them (a quote or forward fills it).
    """

    draft_id: str | None = None
    mailbox_id: str | None = None
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    bcc: list[str] = Field(default_factory=list)
    subject: str | None = None
    body: str | None = None
    in_reply_to_message_id: str | None = None
    sender_address: str | None = None
    html: str | None = None
    attachments: list[AttachmentIn] = Field(default_factory=list)
    reply_all: bool = False
    quote: bool = False
    forward_message_id: str | None = None
    forward_as: Literal["inline", "attachment"] = "inline"


class RetryIn(Strict):
    """``mode`` (retry-effect | resend-may-duplicate), and for a resend a reason and the accepted risk."""

    mode: str
    reason: str = ""
    accept_duplicate_risk: bool = False


@router.post("", status_code=201, response_model=SendSealedAnswer, responses=errors(404, 409, 410))
def create(body: SendIn, node: NodeDep, caller: CallerDep, response: Response,
           idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None) -> dict[str, Any]:
    """Seal a send from a draft or inline; 201 with the manifest's id, state and ``release_at``.

    Under an ``Idempotency-Key`` a repeated request answers the first send (see the module docstring).
    """
    c = submit.Composition(
        draft_id=body.draft_id, mailbox_id=body.mailbox_id, to=tuple(body.to), cc=tuple(body.cc),
        bcc=tuple(body.bcc), subject=body.subject, body=body.body, in_reply_to_message_id=body.in_reply_to_message_id,
        sender_address=body.sender_address, html=body.html,
        attachments=tuple((a.filename, a.content_type, a.content_base64) for a in body.attachments),
        reply_all=body.reply_all,
        quote=body.quote, forward_message_id=body.forward_message_id, forward_as=body.forward_as,
        fields_given=frozenset(body.model_fields_set - {"draft_id"}))
    done = submit.submit(node, org_id=caller.org_id, author_id=caller.principal_id, c=c,
                         idempotency_key=idempotency_key)
    if done.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return {"send": done.send}


AuthorKind = Literal["person", "butler", "application", "node"]
SendClass = Literal["correspondence", "realtime", "deferrable"]


def _instant(value: datetime | None, name: str) -> datetime | None:
    """``value`` in UTC (a naive one taken as UTC), or None; outside the calendar once in UTC is 422."""
    if value is None:
        return None
    try:
        return utc(value)
    except OverflowError:
        raise query_invalid(name, value, "the instant is outside the years 1..9999 in UTC") from None


def send_filter(*, author_kind: str | None, mail_class: str | None, recipient: str | None,
                after: datetime | None, before: datetime | None) -> reads.SendFilter:
    """The ``GET /api/sends`` search filters as a ``reads.SendFilter`` (the web's Sends page parses its form
    with this too). A malformed address, ``before`` not later than ``after``, or an author kind or class
    outside its vocabulary is 422 ``E_REQUEST_INVALID`` naming ``query.<name>``."""
    if author_kind is not None and author_kind not in reads.AUTHOR_KIND_PREFIXES:
        raise query_invalid("author_kind", author_kind,
                            "author_kind is one of " + ", ".join(reads.AUTHOR_KIND_PREFIXES))
    if mail_class is not None and mail_class not in {c.value for c in MailClass}:
        raise query_invalid("class", mail_class, "class is one of " + ", ".join(c.value for c in MailClass))
    since, until = _instant(after, "after"), _instant(before, "before")
    if since is not None and until is not None and until <= since:
        raise query_invalid("before", before, "before must be later than after: nothing is sealed in an empty range")
    return reads.SendFilter(author_kind=author_kind, mail_class=MailClass(mail_class) if mail_class else None,
                            recipient=address_filter(recipient, "recipient"), after=since, before=until)


@router.get("", response_model=SendPage)
def list_(node: NodeDep, caller: CallerDep, page: SendPageDep, mailbox_id: str | None = None,
          state: str | None = None, author_kind: AuthorKind | None = None,
          mail_class: Annotated[SendClass | None, Query(alias="class")] = None,
          recipient: str | None = None, after: datetime | None = None,
          before: datetime | None = None) -> dict[str, Any]:
    """Sends of the mailboxes the caller may see, newest first. Filters: ``mailbox_id``, ``state``,
    ``author_kind`` (``person`` | ``butler`` | ``application`` | ``node``), ``class`` (``correspondence`` |
    ``realtime`` | ``deferrable``), ``recipient`` (an address in to, cc or bcc, compared case-insensitively),
    ``after`` (sealed at or after) and ``before`` (sealed before), ISO 8601, UTC when no offset is given.
    A value outside its vocabulary, a malformed address or an empty range is 422 ``E_REQUEST_INVALID``."""
    wanted = retry.state_of(state) if state else None
    mailbox_id = id_filter(mailbox_id, "mailbox_id", "mbx")
    filters = send_filter(author_kind=author_kind, mail_class=mail_class, recipient=recipient, after=after,
                          before=before)
    with node.read() as conn:
        items = reads.list_sends(conn, org_id=caller.org_id, principal_id=caller.principal_id, limit=page.limit,
                                 cursor=page.cursor, mailbox_id=mailbox_id, state=wanted, filters=filters)
    return paged("sends", items, page)


@router.get("/{send_id}", response_model=SendReadAnswer)
def get(send_id: SendId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One send: recipients (submission, delivery, last error), events, the retry offer, the reason in words,
    and its ``body`` (``{"text", "html"}``, the ``attachments`` list and ``display_names``) to whoever may
    release, approve or cancel it (``mail.thread.send_body_grant``; null otherwise, and once retention deleted
    it), with ``body_visible_because`` naming the grant."""
    with node.read() as conn:
        out = reads.get_send(conn, org_id=caller.org_id, principal_id=caller.principal_id, send_id=send_id)
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id)).one()
        grant = grant_for(conn, org_id=caller.org_id, principal_id=caller.principal_id, row=row)
    out["display_names"] = row.display_names or {}
    out["attachments"] = row.attachments or []
    out["body_visible_because"] = grant.value if grant is not None else None
    out["body"] = body_of(node, row) if grant is not None and out["content_deleted"] is None else None
    return {"send": out}


@router.get("/{send_id}/raw", response_class=Response,
            responses={**bytes_response("the message as sealed for submission (RFC 5322)", "message/rfc822"),
                       **errors(403, 410)})
def raw(send_id: SendId, node: NodeDep, caller: CallerDep) -> Response:
    """The submitted message as sealed (RFC 5322 bytes, ``message/rfc822``) to whoever reads the send's body;
    403 ``E_SEND_RAW_NOT_VISIBLE`` to one who sees only its fields, 410 ``E_CONTENT_DELETED`` once retention
    deleted it (``outbound.reads.raw_message``)."""
    data = reads.raw_message(node, org_id=caller.org_id, principal_id=caller.principal_id, send_id=send_id)
    return Response(content=data, media_type="message/rfc822")


@router.post("/{send_id}/cancel", response_model=SendActedAnswer, responses=errors(409))
def cancel(send_id: SendId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Stop a held or awaiting send (``send.propose``)."""
    return {"send": submit.cancel(node, org_id=caller.org_id, principal_id=caller.principal_id, send_id=send_id)}


@router.post("/{send_id}/release-hold", response_model=SendActedAnswer, responses=errors(409))
def release_hold(send_id: SendId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Release a send a policy holds (``awaiting/policy_hold`` -> ``held``); 200 with the send as it now reads."""
    return {"send": submit.release_hold(node, org_id=caller.org_id, principal_id=caller.principal_id,
                                        send_id=send_id)}


# ``response_model_exclude_unset``: ``resend_of`` is absent from a retry-effect's answer, not null.
@router.post("/{send_id}/retry", response_model=SendRetried, response_model_exclude_unset=True,
             responses=errors(403, 409, 410))
def retry_send(send_id: SendId, body: RetryIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """``retry-effect`` (same manifest, proven non-acceptance) or ``resend-may-duplicate`` (a new manifest)."""
    mode = retry.check_mode(body.mode)
    if mode == "retry-effect":
        with node.begin() as conn:
            retry.retry_effect(conn, org_id=caller.org_id, principal_id=caller.principal_id, at=node.clock.now(),
                               send_id=send_id)
        wake(send_id, 0.0)
        with node.read() as conn:
            return {"send": reads.get_send(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                           send_id=send_id)}
    sealed = retry.resend_may_duplicate(node, org_id=caller.org_id, principal_id=caller.principal_id,
                                        send_id=send_id, reason=body.reason,
                                        accept_duplicate_risk=body.accept_duplicate_risk)
    submit.wake_at(node, sealed.id, sealed.release_at)
    return {"send": sealed.to_json(), "resend_of": send_id}
