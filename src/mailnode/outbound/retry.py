"""What a person does to a send after sealing: cancel, retry the effect, or resend (spec/outbound.md §1.5).

- ``cancel``: ``held`` or ``awaiting`` → ``cancelled`` (one conditional update; recipients follow; a
  pending approval of the send is settled ``cancelled`` in the same transaction; ``send.cancelled``).
  Needs ``send.propose`` on the mailbox. ``E_SEND_NOT_STOPPABLE`` (409) names the state it is in instead.
  A Butler run parked on the send's release ends ``stopped/send_cancelled`` in the same transaction
  (``butler.parked`` through ``hooks.END_PARKED_RUN``; the caller tells its workflow after the commit,
  ``hooks.TELL_PARKED_RUNS``).
- ``release_hold``: ``awaiting/policy_hold`` → ``held`` (``release_at`` unchanged; recipients follow;
  ``send.released``). Needs ``send.propose`` on the mailbox (the author may release their own). A
  Butler's send moves on to the next gate of the total order, ``awaiting/butler_release_required``,
  because lifting the policy hold is not the person's release the Butler gate asks for.
  ``E_SEND_NOT_ON_POLICY_HOLD`` (409) names the state it is in instead.
- ``retry_effect`` (mode ``retry-effect``): only where ``states.retry_offer`` proves non-acceptance; the
  same manifest and idempotency key go round again: the send returns to ``held`` with ``release_at`` =
  now, recipients that provably never left return to ``held``. ``E_RETRY_NOT_PROVEN`` (409) otherwise,
  ``E_RETRY_RACED`` (409) when the state moved meanwhile. ``send.retried``.
- ``resend_may_duplicate`` (mode ``resend-may-duplicate``): a person, a reason and
  ``accept_duplicate_risk: true``; a new manifest (``resend_of``) sealed through the same seal, to the
  recipients the first one may not have reached, entering the hold window. ``send.resent``. The copy keeps
  the original author and the headers that mark a Butler's mail automatic (``Auto-Submitted: auto-replied``,
  RFC 3834); the resender is the actor (spec/butler.md §8.2: original author, no release gate).
Unknown or undisclosed sends are ``E_NO_SUCH_SEND`` (404) alike. A send whose sealed body retention deleted
is refused by both modes up front, before the offer is read and with nothing written: 410
``E_CONTENT_DELETED`` (spec/transactional.md §5; re-queuing it would only reach a dispatch with no body).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select, update

from mailnode import audit, hooks
from mailnode.authz import holds
from mailnode.errors import MailnodeError, conflict, invalid, not_found
from mailnode.governance import approvals
from mailnode.ids import parse_id, prefix_of
from mailnode.node import Node
from mailnode.outbound.render import attachments_of, written_address
from mailnode.outbound.seal import Sealed, SealRequest, seal
from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.vocabulary.send_states import STOPPABLE, SendState, StateReason, parse_state, retry_offer

RETRY_MODES = ("retry-effect", "resend-may-duplicate")
#: Recipient states that provably never left, which ``retry-effect`` returns to ``held``.
_PROVEN_NOT_TAKEN = (SendState.THROTTLED.value, SendState.REFUSED.value, SendState.SUPPRESSED.value,
                     SendState.HELD.value)


def no_such_send(send_id: str) -> MailnodeError:
    """The 404 for a send that is absent or on a mailbox the caller may not see."""
    return not_found("E_NO_SUCH_SEND", f"No send {send_id}.", fix="List sends with GET /api/sends.",
                     send_id=send_id)


def _proposable(conn: Connection, org_id: str, principal_id: str, send_id: str) -> Any:
    parse_id(send_id, "snd", "send_id")
    row = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id,
                                                    send_manifests.c.org_id == org_id)).first()
    if row is None or not holds(conn, org_id, principal_id, "send.propose", "mailbox", row.mailbox_id):
        raise no_such_send(send_id)
    return row


def ambiguous_count(conn: Connection, send_id: str) -> int:
    """Recipient rows of the send in ``outcome_unknown`` (may have left)."""
    return int(conn.execute(select(func.count()).select_from(send_recipients).where(
        send_recipients.c.manifest_id == send_id,
        send_recipients.c.submission_state == SendState.OUTCOME_UNKNOWN.value)).scalar_one())


def cancel(conn: Connection, *, org_id: str, principal_id: str, at: datetime, send_id: str) -> str:
    """Stop a ``held`` or ``awaiting`` send; returns the new state. Raises ``E_NO_SUCH_SEND``,
    ``E_SEND_NOT_STOPPABLE``."""
    row = _proposable(conn, org_id, principal_id, send_id)
    stoppable = [s.value for s in STOPPABLE]
    done = conn.execute(update(send_manifests)
                        .where(send_manifests.c.id == send_id, send_manifests.c.state.in_(stoppable))
                        .values(state=SendState.CANCELLED.value, state_reason=None, state_at=at))
    if done.rowcount != 1:
        current = conn.execute(select(send_manifests.c.state).where(send_manifests.c.id == send_id)).scalar_one()
        why = ("It was already handed over; it cannot be called back." if current == SendState.HANDED_OVER.value
               else f"It is {current}; only held or awaiting sends can be stopped.")
        raise conflict("E_SEND_NOT_STOPPABLE", f"Send {send_id} cannot be cancelled.", why,
                       f"Read it with GET /api/sends/{send_id}.", send_id=send_id, state=current)
    conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == send_id,
                                               send_recipients.c.submission_state.in_(stoppable))
                 .values(submission_state=SendState.CANCELLED.value, submission_state_at=at))
    # An approval nobody needs any more is settled with its subject, so it leaves the deciders' queue.
    approval_cancelled = approvals.cancel_pending(conn, kind=approvals.SubjectKind.SEND_MANIFEST,
                                                  subject_id=send_id, now=at)
    # A Butler run parked on this send's release will never be released: it ends now (butler.parked).
    ended = hooks.END_PARKED_RUN(conn, org_id=org_id, send_id=send_id, send_state=SendState.CANCELLED.value,
                                 at=at)
    audit.append(conn, org_id=org_id, at=at, action="send.cancelled", actor_id=principal_id, subject=send_id,
                 detail={"from": row.state, "from_reason": row.state_reason, "stopped_before_dispatch": True,
                         "approval_cancelled": approval_cancelled,
                         **({"run_stopped": ended.run_id} if ended is not None else {})})
    return SendState.CANCELLED.value


def release_hold(conn: Connection, *, org_id: str, principal_id: str, at: datetime, send_id: str) -> Any:
    """Release a send from ``awaiting/policy_hold``; returns its row as it now stands.

    One conditional update (state and reason exact), recipients ``awaiting`` follow, ``send.released``
    (detail ``from: policy_hold``). A Butler's send goes to ``awaiting/butler_release_required`` instead
    of ``held`` (see the module docstring). Raises ``E_NO_SUCH_SEND`` (404) and
    ``E_SEND_NOT_ON_POLICY_HOLD`` (409).
    """
    row = _proposable(conn, org_id, principal_id, send_id)
    butler = prefix_of(row.author_id) == "btl"
    state = SendState.AWAITING if butler else SendState.HELD
    reason = StateReason.BUTLER_RELEASE_REQUIRED.value if butler else None
    m = send_manifests.c
    done = conn.execute(update(send_manifests)
                        .where(m.id == send_id, m.state == SendState.AWAITING.value,
                               m.state_reason == StateReason.POLICY_HOLD.value)
                        .values(state=state.value, state_reason=reason, state_at=at, last_error=None))
    if done.rowcount != 1:
        current = conn.execute(select(m.state, m.state_reason).where(m.id == send_id)).one()
        where = f"{current.state}/{current.state_reason}" if current.state_reason else current.state
        raise conflict("E_SEND_NOT_ON_POLICY_HOLD", f"Send {send_id} is not on a policy hold.",
                       f"It is {where}; only awaiting/policy_hold is released here.",
                       f"Read it with GET /api/sends/{send_id}; an approval is decided at "
                       "POST /api/approvals/{id}/decide, a Butler's send released at POST /api/sends/{id}/release.",
                       send_id=send_id, state=current.state, state_reason=current.state_reason)
    conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == send_id,
                                               send_recipients.c.submission_state == SendState.AWAITING.value)
                 .values(submission_state=state.value, submission_state_at=at))
    audit.append(conn, org_id=org_id, at=at, action="send.released", actor_id=principal_id, subject=send_id,
                 detail={"from": StateReason.POLICY_HOLD.value, "to": state.value, "state_reason": reason})
    return conn.execute(select(send_manifests).where(m.id == send_id)).one()


def _refuse_deleted(conn: Connection, send_id: str) -> None:
    """Raise ``E_CONTENT_DELETED`` (410) when retention deleted the send's sealed body (one statement)."""
    deleted = retention_io.content_refusal(conn, source_id=send_id)
    if deleted is not None:
        raise deleted


