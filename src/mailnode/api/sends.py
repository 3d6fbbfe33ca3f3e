"""Routes for sends: seal (``POST /api/sends``), read, cancel, release a policy hold, and retry.

``POST /api/sends`` seals from ``{"draft_id"}`` (the caller's draft, retired by the seal) or from an
inline composition, then wakes the dispatcher (at ``release_at``). ``POST /api/sends/{id}/release-hold``
releases ``awaiting/policy_hold`` (``send.propose``) and wakes the dispatcher too. Codes: see
``outbound.seal``, ``outbound.retry``; an unknown ``state`` filter is ``E_STATE_UNKNOWN`` (422).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from mailnode.api.deps import CallerDep, NodeDep, SendPageDep, id_filter, paged
from mailnode.api.models import Strict
from mailnode.butler import parked
from mailnode.errors import invalid
from mailnode.node import Node
from mailnode.outbound import drafts as drafts_mod
from mailnode.outbound import reads, retry
from mailnode.outbound.seal import SealRequest, seal
from mailnode.outbound.workflows import wake

router = APIRouter(prefix="/api/sends", tags=["sends"])


class SendIn(Strict):
    """Either ``draft_id`` alone, or an inline composition (``mailbox_id``, recipients, subject, body)."""

    draft_id: str | None = None
    mailbox_id: str | None = None
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    bcc: list[str] = Field(default_factory=list)
    subject: str | None = None
    body: str | None = None
    in_reply_to_message_id: str | None = None
    sender_address: str | None = None


class RetryIn(Strict):
    """``mode`` (retry-effect | resend-may-duplicate), and for a resend a reason and the accepted risk."""

    mode: str
    reason: str = ""
    accept_duplicate_risk: bool = False


def _wake(node: Node, send_id: str, release_at: Any) -> None:
    wake(send_id, max(0.0, (release_at - node.clock.now()).total_seconds()))


@router.post("", status_code=201)
def create(body: SendIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Seal a send from a draft or inline; 201 with the manifest's id, state and ``release_at``."""
    if body.draft_id is not None:
        inline = body.model_fields_set - {"draft_id"}
        if inline:
            raise invalid("E_SEND_FROM_DRAFT_AND_INLINE", "Give either draft_id or the composition, not both.",
                          f"The request names draft_id and {', '.join(sorted(inline))}.",
                          "Edit the draft (PUT /api/drafts/{id}) and send {\"draft_id\": ...} alone.")
        with node.read() as conn:
            d = drafts_mod.row_of(conn, org_id=caller.org_id, author_id=caller.principal_id, draft_id=body.draft_id)
        request = SealRequest(mailbox_id=d.mailbox_id, to=d.to_addresses, cc=d.cc_addresses, bcc=d.bcc_addresses,
                              subject=d.subject, body=d.body, in_reply_to_message_id=d.in_reply_to_message_id)
    else:
        if body.mailbox_id is None or body.subject is None or body.body is None:
            raise invalid("E_REQUEST_INVALID", "An inline send needs mailbox_id, subject and body.",
                          "Without a draft_id the composition is given inline.",
                          "Send {\"mailbox_id\", \"to\", \"subject\", \"body\"} or {\"draft_id\"}.")
        request = SealRequest(mailbox_id=body.mailbox_id, to=body.to, cc=body.cc, bcc=body.bcc, subject=body.subject,
                              body=body.body, in_reply_to_message_id=body.in_reply_to_message_id,
                              sender_address=body.sender_address)
    sealed = seal(node, org_id=caller.org_id, author_id=caller.principal_id, request=request, draft_id=body.draft_id)
    _wake(node, sealed.id, sealed.release_at)
    return {"send": sealed.to_json()}


@router.get("")
def list_(node: NodeDep, caller: CallerDep, page: SendPageDep, mailbox_id: str | None = None,
          state: str | None = None) -> dict[str, Any]:
    """Sends of the mailboxes the caller may see, newest first; ``mailbox_id`` and ``state`` filter."""
    wanted = retry.state_of(state) if state else None
    mailbox_id = id_filter(mailbox_id, "mailbox_id", "mbx")
    with node.read() as conn:
        items = reads.list_sends(conn, org_id=caller.org_id, principal_id=caller.principal_id, limit=page.limit,
                                 cursor=page.cursor, mailbox_id=mailbox_id, state=wanted)
    return paged("sends", items, page)


@router.get("/{send_id}")
def get(send_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One send: recipients (submission, delivery, last error), events, the retry offer, the reason in words."""
    with node.read() as conn:
        return {"send": reads.get_send(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                       send_id=send_id)}


@router.post("/{send_id}/cancel")
def cancel(send_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Stop a held or awaiting send (``send.propose``)."""
    with node.begin() as conn:
        retry.cancel(conn, org_id=caller.org_id, principal_id=caller.principal_id, at=node.clock.now(),
                     send_id=send_id)
    # A Butler run that was parked on this send's release was ended with it; its workflow is told now.
    parked.tell(node, caller.org_id, [send_id])
    with node.read() as conn:
        return {"send": reads.get_send(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                       send_id=send_id)}


@router.post("/{send_id}/release-hold")
def release_hold(send_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Release a send a policy holds (``awaiting/policy_hold`` -> ``held``); 200 with the send as it now reads."""
    with node.begin() as conn:
        row = retry.release_hold(conn, org_id=caller.org_id, principal_id=caller.principal_id, at=node.clock.now(),
                                 send_id=send_id)
    if row.state == "held":
        _wake(node, send_id, row.release_at)
    with node.read() as conn:
        return {"send": reads.get_send(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                       send_id=send_id)}


@router.post("/{send_id}/retry")
def retry_send(send_id: str, body: RetryIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
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
    _wake(node, sealed.id, sealed.release_at)
    return {"send": sealed.to_json(), "resend_of": send_id}
