"""Sending as a person or application does it: seal a composition (inline or from a draft) and wake the
dispatcher; cancel a send; release a policy hold. The service behind ``POST /api/sends``,
``/cancel`` and ``/release-hold`` and the web composer (issue 16), so both apply one rule.

A composition either names a draft (sealed as the draft holds it, the draft retired by the seal) or is given
inline; a reply (``in_reply_to_message_id``) or forward (``forward_message_id``) may leave out its subject,
and a reply its recipients (``outbound.compose``). Under an idempotency key a repeated request answers the
first send (``outbound.idempotency.seal_once``).

A reply is written by whoever holds the case: a reply (inline or from a draft) into a conversation whose
open case someone else holds is refused with ``E_REPLY_CASE_HELD`` (409, naming the holder) before anything
is sealed, the rule the composer page locks its fields by (``mail.presence.collision``). The sender takes the
case over first (``POST /api/cases/{id}/claim {"take": true}``, the page's *Take over*). A replayed request
(the same idempotency key) answers its first send and is not refused. Forwards and new messages are not
answers to the correspondent and are not checked.

Codes: ``E_SEND_FROM_DRAFT_AND_INLINE`` (422), ``E_REQUEST_INVALID`` (422), ``E_REPLY_CASE_HELD`` (409), and
those of ``outbound.seal``, ``outbound.compose``, ``outbound.retry``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from sqlalchemy import Connection, select

from mailnode import hooks
from mailnode.errors import MailnodeError, conflict, invalid
from mailnode.mail import presence
from mailnode.node import Node
from mailnode.outbound import drafts as drafts_mod
from mailnode.outbound import reads, retry
from mailnode.outbound.compose import Ask, compose
from mailnode.outbound.content import decode_attachment
from mailnode.outbound.idempotency import DraftGone, MailFingerprint, Replay, fingerprint_of, seal_once
from mailnode.outbound.seal import SealRequest, seal, sealed_json
from mailnode.outbound.workflows import wake
from mailnode.schema.mail_messages import cases, messages


@dataclass(frozen=True)
class Composition:
    """What the author asked to send. ``fields_given`` names the fields the request set (besides
    ``draft_id``), so a draft with inline fields is refused rather than silently merged."""

    draft_id: str | None = None
    mailbox_id: str | None = None
    to: tuple[str, ...] = ()
    cc: tuple[str, ...] = ()
    bcc: tuple[str, ...] = ()
    subject: str | None = None
    body: str | None = None
    in_reply_to_message_id: str | None = None
    sender_address: str | None = None
    html: str | None = None
    #: ``(filename, content_type, content_base64)`` each, decoded (``content.decode_attachment``) only once
    #: the composition is known to be complete.
    attachments: tuple[tuple[str, str, str], ...] = ()
    reply_all: bool = False
    quote: bool = False
    forward_message_id: str | None = None
    forward_as: Literal["inline", "attachment"] = "inline"
    fields_given: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Submitted:
    """A submitted send: ``send`` as ``POST /api/sends`` answers it, and whether it replayed an earlier one."""

    send: dict[str, Any]
    replayed: bool


def _from_draft(d: Any) -> SealRequest:
    return SealRequest(mailbox_id=d.mailbox_id, to=d.to_addresses, cc=d.cc_addresses, bcc=d.bcc_addresses,
                       subject=d.subject, body=d.body, in_reply_to_message_id=d.in_reply_to_message_id)


def wake_at(node: Node, send_id: str, release_at: Any) -> None:
    """Wake the dispatcher for ``send_id`` at ``release_at`` (now when it is past)."""
    wake(send_id, max(0.0, (release_at - node.clock.now()).total_seconds()))


def refuse_reply_into_held_case(node: Node, *, org_id: str, author_id: str, in_reply_to_message_id: str | None
                                ) -> None:
    """Raise ``E_REPLY_CASE_HELD`` (409) when ``in_reply_to_message_id``'s conversation has an open case that
    someone other than ``author_id`` holds (``mail.presence.read_collision``'s ``locks_composer``, the
    composer page's rule); nothing for a message the author cannot see (``compose`` and ``seal`` refuse
    that in their own words) or a conversation nobody else holds."""
    if in_reply_to_message_id is None:
        return
    with node.read() as conn:
        conversation_id = conn.execute(select(messages.c.conversation_id).where(
            messages.c.id == in_reply_to_message_id, messages.c.org_id == org_id)).scalar_one_or_none()
        if conversation_id is None:
            return
        try:
            found = presence.read_collision(conn, org_id=org_id, principal_id=author_id,
                                            conversation_id=conversation_id, at=node.clock.now())
        except MailnodeError as unseen:
            if unseen.code == "E_NO_SUCH_CONVERSATION":
                return  # the caller sees no case of it: seal refuses the reply in its own words
            raise
        if not found.locks_composer:
            return
        held = conn.execute(select(cases.c.id, cases.c.assignee_id, cases.c.assigned_at).where(
            cases.c.conversation_id == conversation_id, cases.c.org_id == org_id, cases.c.state == "open")
            .order_by(cases.c.opened_at.desc())).first()
    holder = found.holder or "Someone else"
    case_id = held.id if held is not None else None
    raise conflict("E_REPLY_CASE_HELD", f"{holder} holds this conversation's case; your reply was not sent.",
                   "The person who holds a case is the one answering it, so two people do not answer the same "
                   "mail at once.",
                   f"Take the case over first (POST /api/cases/{case_id}/claim with {{\"take\": true}}, or Take "
                   f"over on the conversation's page), or leave the answer to {holder}; then send again.",
                   case_id=case_id, holder_id=held.assignee_id if held is not None else None, holder=found.holder,
                   conversation_id=conversation_id)


def submit(node: Node, *, org_id: str, author_id: str, c: Composition, idempotency_key: str | None) -> Submitted:
    """Seal ``c`` as ``author_id`` and wake the dispatcher at its ``release_at``; see the module docstring."""
    draft_id = c.draft_id
    if draft_id is not None:
        if c.fields_given:
            raise invalid("E_SEND_FROM_DRAFT_AND_INLINE", "Give either draft_id or the composition, not both.",
                          f"The request names draft_id and {', '.join(sorted(c.fields_given))}.",
                          "Edit the draft (PUT /api/drafts/{id}) and send {\"draft_id\": ...} alone.")

        def asked(conn: Connection) -> MailFingerprint | DraftGone:
            try:
                d = drafts_mod.row_of(conn, org_id=org_id, author_id=author_id, draft_id=draft_id)
            except MailnodeError as gone:
                return DraftGone(draft_id, gone)
            return fingerprint_of(_from_draft(d))

        def sealing() -> Any:
            with node.read() as conn:
                d = drafts_mod.row_of(conn, org_id=org_id, author_id=author_id, draft_id=draft_id)
            refuse_reply_into_held_case(node, org_id=org_id, author_id=author_id,
                                        in_reply_to_message_id=d.in_reply_to_message_id)
            return seal(node, org_id=org_id, author_id=author_id,
                        request=replace(_from_draft(d), idempotency_key=idempotency_key), draft_id=draft_id)
    else:
        answering = c.in_reply_to_message_id is not None or c.forward_message_id is not None
        if c.mailbox_id is None or (not answering and (c.subject is None or c.body is None)):
            raise invalid("E_REQUEST_INVALID", "An inline send needs mailbox_id, subject and body.",
                          "Without a draft_id the composition is given inline (a reply or forward may leave "
                          "out subject and body).",
                          "Send {\"mailbox_id\", \"to\", \"subject\", \"body\"} or {\"draft_id\"}.")
        decoded = tuple(decode_attachment(i, name, ctype, b64) for i, (name, ctype, b64) in enumerate(c.attachments))
        asked_for = SealRequest(mailbox_id=c.mailbox_id, to=list(c.to), cc=list(c.cc), bcc=list(c.bcc),
                                subject=c.subject or "", body=c.body or "",
                                in_reply_to_message_id=c.in_reply_to_message_id,
                                sender_address=c.sender_address, idempotency_key=idempotency_key,
                                html=c.html, attachments=decoded)
        request = compose(node, org_id=org_id, author_id=author_id, ask=Ask(
            request=asked_for, subject_given=c.subject is not None, reply_all=c.reply_all, quote=c.quote,
            forward_message_id=c.forward_message_id, forward_as=c.forward_as))

        def asked(conn: Connection) -> MailFingerprint | DraftGone:
            return fingerprint_of(request)

        def sealing() -> Any:
            refuse_reply_into_held_case(node, org_id=org_id, author_id=author_id,
                                        in_reply_to_message_id=request.in_reply_to_message_id)
            return seal(node, org_id=org_id, author_id=author_id, request=request)

    done = seal_once(node, org_id=org_id, author_id=author_id, key=idempotency_key, asked=asked,
                     seal=sealing, where="Idempotency-Key", read_at="GET /api/sends/{id}")
    if isinstance(done, Replay):
        with node.read() as conn:
            return Submitted(sealed_json(conn, done.send_id), replayed=True)
    wake_at(node, done.id, done.release_at)
    return Submitted(done.to_json(), replayed=False)


def cancel(node: Node, *, org_id: str, principal_id: str, send_id: str) -> dict[str, Any]:
    """Stop a held or awaiting send (``send.propose``; ``outbound.retry.cancel``'s codes); ends a Butler run
    parked on its release. Returns the send as ``GET /api/sends/{id}`` reads it now."""
    with node.begin() as conn:
        retry.cancel(conn, org_id=org_id, principal_id=principal_id, at=node.clock.now(), send_id=send_id)
    # A Butler run that was parked on this send's release was ended with it; its workflow is told now.
    hooks.TELL_PARKED_RUNS(node, org_id, [send_id])
    with node.read() as conn:
        return reads.get_send(conn, org_id=org_id, principal_id=principal_id, send_id=send_id)


def release_hold(node: Node, *, org_id: str, principal_id: str, send_id: str) -> dict[str, Any]:
    """Release ``awaiting/policy_hold`` (``outbound.retry.release_hold``'s codes) and wake the dispatcher when
    it is ``held``. Returns the send as ``GET /api/sends/{id}`` reads it now."""
    with node.begin() as conn:
        row = retry.release_hold(conn, org_id=org_id, principal_id=principal_id, at=node.clock.now(),
                                 send_id=send_id)
    if row.state == "held":
        wake_at(node, send_id, row.release_at)
    with node.read() as conn:
        return reads.get_send(conn, org_id=org_id, principal_id=principal_id, send_id=send_id)