def retry_effect(conn: Connection, *, org_id: str, principal_id: str, at: datetime, send_id: str) -> str:
    """Put a send whose non-acceptance is proven back to ``held`` (same key); returns ``held``.

    Raises ``E_NO_SUCH_SEND`` (404), ``E_CONTENT_DELETED`` (410: retention deleted its body; checked before
    the offer, nothing written), ``E_RETRY_NOT_PROVEN`` and ``E_RETRY_RACED`` (409).
    """
    row = _proposable(conn, org_id, principal_id, send_id)
    _refuse_deleted(conn, send_id)
    offer = retry_offer(row.state, ambiguous_recipients=ambiguous_count(conn, send_id))
    if offer.mode != "retry-effect":
        raise conflict("E_RETRY_NOT_PROVEN", f"Send {send_id} cannot be retried as the same effect.",
                       f"Its offer is {offer.mode} ({offer.basis}); retry-effect needs proof nothing was taken.",
                       f"Read the offer at GET /api/sends/{send_id}; use resend-may-duplicate if it is offered.",
                       send_id=send_id, offer=offer.to_json())
    done = conn.execute(update(send_manifests)
                        .where(send_manifests.c.id == send_id, send_manifests.c.state == row.state,
                               send_manifests.c.claim_token.is_(None))
                        .values(state=SendState.HELD.value, state_reason=None, state_at=at, release_at=at))
    if done.rowcount != 1:
        raise conflict("E_RETRY_RACED", f"Send {send_id} changed while it was being retried.",
                       "Another worker or person moved it first.", f"Read it again: GET /api/sends/{send_id}.",
                       send_id=send_id)
    conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == send_id,
                                               send_recipients.c.submission_state.in_(_PROVEN_NOT_TAKEN))
                 .values(submission_state=SendState.HELD.value, submission_state_at=at))
    audit.append(conn, org_id=org_id, at=at, action="send.retried", actor_id=principal_id, subject=send_id,
                 detail={"from": row.state, "basis": offer.basis})
    return SendState.HELD.value


