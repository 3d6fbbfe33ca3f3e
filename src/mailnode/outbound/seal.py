"""The seal: turn a composition into an immutable send manifest (spec/outbound.md §1.6; issue 4).

Order, each step refusing before anything is stored:
1. authority: the author holds ``send.propose`` on the mailbox, else 404 ``E_MAY_NOT_SEND_AS_MAILBOX``
   (so a mailbox's existence is not disclosed);
2. the From address: the mailbox's address (``E_SENDER_NOT_ON_MAILBOX`` 404, ``E_SENDER_AMBIGUOUS`` 409,
   ``E_MAILBOX_HAS_NO_ADDRESS`` 409);
3. recipients validated and normalised (``mailnode.addresses``: ``E_ADDRESS_MALFORMED``,
   ``E_HEADER_INJECTION``, 422), de-duplicated case-insensitively (first mention wins, To, Cc, Bcc);
   ``E_NO_RECIPIENTS`` / ``E_TOO_MANY_RECIPIENTS`` (422); before them the Subject and the body
   (``check_composition``): a line break or control character in the Subject ``E_HEADER_INJECTION``, a lone
   surrogate anywhere or a NUL in the body ``E_TEXT_MALFORMED`` (422), a Subject over
   ``budgets.SEND_SUBJECT_MAX_CHARS`` ``E_SUBJECT_TOO_LONG`` (422), a body over ``budgets.SEND_BODY_MAX_BYTES``
   ``E_BODY_TOO_LARGE`` (413); then the HTML part and attachments (``outbound.content.check_content``:
   ``E_TOO_MANY_ATTACHMENTS``, ``E_ATTACHMENT_MALFORMED`` 422, ``E_SEND_TOO_LARGE`` 413), then application
   mail's own fields (``outbound.mail_fields.check_extras``: From display name, Reply-To, custom headers,
   tags, metadata, and a body in text or HTML; 422 codes there). A recipient may
   carry a display name (``addresses.parse_recipient``), kept in ``display_names`` and written in the headers;
4. a reply parent the author can read (``mailbox.content.read``), else ``E_NO_SUCH_PARENT`` (404);
5. the bytes rendered (``outbound.render``), and the typed body, the normalised body, the HTML part (when
   given) and the rendered message written to the evidence store (attachments live in the rendered message;
   the manifest lists their names, types, sizes and digests);
6. one transaction: governance's facts (``governance.gatefacts.seal_facts``: the policy outcome and its
   versions, the approval plan, the domain pause, the rate breakers; 2 statements, 3-4 when approval is
   required), the gates in their total order (``outbound.gates.decide``), then the conversation (the
   parent's, or a new one), the manifest (its id is the effect key; ``policy_outcome`` and
   ``policy_versions`` bound on it for the hand-over recheck), one recipient row per distinct address,
   the Message-ID recorded for threading, the search document (``search.index``), ``send.sealed`` in the audit trail,
   and the retired draft when sealing from one. In the same transaction: a send sealed
   ``awaiting/policy_approval_required`` gets its approval request (``approval.requested``), and one sealed
   ``awaiting/breaker_*`` its ``send.rate_limited`` (``at: seal``). A send sealed ``withheld`` writes no approval
   (spec/outbound.md Part A 1), and a rate gate applies only over an otherwise-allowed send (it ranks last but
   ``allow``).

The suppression list (``outbound.suppression``) is read first in that transaction (1 statement): a recipient
on it is written ``suppressed`` with its ``suppression_reason`` and the others proceed; a send all of whose
recipients are on it is sealed ``suppressed`` (``seal_state``), with no approval and no rate entry.

Governance's facts are read inside the writing transaction, so the approval plan, the pause and the
breaker readings are the ones the manifest is written under.

``release_at`` = seal time + the mailbox's hold window (``budgets.SEND_HOLD_WINDOW_DEFAULT_SECONDS`` when
unset; 0 = immediately movable). A Butler author's mail carries ``Auto-Submitted: auto-replied`` and
waits for a person's release; the node's own notices carry ``auto-generated``.

Mail classes (spec/transactional.md §1; ``vocabulary.mail_classes``): every manifest carries ``mail_class``,
``correspondence`` unless the request names ``realtime`` or ``deferrable`` (an unknown name is
``E_MAIL_CLASS_UNKNOWN``, 422). Only correspondence meets policy, approvals and the Butler release, and
waits out the hold window; every class meets the domain pause and the rate breakers. Correspondence also
reads the provider breaker here (``awaiting/provider_unavailable`` when it refuses the class, drained by
``movable_now`` when it reopens); realtime mail asks the breaker before it is sealed
(``outbound.realtime.send_realtime``) and deferrable mail at each hand-over (the dispatch sweep's first, the
sweeper's retries). System mail (``system``: the node's own verification codes and notices) is sealed from
the configured system sender without an authority check, carries ``Auto-Submitted: auto-generated``, and is
never correspondence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, delete, func, select

from mailnode import audit, budgets
from mailnode.addresses import (
    NormalisedAddress,
    parse_recipient,
    reject_body_fault,
    reject_header_injection,
)
from mailnode.authz import holds
from mailnode.errors import MailnodeError, conflict, invalid, not_found
from mailnode.governance import breakers, gatefacts, provider_io
from mailnode.governance.approvals import SubjectKind
from mailnode.governance.provider import ProviderStatus, may_send
from mailnode.ids import new_id, parse_id, prefix_of
from mailnode.mail.threading import record_message_id, start_conversation
from mailnode.node import Node
from mailnode.outbound import gates, mail_fields, suppression
from mailnode.outbound.content import check_content
from mailnode.outbound.parents import may_reply_to
from mailnode.outbound.render import (
    AutoSubmitted,
    OutboundAttachment,
    OutboundMessage,
    bound_references,
    make_message_id,
    normalise_body,
    render,
    sha256_hex,
)
from mailnode.schema.governance import approvals
from mailnode.schema.governance_provider import provider_status
from mailnode.schema.mail import mailbox_addresses, mailboxes
from mailnode.schema.mail_messages import messages
from mailnode.schema.outbound import drafts, send_manifests, send_metadata, send_recipients, send_tags
from mailnode.search import documents as search_documents
from mailnode.search import index as search_index
from mailnode.vocabulary.mail_classes import DEFAULT_MAIL_CLASS, MailClass, parse_mail_class
from mailnode.vocabulary.send_states import SendState, StateReason

#: Recipient kinds in the order their first mention wins.
KINDS: tuple[str, ...] = ("to", "cc", "bcc")


@dataclass(frozen=True)
class SealRequest:
    """A composition to seal. Addresses are as typed; the seal validates them.

    Attributes:
        mailbox_id: the mailbox that sends (``mbx_...``); From is its address.
        to, cc, bcc: recipient addresses (at least one in all).
        subject: the Subject (one line of at most ``budgets.SEND_SUBJECT_MAX_CHARS`` characters).
        body: the typed plain-text body (at most ``budgets.SEND_BODY_MAX_BYTES`` UTF-8 bytes).
        in_reply_to_message_id: the ``msg_...`` answered, or None for a new conversation.
        sender_address: which of the mailbox's addresses to send from when it has several.
        notice: the node's own notice (``Auto-Submitted: auto-generated``).
        resend_of: the manifest this one re-sends (set by ``retry.resend_may_duplicate`` only), with
            ``resend_reason``; ``send.resent`` is audited in the seal's transaction.
        resent_by: the person who resends (with ``resend_of``). The copy keeps the original author (and so
            its ``Auto-Submitted``, RFC 3834 §5, when a Butler wrote it), while the authority asked is the
            resender's ``send.propose`` and the actor of ``send.sealed``/``send.resent`` is the resender. A
            resent Butler send meets no Butler release gate: resending it is a person's release.
        envelope_only: when set, recipient rows are made only for these lower-cased addresses (a resend
            to the recipients a first attempt may not have reached); the headers stay as composed.
        mail_class: ``correspondence`` (default), ``realtime`` or ``deferrable`` (``vocabulary.mail_classes``);
            ``notice`` implies ``deferrable``.
        system: the node's own mail (``sender_address`` is the system sender): no authority check,
            ``Auto-Submitted: auto-generated``; never correspondence.
        idempotency_key: the caller's key, unique per (organisation, author); written on the manifest.
        html: an HTML alternative to ``body`` (rendered multipart/alternative), or None.
        attachments: files attached after the body (``outbound.content`` bounds them).
        from_name: the From display name (application mail's ``from``), or None.
        reply_to: Reply-To addresses as typed (``outbound.mail_fields.check_reply_to``).
        headers: custom headers ``(name, value)`` (``outbound.mail_fields.check_headers``: an allowlist).
        tags: the application's labels (``outbound.mail_fields.check_tags``); never written into the mail.
        metadata: ``(key, value)`` pairs (``outbound.mail_fields.check_metadata``); never written into the mail.
        text_part: False for HTML-only mail (``body`` is then empty and ``html`` the one part).
    """

    mailbox_id: str
    to: Sequence[str]
    subject: str
    body: str
    cc: Sequence[str] = ()
    bcc: Sequence[str] = ()
    in_reply_to_message_id: str | None = None
    sender_address: str | None = None
    notice: bool = False
    resend_of: str | None = None
    resend_reason: str | None = None
    resent_by: str | None = None
    envelope_only: frozenset[str] | None = field(default=None)
    mail_class: str = DEFAULT_MAIL_CLASS.value
    system: bool = False
    idempotency_key: str | None = None
    html: str | None = None
    attachments: tuple[OutboundAttachment, ...] = ()
    from_name: str | None = None
    reply_to: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()
    text_part: bool = True


@dataclass(frozen=True)
class Sealed:
    """What the seal made."""

    id: str
    state: SendState
    state_reason: str | None
    release_at: datetime
    rfc_message_id: str
    conversation_id: str
    recipients: int
    policy_outcome: str | None = None
    approval_id: str | None = None
    last_error: str | None = None
    mail_class: str = DEFAULT_MAIL_CLASS.value

    def to_json(self) -> dict[str, Any]:
        """The API shape (the full send is at ``GET /api/sends/{id}``)."""
        return {"id": self.id, "state": self.state.value, "state_reason": self.state_reason,
                "release_at": self.release_at.isoformat(), "rfc_message_id": self.rfc_message_id,
                "conversation_id": self.conversation_id, "recipients": self.recipients,
                "policy_outcome": self.policy_outcome, "approval_id": self.approval_id,
                "last_error": self.last_error, "mail_class": self.mail_class}


def sealed_json(conn: Connection, send_id: str) -> dict[str, Any]:
    """``Sealed.to_json``'s shape for a stored send, as it reads now (a replayed seal answers with it):
    ``recipients`` is its recipient rows' count, ``approval_id`` its approval's id or None. Three reads."""
    m = send_manifests.c
    row = conn.execute(select(send_manifests).where(m.id == send_id)).one()
    count = conn.execute(select(func.count()).select_from(send_recipients)
                         .where(send_recipients.c.manifest_id == send_id)).scalar_one()
    approval_id = conn.execute(select(approvals.c.id).where(
        approvals.c.subject_kind == SubjectKind.SEND_MANIFEST.value, approvals.c.subject_id == send_id)).scalar()
    return {"id": row.id, "state": row.state, "state_reason": row.state_reason,
            "release_at": row.release_at.isoformat(), "rfc_message_id": row.rfc_message_id,
            "conversation_id": row.conversation_id, "recipients": int(count), "policy_outcome": row.policy_outcome,
            "approval_id": approval_id, "last_error": row.last_error, "mail_class": row.mail_class}


#: ``last_error`` of a send every recipient of which is on the suppression list.
ALL_SUPPRESSED_WORDS = "Every recipient is on the organisation's suppression list (GET /api/suppressions)."


def seal_state(decided: SendState, recipients: int, suppressed: int) -> SendState:
    """The state a send is sealed in: ``suppressed`` when all of its ``recipients`` (at least one) are on the
    suppression list, whatever the gates decided (the list says never, for every recipient); else the gates'
    ``decided`` state (the suppressed recipients' rows are ``suppressed`` either way). Pure."""
    if recipients > 0 and suppressed >= recipients:
        return SendState.SUPPRESSED
    return decided


def may_not_send(mailbox_id: str) -> MailnodeError:
    """The 404 for an author without ``send.propose`` (absent and not-yours answer alike)."""
    return not_found("E_MAY_NOT_SEND_AS_MAILBOX", f"You may not send from mailbox {mailbox_id}.",
                     fix="Ask an administrator for send.propose on the mailbox (POST /api/access).",
                     mailbox_id=mailbox_id)


def no_such_parent(message_id: str) -> MailnodeError:
    """The 404 for a reply parent the author cannot read."""
    return not_found("E_NO_SUCH_PARENT", f"No message {message_id} to reply to.",
                     fix="Reply to a message listed by GET /api/mailboxes/{id}/messages.", message_id=message_id)


def choose_sender(addresses: list[str], wanted: str | None, mailbox_id: str) -> str:
    """The From address among the mailbox's ``addresses`` (oldest first).

    Raises ``E_SENDER_NOT_ON_MAILBOX`` (404), ``E_SENDER_AMBIGUOUS`` (409), ``E_MAILBOX_HAS_NO_ADDRESS`` (409).
    """
    if wanted:
        for a in addresses:
            if a.lower() == wanted.strip().lower():
                return a
        raise not_found("E_SENDER_NOT_ON_MAILBOX", f"{wanted} is not an address of mailbox {mailbox_id}.",
                        fix="Name one of the addresses GET /api/mailboxes/{id} lists.", sender_address=wanted)
    if not addresses:
        raise conflict("E_MAILBOX_HAS_NO_ADDRESS", f"Mailbox {mailbox_id} has no address to send from.",
                       "From is always an address of the sending mailbox.",
                       "Add one: PATCH /api/mailboxes/{id} with addresses.", mailbox_id=mailbox_id)
    if len(addresses) > 1:
        raise conflict("E_SENDER_AMBIGUOUS", f"Mailbox {mailbox_id} has {len(addresses)} addresses.",
                       "With several addresses the seal does not guess which one is From.",
                       "Send again with sender_address set to one of: " + ", ".join(addresses) + ".",
                       mailbox_id=mailbox_id, addresses=addresses)
    return addresses[0]


def subject_too_long(observed: int) -> MailnodeError | None:
    """The 422 ``E_SUBJECT_TOO_LONG`` for a Subject of ``observed`` characters over
    ``budgets.SEND_SUBJECT_MAX_CHARS``; None within it. Pure."""
    limit = budgets.SEND_SUBJECT_MAX_CHARS
    if observed <= limit:
        return None
    return MailnodeError(code="E_SUBJECT_TOO_LONG",
                         what=f"SEND_SUBJECT_MAX_CHARS is {limit}; this Subject has {observed} characters.",
                         why="A Subject is one line: RFC 5322 §2.1.1 bounds a line at 998 characters, and no "
                             "reader shows more.",
                         fix=f"Shorten the subject to at most {limit} characters (put the rest in the body) and "
                             "send again.",
                         status=422, detail={"limit_name": "SEND_SUBJECT_MAX_CHARS", "limit": limit,
                                             "observed": observed})


def body_too_large(observed: int) -> MailnodeError | None:
    """The 413 ``E_BODY_TOO_LARGE`` for a body of ``observed`` UTF-8 bytes over ``budgets.SEND_BODY_MAX_BYTES``;
    None within it. Pure."""
    limit = budgets.SEND_BODY_MAX_BYTES
    if observed <= limit:
        return None
    return MailnodeError(code="E_BODY_TOO_LARGE",
                         what=f"SEND_BODY_MAX_BYTES is {limit} bytes; this body is {observed} bytes (UTF-8).",
                         why="The rendered message must fit what this node and common receivers accept "
                             f"({budgets.MESSAGE_MAX_BYTES} bytes), and encoding it for mail may triple it.",
                         fix=f"Shorten the body to at most {limit} bytes, or link to the content instead of "
                             "sending it, and send again.",
                         status=413, detail={"limit_name": "SEND_BODY_MAX_BYTES", "limit": limit,
                                             "observed": observed})


def check_composition(subject: str, body: str) -> None:
    """Refuse a Subject or body that cannot be sealed, before anything is read or written.

    In order: ``E_HEADER_INJECTION`` / ``E_TEXT_MALFORMED`` for the Subject (``addresses.header_fault``),
    ``E_SUBJECT_TOO_LONG`` (422, over ``budgets.SEND_SUBJECT_MAX_CHARS`` characters), ``E_TEXT_MALFORMED`` for
    the body (``addresses.body_fault``: NUL, a lone surrogate), ``E_BODY_TOO_LARGE`` (413, over
    ``budgets.SEND_BODY_MAX_BYTES`` UTF-8 bytes). Errors name the body ``body`` on every route (the field is
    ``text`` on ``POST /api/mail``).
    Pure. The same checks guard drafts (``outbound.drafts``).
    """
    reject_header_injection("Subject", subject)
    refusal = subject_too_long(len(subject))
    if refusal is not None:
        raise refusal
    reject_body_fault("body", body)
    # A character is at least one byte: a body over the limit in characters needs no encoding to be refused.
    refusal = body_too_large(len(body) if len(body) > budgets.SEND_BODY_MAX_BYTES else len(body.encode("utf-8")))
    if refusal is not None:
        raise refusal


def validate_recipients(to: Sequence[str], cc: Sequence[str], bcc: Sequence[str]
                        ) -> list[tuple[str, NormalisedAddress]]:
    """Normalise every recipient; returns distinct ``(kind, address)`` pairs, first mention winning.

    An address may carry a display name (``addresses.parse_recipient``); the first mention's name is kept.
    Raises ``E_HEADER_INJECTION`` / ``E_ADDRESS_MALFORMED`` naming the address, ``E_NO_RECIPIENTS`` and
    ``E_TOO_MANY_RECIPIENTS`` (``budgets.SEND_RECIPIENTS_MAX``), all 422.
    """
    seen: set[str] = set()
    out: list[tuple[str, NormalisedAddress]] = []
    for kind, values in zip(KINDS, (to, cc, bcc)):
        for value in values:
            addr = parse_recipient(value, kind)
            if addr.key not in seen:
                seen.add(addr.key)
                out.append((kind, addr))
    if not out:
        raise invalid("E_NO_RECIPIENTS", "The send names no recipient.", "A send needs at least one To, Cc or Bcc.",
                      "Add a recipient and seal again.")
    if len(out) > budgets.SEND_RECIPIENTS_MAX:
        raise MailnodeError(code="E_TOO_MANY_RECIPIENTS",
                            what=f"SEND_RECIPIENTS_MAX is {budgets.SEND_RECIPIENTS_MAX}; this send names {len(out)}.",
                            why="One send carries a bounded number of recipients.",
                            fix="Split the recipients over several sends.", status=422,
                            detail={"limit_name": "SEND_RECIPIENTS_MAX", "limit": budgets.SEND_RECIPIENTS_MAX,
                                    "observed": len(out)})
    return out


def _msg_id(value: str | None) -> str | None:
    key = (value or "").strip().strip("<>")
    if not key or any(c in key for c in "<> \t\r\n") or key.count("@") != 1:
        return None
    return f"<{key}>"


@dataclass(frozen=True)
class _Facts:
    hold_window: int
    sender: str
    parent: Any | None
    provider: ProviderStatus


def class_of(request: SealRequest) -> MailClass:
    """The ``MailClass`` a request seals as; ``E_MAIL_CLASS_UNKNOWN`` (422) for a name mailnode does not know,
    and ``E_SYSTEM_MAIL_CLASS`` (422) for system mail asked to be correspondence."""
    value = MailClass.DEFERRABLE.value if request.notice else request.mail_class
    mail_class = parse_mail_class(value)
    if mail_class is None:
        raise invalid("E_MAIL_CLASS_UNKNOWN", f"{value!r} is not a mail class.",
                      "A send is correspondence, realtime or deferrable (spec/transactional.md §1).",
                      "Send class correspondence, realtime or deferrable.", mail_class=str(value)[:40])
    if (request.system or request.notice) and mail_class is MailClass.CORRESPONDENCE:
        raise invalid("E_SYSTEM_MAIL_CLASS", "System mail cannot be correspondence.",
                      "Policy and approvals govern people's words; the node's own mail is realtime or deferrable.",
                      "Seal system mail as realtime or deferrable.")
    return mail_class


def _read_facts(conn: Connection, org_id: str, author_id: str, req: SealRequest, transport: str) -> _Facts:
    parse_id(req.mailbox_id, "mbx", "mailbox_id")
    system = req.system or req.notice
    # A resend is the resender's act: their send.propose is the authority asked (the author's may be gone).
    acting = req.resent_by or author_id
    if not system and not holds(conn, org_id, acting, "send.propose", "mailbox", req.mailbox_id):
        raise may_not_send(req.mailbox_id)
    # The provider breaker's row rides on the mailbox read (a LEFT JOIN on the transport's name), so the
    # provider gate costs the seal no statement (budgets.SEAL_MAX_STATEMENTS).
    ps = provider_status.c
    rows = conn.execute(
        select(mailboxes.c.hold_window_seconds, mailbox_addresses.c.address, *[c.label(f"ps_{c.name}") for c in ps])
        .select_from(mailboxes.outerjoin(mailbox_addresses, mailbox_addresses.c.mailbox_id == mailboxes.c.id)
                     .outerjoin(provider_status, ps.transport == transport))
        .where(mailboxes.c.id == req.mailbox_id, mailboxes.c.org_id == org_id)
        .order_by(mailbox_addresses.c.created_at, mailbox_addresses.c.id)
    ).all()
    if not rows:
        raise may_not_send(req.mailbox_id)
    hold = rows[0].hold_window_seconds
    sender = choose_sender([r.address for r in rows if r.address], req.sender_address, req.mailbox_id)
    parent = None
    if req.in_reply_to_message_id is not None:
        parse_id(req.in_reply_to_message_id, "msg", "in_reply_to_message_id")
        parent = conn.execute(select(messages.c.id, messages.c.mailbox_id, messages.c.conversation_id,
                                     messages.c.rfc_message_id, messages.c.references)
                              .where(messages.c.id == req.in_reply_to_message_id,
                                     messages.c.org_id == org_id)).first()
        if parent is None or not any(
                may_reply_to(conn, org_id=org_id, author_id=who, parent_id=req.in_reply_to_message_id,
                             parent_mailbox_id=parent.mailbox_id) for who in dict.fromkeys((author_id, acting))):
            raise no_such_parent(req.in_reply_to_message_id)
    first = rows[0]
    stored = (SimpleNamespace(**{c.name: getattr(first, f"ps_{c.name}") for c in ps})
              if first.ps_transport is not None else None)
    provider = provider_io.from_row(transport, stored)
    return _Facts(budgets.SEND_HOLD_WINDOW_DEFAULT_SECONDS if hold is None else int(hold), sender, parent, provider)


def _caller_facts(facts: gates.GateFacts | None) -> gates.GateFacts:
    """The caller's facts, refused when they name a fact the seal reads itself (a defect, not a gate)."""
    base = facts or gates.GateFacts()
    owned = gates.GateFacts(provider_unavailable=base.provider_unavailable)
    if base != owned:
        raise MailnodeError(code="E_SEAL_FACTS_OWNED", what="The seal was handed governance facts.",
                            why="Policy, approval, the domain pause and the rate breakers are read by the seal "
                                "itself (governance.gatefacts), inside its transaction; a caller's copy could "
                                "disagree with the rows the manifest is written under.",
                            fix="Pass only provider_unavailable; this is a defect in the caller, report it.",
                            status=500, detail={"facts": repr(base)})
    return base


def _seal_error(decision: gates.Decision, gov: gatefacts.GovernanceFacts, domain: str) -> str | None:
    """``last_error`` of a freshly sealed send: the specifics behind its reason, or None for ``held``."""
    reason = decision.reason
    if reason is StateReason.POLICY_DENIED:
        versions = ", ".join(gov.audit_detail()["policy_versions"]) or "no published version"
        return f"Denied by policy ({versions}); publish a new version to change it (POST /api/policies/{{id}}/draft)."
    if reason is StateReason.APPROVAL_UNSATISFIABLE:
        return gov.shortfall_sentence()
    if reason is StateReason.DOMAIN_PAUSED and gov.domain_pause is not None:
        p = gov.domain_pause
        return (f"Sending from {domain} is paused since {p.placed_at.isoformat()}: {p.reason} "
                f"(lift: POST /api/domain-pauses/{p.id}/lift).")
    if decision.gate is gates.Gate.RATE_GATE and gov.breakers.gate is not None:
        return gov.breakers.gate.sentence
    return None


def seal(node: Node, *, org_id: str, author_id: str, request: SealRequest, draft_id: str | None = None,
         facts: gates.GateFacts | None = None) -> Sealed:
    """Seal ``request`` as ``author_id`` (a user, a Butler or an application) and return the manifest.

    ``facts`` carries what a later layer evaluated that the seal does not read itself (today
    ``provider_unavailable``); the Butler release fact is always derived here from the author, and the
    governance facts are read by the seal (``E_SEAL_FACTS_OWNED``, 500, when a caller passes them).
    Raises the codes in the module docstring; nothing is stored when it raises. ``draft_id`` names the
    draft this seal retires (deleted in the same transaction).
    """
    base = _caller_facts(facts)
    mail_class = class_of(request)
    correspondence = mail_class is MailClass.CORRESPONDENCE
    check_composition(request.subject, request.body)
    check_content(request.body, request.html, request.attachments)
    extras = mail_fields.check_extras(request.from_name, request.reply_to, request.headers, request.tags,
                                      request.metadata, text_part=request.text_part, html=request.html)
    recipients = validate_recipients(request.to, request.cc, request.bcc)
    with node.read() as conn:
        f = _read_facts(conn, org_id, author_id, request, node.settings.transport)
    now = node.clock.now()
    send_id = new_id("snd")
    domain = f.sender.rpartition("@")[2]
    message_id = make_message_id(send_id, domain)
    in_reply_to = _msg_id(f.parent.rfc_message_id) if f.parent is not None else None
    references: tuple[str, ...] = ()
    if f.parent is not None:
        chain = [m for m in (_msg_id(r) for r in (f.parent.references or [])) if m]
        if in_reply_to:
            chain.append(in_reply_to)
        references = bound_references(chain)
    auto: AutoSubmitted | None = None
    if request.system or request.notice:
        auto = "auto-generated"
    elif prefix_of(author_id) == "btl":
        auto = "auto-replied"
    to = tuple(a.address for k, a in recipients if k == "to")
    cc = tuple(a.address for k, a in recipients if k == "cc")
    bcc = tuple(a.address for k, a in recipients if k == "bcc")
    # Bcc names are never written anywhere (RFC 5322 §3.6.3: a Bcc recipient is not shown).
    names = {a.key: a.display_name for k, a in recipients if k != "bcc" and a.display_name}
    rendered = render(OutboundMessage(from_address=f.sender, to=to, cc=cc, bcc=bcc, subject=request.subject,
                                      date=now, message_id=message_id, body=request.body, in_reply_to=in_reply_to,
                                      references=references, auto_submitted=auto, names=tuple(names.items()),
                                      html=request.html, attachments=request.attachments,
                                      from_name=request.from_name,
                                      reply_to=tuple((a.address, a.display_name or "") for a in extras.reply_to),
                                      extra_headers=extras.headers, plain=request.text_part))
    # The evidence is written before any row that names it (a blob without a row is harmless).
    typed_sha = node.evidence.put(request.body.encode("utf-8"))
    normalised_sha = node.evidence.put(normalise_body(request.body).encode("utf-8"))
    rendered_sha = node.evidence.put(rendered)
    html_sha = node.evidence.put(request.html.encode("utf-8")) if request.html is not None else None
    attached = [{"filename": a.filename, "content_type": a.content_type, "size_bytes": len(a.data),
                 "sha256": sha256_hex(a.data)} for a in request.attachments]
    # Only correspondence waits out the hold window: realtime goes inside its request, deferrable at once.
    release_at = now + timedelta(seconds=f.hold_window if correspondence else 0)
    rows = [(k, a) for k, a in recipients
            if request.envelope_only is None or a.key in request.envelope_only]
    signals = breakers.delivery_signals_of(node.settings.transport)
    with node.begin() as conn:
        listed = suppression.reasons_for(conn, org_id, [a.key for _, a in rows])
        gov = gatefacts.seal_facts(conn, org_id=org_id, mailbox_id=request.mailbox_id, author_id=author_id,
                                   recipients=[a.address for _, a in rows], is_reply=f.parent is not None,
                                   sending_domain=domain, now=now, delivery_signals=signals)
        inputs = gov.gate_inputs()
        rate = inputs.pop("rate_gate")
        provider_unavailable = base.provider_unavailable
        if correspondence and not provider_unavailable:
            verdict = may_send(f.provider, mail_class, now, provider_io.limits_of(node.settings))
            provider_io.emit(verdict.logs)
            provider_unavailable = not verdict.allowed
        if not correspondence:
            # Policy, approvals and the Butler release govern correspondence only (outbound.classes).
            inputs["policy_outcome"] = None
            inputs["approval_satisfiable"] = True
        decision = gates.decide(gates.GateFacts(
            **inputs, rate_gate=StateReason(rate) if rate is not None else None,
            butler_release_required=correspondence and prefix_of(author_id) == "btl" and request.resent_by is None,
            provider_unavailable=provider_unavailable))
        reason = decision.reason.value if decision.reason else None
        last_error = _seal_error(decision, gov, domain)
        send_state = seal_state(decision.state, len(rows), len(listed))
        if send_state is not decision.state:
            reason, last_error = None, ALL_SUPPRESSED_WORDS
        if f.parent is not None:
            conversation_id = str(f.parent.conversation_id)
        else:
            conversation_id = start_conversation(conn, org_id, request.subject, now)
        conn.execute(send_manifests.insert().values(
            id=send_id, org_id=org_id, mailbox_id=request.mailbox_id, author_id=author_id,
            mail_class=mail_class.value, idempotency_key=request.idempotency_key,
            in_reply_to_message_id=request.in_reply_to_message_id, conversation_id=conversation_id,
            envelope_from=f.sender, to_addresses=list(to), cc_addresses=list(cc), bcc_addresses=list(bcc),
            subject=request.subject, rfc_message_id=message_id.strip("<>"), in_reply_to_header=in_reply_to,
            references_header=" ".join(references) or None, auto_submitted=auto, fidelity="authored",
            body_typed_sha256=typed_sha, body_normalised_sha256=normalised_sha, rendered_sha256=rendered_sha,
            sealed_at=now, release_at=release_at, state=send_state.value, state_at=now,
            state_reason=reason, last_error=last_error, resend_of=request.resend_of,
            policy_outcome=gov.policy.outcome.value if correspondence else None,
            policy_versions=gov.policy.version_ids if correspondence else None,
            display_names=names or None, body_html_sha256=html_sha, attachments=attached or None,
            from_name=request.from_name, reply_to=extras.reply_to_written() or None,
            custom_headers=[list(h) for h in extras.headers] or None, tags=list(extras.tags) or None,
            metadata=dict(extras.metadata) or None,
        ))
        # Application mail's labels, as rows its list filters on by index (one statement each, only when given).
        if extras.tags:
            conn.execute(send_tags.insert(), [{"manifest_id": send_id, "tag": t, "org_id": org_id}
                                              for t in extras.tags])
        if extras.metadata:
            conn.execute(send_metadata.insert(), [{"manifest_id": send_id, "key": k, "value": v, "org_id": org_id}
                                                  for k, v in extras.metadata])
        conn.execute(send_recipients.insert(), [
            {"id": new_id("srp"), "org_id": org_id, "manifest_id": send_id, "kind": k, "address": a.address,
             "submission_state": SendState.SUPPRESSED.value if a.key in listed else send_state.value,
             "submission_state_at": now, "created_at": now, "suppression_reason": listed.get(a.key)}
            for k, a in rows
        ])
        record_message_id(conn, org_id, message_id, conversation_id, send_id, now)
        search_index.index(conn, search_documents.send_document(SimpleNamespace(
            id=send_id, org_id=org_id, mailbox_id=request.mailbox_id, conversation_id=conversation_id,
            sealed_at=now, subject=request.subject, envelope_from=f.sender, to_addresses=to, cc_addresses=cc,
            bcc_addresses=bcc, mail_class=mail_class.value, auto_submitted=auto), request.body,
            attachments=len(request.attachments)))
        if draft_id is not None:
            conn.execute(delete(drafts).where(drafts.c.id == draft_id, drafts.c.author_id == author_id))
        # A notice is the node's own words: the node (None) seals it; ``author_id`` only names its reader.
        sealed_by = None if request.notice else (request.resent_by or author_id)
        for_reader = {"notice_for": author_id} if request.notice else {}
        if request.resent_by is not None and request.resent_by != author_id:
            for_reader["author_id"] = author_id
        audit.append(conn, org_id=org_id, at=now, action="send.sealed", actor_id=sealed_by, subject=send_id,
                     detail={**for_reader, "mailbox_id": request.mailbox_id, "recipients": len(rows),
                             "state": send_state.value, "state_reason": reason, "gate": decision.gate.name.lower(),
                             "in_reply_to": request.in_reply_to_message_id, "release_at": release_at.isoformat(),
                             "resend_of": request.resend_of, "draft_id": draft_id, "mail_class": mail_class.value,
                             **gov.audit_detail(), **({"suppressed": len(listed)} if listed else {})})
        # The approval is asked only of a send that waits for it: a refusal outranks the gate and
        # writes no approval row (spec/outbound.md Part A 1). ``approval.requested`` names the send.
        approval_id = None
        gated = send_state is decision.state  # a send all of whose recipients are suppressed waits for nothing
        if gated and decision.reason is StateReason.POLICY_APPROVAL_REQUIRED:
            approval_id = gatefacts.write_approval_request(conn, org_id=org_id, manifest_id=send_id, facts=gov,
                                                           now=now)
        gate_reading = gov.breakers.gate
        if gated and decision.gate is gates.Gate.RATE_GATE and gate_reading is not None:
            gatefacts.record_rate_limited(conn, org_id=org_id, manifest_id=send_id, mailbox_id=request.mailbox_id,
                                          reading=gate_reading, now=now, at="seal", guard=None)
        if request.resend_of is not None:
            audit.append(conn, org_id=org_id, at=now, action="send.resent", actor_id=request.resent_by or author_id,
                         subject=send_id,
                         detail={"resend_of": request.resend_of, "reason": (request.resend_reason or "")[:300],
                                 "duplicate_possible": True})
    return Sealed(send_id, send_state, reason, release_at, message_id.strip("<>"), conversation_id, len(rows),
                  gov.policy.outcome.value if correspondence else None, approval_id, last_error, mail_class.value)
