"""The application mail API: ``POST /api/mail`` and ``GET /api/mail/{id}`` (spec/transactional.md §6).

Any principal holding ``send.propose`` on the mailbox may call it (an application, a person). ``realtime``
answers 200 only after the provider accepted the mail, or the vague 503 (``E_SEND_UNAVAILABLE``, with
``detail.send_id`` when a send was sealed); ``deferrable`` answers 202 with the id and the sweeper hands
it over. The same ``idempotency_key`` from the same principal returns the same send, never a second one.
Correspondence is not sent here (``POST /api/sends``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.models import Strict
from mailnode.errors import invalid, not_found
from mailnode.ids import parse_id
from mailnode.notify.classes import MailClass, parse_mail_class
from mailnode.notify.sending import find_by_key, send_realtime, unavailable
from mailnode.outbound.seal import SealRequest, seal
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


def mail_json(node: Any, org_id: str, author_id: str, send_id: str) -> dict[str, Any]:
    """The API shape of one send the caller sealed; ``E_NO_SUCH_MAIL`` (404) otherwise."""
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
    return {"id": row.id, "mail_class": row.mail_class, "mailbox_id": row.mailbox_id, "state": row.state,
            "state_reason": row.state_reason, "words": words_for(row.state, row.state_reason),
            "idempotency_key": row.idempotency_key, "sealed_at": row.sealed_at.isoformat(),
            "attempts": int(row.attempts),
            "recipients": [{"address": r.address, "kind": r.kind, "submission_state": r.submission_state,
                            "delivery_state": r.delivery_state} for r in recipients]}


def _answer(node: Any, caller: Any, send_id: str, mail_class: str) -> JSONResponse:
    mail = mail_json(node, caller.org_id, caller.principal_id, send_id)
    if mail_class == MailClass.REALTIME.value:
        if mail["state"] != SendState.HANDED_OVER.value:
            raise unavailable(send_id)
        return JSONResponse({"mail": mail}, status_code=200)
    return JSONResponse({"mail": mail}, status_code=202)


@router.post("", status_code=202, responses={200: {"description": "realtime mail the provider accepted"},
                                             503: {"description": "realtime mail could not be sent"}})
def post_mail(body: MailIn, node: NodeDep, caller: CallerDep) -> JSONResponse:
    """Send realtime (200 after the provider accepted) or deferrable (202) mail under an idempotency key."""
    mail_class = parse_mail_class(body.mail_class)
    if mail_class not in _CLASSES:
        raise invalid("E_MAIL_CLASS_UNKNOWN", f"{body.mail_class!r} is not a class this route sends.",
                      "POST /api/mail sends realtime or deferrable mail; correspondence goes through POST /api/sends.",
                      "Send class realtime or deferrable.", mail_class=body.mail_class[:40])
    with node.read() as conn:
        existing = find_by_key(conn, caller.org_id, caller.principal_id, body.idempotency_key)
    if existing is not None:
        return _answer(node, caller, existing, mail_class.value)
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
        return _answer(node, caller, raced, mail_class.value)
    return _answer(node, caller, sealed.id, mail_class.value)


@router.get("/{send_id}")
def get_mail(send_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One send the caller made through this API, in the node's vocabulary."""
    return {"mail": mail_json(node, caller.org_id, caller.principal_id, send_id)}