def resend_may_duplicate(node: Node, *, org_id: str, principal_id: str, send_id: str, reason: str,
                         accept_duplicate_risk: bool) -> Sealed:
    """Seal a new manifest re-sending ``send_id`` to the recipients it may not have reached.

    Raises ``E_NO_SUCH_SEND`` (404), ``E_RESEND_REASON_REQUIRED`` / ``E_DUPLICATE_RISK_NOT_ACCEPTED``
    (422), ``E_RESEND_NOT_OFFERED`` (409), ``E_RESEND_NEEDS_A_PERSON`` (403), ``E_CONTENT_DELETED`` (410:
    retention deleted the body, spec/transactional.md §5; checked before the offer, and again when the
    body is read), and the seal's codes.
    """
    if prefix_of(principal_id) != "usr":
        raise MailnodeError(code="E_RESEND_NEEDS_A_PERSON", what="Only a person may accept a duplicate risk.",
                            why="resend-may-duplicate is a judgement a person makes and answers for.",
                            fix="Ask someone who may send from the mailbox to resend it.", status=403)
    if not (reason or "").strip():
        raise invalid("E_RESEND_REASON_REQUIRED", "A resend needs a reason.", "The reason was empty.",
                      "Send {\"mode\": \"resend-may-duplicate\", \"reason\": \"...\", "
                      "\"accept_duplicate_risk\": true}.")
    if accept_duplicate_risk is not True:
        raise invalid("E_DUPLICATE_RISK_NOT_ACCEPTED", "The duplicate risk was not accepted.",
                      "A recipient may receive this message twice.",
                      "Send accept_duplicate_risk: true if that is acceptable.")
    with node.read() as conn:
        row = _proposable(conn, org_id, principal_id, send_id)
        _refuse_deleted(conn, send_id)
        offer = retry_offer(row.state, ambiguous_recipients=ambiguous_count(conn, send_id))
        pending = {r.address.lower() for r in conn.execute(
            select(send_recipients.c.address).where(send_recipients.c.manifest_id == send_id,
                                                    send_recipients.c.submission_state != SendState.HANDED_OVER.value)
        ).all()}
    if offer.mode != "resend-may-duplicate":
        raise conflict("E_RESEND_NOT_OFFERED", f"Send {send_id} is not offered for resending.",
                       f"Its offer is {offer.mode} ({offer.basis}).", f"Read the offer at GET /api/sends/{send_id}.",
                       send_id=send_id, offer=offer.to_json())
    body = retention_io.read_content(node, source_id=send_id, digest=row.body_typed_sha256).decode("utf-8")
    # The same mail again: the display names, the HTML part and the attachments (read back from the rendered
    # message, which holds them) go with the text, and application mail's From name, Reply-To, custom
    # headers, tags and metadata with them. The copy keeps the original author (a Butler's stays a
    # Butler's, Auto-Submitted and all); the person who resends is the actor and the authority asked
    # (SealRequest.resent_by).
    html = (retention_io.read_content(node, source_id=send_id, digest=row.body_html_sha256).decode("utf-8")
            if row.body_html_sha256 else None)
    attached = (attachments_of(retention_io.read_content(node, source_id=send_id, digest=row.rendered_sha256))
                if row.attachments else ())
    names = row.display_names or {}
    sealed = seal(node, org_id=org_id, author_id=row.author_id, request=SealRequest(
        mailbox_id=row.mailbox_id, to=[written_address(a, names.get(a.lower())) for a in row.to_addresses],
        cc=[written_address(a, names.get(a.lower())) for a in row.cc_addresses], bcc=row.bcc_addresses,
        subject=row.subject, body=body, in_reply_to_message_id=row.in_reply_to_message_id,
        sender_address=row.envelope_from, resend_of=send_id, resend_reason=reason.strip(), resent_by=principal_id,
        envelope_only=frozenset(pending), html=html, attachments=attached, from_name=row.from_name,
        reply_to=tuple(row.reply_to or ()), headers=tuple((str(n), str(v)) for n, v in (row.custom_headers or [])),
        tags=tuple(row.tags or ()), metadata=tuple((row.metadata or {}).items()),
        # An HTML-only mail (its typed text empty beside an HTML part) is resent HTML-only.
        text_part=not (html is not None and body == "")))
    return sealed


def check_mode(mode: str) -> str:
    """``mode`` if it is a retry mode, else ``E_RETRY_MODE_UNKNOWN`` (422)."""
    if mode not in RETRY_MODES:
        raise invalid("E_RETRY_MODE_UNKNOWN", f"{mode!r} is not a retry mode.", "Modes are a closed list.",
                      "Use retry-effect or resend-may-duplicate.", mode=mode[:50])
    return mode


def state_of(value: str) -> SendState:
    """Parse a ``state`` filter; ``E_STATE_UNKNOWN`` (422) for a value outside the vocabulary."""
    s = parse_state(value)
    if s is None:
        raise invalid("E_STATE_UNKNOWN", f"{value!r} is not a send state.", "States are a closed vocabulary.",
                      "Use one of: " + ", ".join(x.value for x in SendState) + ".", state=value[:50])
    return s
