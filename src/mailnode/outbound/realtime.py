"""Sending transactional mail: the system sender and realtime mail inside its request.

Realtime mail (spec/transactional.md §1, §4, §6) is delivered by the request that creates it: the
provider breaker is read first, counting one provider request per recipient so one call cannot spend past
the realtime ceiling into the reserve (a refusal seals nothing and costs zero provider requests; at most
``budgets.REALTIME_RECIPIENTS_MAX`` recipients per call), then the send
is sealed with ``mail_class=realtime`` and dispatched at once through ``outbound.dispatch.dispatch_one``
(so every hand-over goes through the same recheck, claim and ``provider_io.record``). Anything but a
hand-over is terminal at once (``REALTIME_TERMINAL``) and answers the deliberately vague 503; the
sweeper never retries it. Deferrable mail is only sealed here; the dispatch sweep makes its first hand-over and the
sweeper retries what fails.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import Connection, select, update

from mailnode import audit, budgets
from mailnode.config import Settings
from mailnode.errors import MailnodeError, conflict, invalid
from mailnode.governance import provider_io
from mailnode.node import Node
from mailnode.outbound import dispatch
from mailnode.outbound.seal import Sealed, SealRequest, seal, validate_recipients
from mailnode.schema.mail import mailbox_addresses, mailboxes
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.transports import Transport, make_transport
from mailnode.vocabulary.mail_classes import MailClass
from mailnode.vocabulary.send_states import REASON_WORDS, SendState, StateReason

#: What a caller reads when realtime mail cannot go: the same words whatever stopped it (a quota, a
#: revoked key, an unverified domain), because none of it is the caller's to act on (seed 002).
VAGUE_SEND_UNAVAILABLE = "Mail cannot be sent at the moment. Please try again in a little while."

#: Manifest states a failed realtime send is moved out of: they would otherwise be movable or pending.
_PENDING = (SendState.HELD.value, SendState.AWAITING.value, SendState.THROTTLED.value)


def unavailable(send_id: str | None = None) -> MailnodeError:
    """The vague 503 ``E_SEND_UNAVAILABLE`` (``detail.send_id`` when a send was sealed)."""
    detail = {"send_id": send_id} if send_id else {}
    return MailnodeError(code="E_SEND_UNAVAILABLE", what=VAGUE_SEND_UNAVAILABLE,
                         why="Sending is unavailable for now.", fix="Try again in a little while.",
                         status=503, detail=detail)


@dataclass(frozen=True)
class SystemSender:
    """The mailbox and address system mail is sealed from."""

    mailbox_id: str
    address: str


def system_sender(conn: Connection, org_id: str, settings: Settings) -> SystemSender:
    """The configured ``system_sender`` address's mailbox, or the organisation's oldest mailbox address.

    Raises ``E_SYSTEM_SENDER_MISSING`` (409) when the setting names no address of a node mailbox, or
    the organisation has no mailbox address at all.
    """
    q = (select(mailbox_addresses.c.mailbox_id, mailbox_addresses.c.address)
         .join(mailboxes, mailboxes.c.id == mailbox_addresses.c.mailbox_id).where(mailboxes.c.org_id == org_id))
    if settings.system_sender:
        q = q.where(mailbox_addresses.c.address == settings.system_sender.strip().lower())
    row = conn.execute(q.order_by(mailbox_addresses.c.created_at, mailbox_addresses.c.id).limit(1)).first()
    if row is None:
        raise conflict("E_SYSTEM_SENDER_MISSING", "There is no mailbox address to send the node's own mail from.",
                       "System mail is sealed from an address of a node mailbox (spec/transactional.md §1).",
                       "Set MAILNODE_SYSTEM_SENDER to an address of a mailbox (GET /api/mailboxes lists them).",
                       system_sender=settings.system_sender)
    return SystemSender(str(row.mailbox_id), str(row.address))


def make_terminal(conn: Connection, org_id: str, send_id: str, at: datetime, detail: str) -> None:
    """Make a realtime send that did not go terminal: pending states become ``withheld/realtime_not_retried``;
    an ambiguous one stays ``outcome_unknown`` with that reason (it may have left; it is never retried)."""
    m = send_manifests.c
    reason = StateReason.REALTIME_NOT_RETRIED.value
    moved = conn.execute(update(send_manifests).where(m.id == send_id, m.state.in_(_PENDING))
                         .values(state=SendState.WITHHELD.value, state_reason=reason, state_at=at,
                                 last_error=detail or REASON_WORDS[StateReason.REALTIME_NOT_RETRIED]))
    if moved.rowcount == 1:
        conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == send_id,
                                                   send_recipients.c.submission_state.in_(_PENDING))
                     .values(submission_state=SendState.WITHHELD.value, submission_state_at=at))
        audit.append(conn, org_id=org_id, at=at, action="send.withheld", actor_id=None, subject=send_id,
                     outcome="refused", detail={"reason": reason, "evidence": detail[:300]})
        return
    conn.execute(update(send_manifests).where(m.id == send_id, m.state == SendState.OUTCOME_UNKNOWN.value,
                                              m.lease_until.is_(None))
                 .values(state_reason=reason))


async def deliver_realtime_async(node: Node, sealed_id: str, org_id: str, transport: Transport) -> str | None:
    """Dispatch a sealed realtime send now; returns its state, after making any failure terminal."""
    result = await dispatch.dispatch_one(node, transport, sealed_id, executor_id="realtime")
    if result.state == SendState.HANDED_OVER.value:
        return result.state
    with node.begin() as conn:
        make_terminal(conn, org_id, sealed_id, node.clock.now(), result.detail)
    return result.state


def too_many_realtime_recipients(observed: int) -> MailnodeError:
    """422 ``E_REALTIME_TOO_MANY_RECIPIENTS``: one realtime mail names more than ``REALTIME_RECIPIENTS_MAX``."""
    limit = budgets.REALTIME_RECIPIENTS_MAX
    return invalid("E_REALTIME_TOO_MANY_RECIPIENTS",
                   f"REALTIME_RECIPIENTS_MAX is {limit}; this realtime mail names {observed} recipients.",
                   "Realtime mail is a code for one person, sent inside the request; each recipient is one "
                   "provider request spent from the day's realtime allowance, so one call is bounded.",
                   "Send one realtime mail per person (POST /api/mail, class realtime), or send this one as "
                   "class deferrable.", limit_name="REALTIME_RECIPIENTS_MAX", limit=limit, observed=observed)


def realtime_requests(request: SealRequest) -> int:
    """The provider requests a realtime ``request`` will make: one per distinct recipient (the ``resend``
    transport posts once per recipient). Raises the recipients' 422s (``seal.validate_recipients``) and
    ``E_REALTIME_TOO_MANY_RECIPIENTS`` (422) past ``budgets.REALTIME_RECIPIENTS_MAX``. Pure."""
    count = len(validate_recipients(request.to, request.cc, request.bcc))
    if count > budgets.REALTIME_RECIPIENTS_MAX:
        raise too_many_realtime_recipients(count)
    return count


def send_realtime(node: Node, *, org_id: str, author_id: str, request: SealRequest,
                  transport: Transport | None = None) -> Sealed:
    """Seal ``request`` as realtime mail and hand it over inside this call; the ``Sealed`` on success.

    Order: the recipients (the seal's 422s) and ``realtime_requests`` (``E_REALTIME_TOO_MANY_RECIPIENTS``
    422 past ``budgets.REALTIME_RECIPIENTS_MAX``); the provider breaker for the realtime class counting
    one request per recipient (``provider.may_send(..., requests=n)``; refused: ``E_SEND_UNAVAILABLE``
    503, nothing sealed, no provider request); the seal (its own errors); a gate at seal (domain pause,
    rate breaker) makes it terminal; then ``dispatch_one``; anything but ``handed_over`` is terminal and
    answers the vague 503 with ``detail.send_id``. Call it from synchronous code (it runs its own event loop).
    """
    requests = realtime_requests(request)
    with node.read() as conn:
        decision = provider_io.decide(conn, (transport.capabilities.name if transport else node.settings.transport),
                                      MailClass.REALTIME.value, node.clock.now(), provider_io.limits_of(node.settings),
                                      requests=requests)
    if not decision.allowed:
        raise unavailable()
    sealed = seal(node, org_id=org_id, author_id=author_id,
                  request=_with_class(request, MailClass.REALTIME))
    if sealed.state is not SendState.HELD:
        with node.begin() as conn:
            make_terminal(conn, org_id, sealed.id, node.clock.now(), sealed.last_error or "")
        raise unavailable(sealed.id)

    async def run() -> str | None:
        t = transport or make_transport(node.settings)
        try:
            return await deliver_realtime_async(node, sealed.id, org_id, t)
        finally:
            if transport is None:
                await t.aclose()

    state = asyncio.run(run())
    if state != SendState.HANDED_OVER.value:
        raise unavailable(sealed.id)
    return sealed


def _with_class(request: SealRequest, mail_class: MailClass) -> SealRequest:
    return replace(request, mail_class=mail_class.value)
