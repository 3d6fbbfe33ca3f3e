"""Reading sends: the list a mailbox's people see and one send with recipients, events and the offer.

Who sees a send: anyone holding a relation on its mailbox (``authz.mailboxes_visible``); everyone else
gets ``E_NO_SUCH_SEND`` (404), as for an absent one. Every send shows its state, the reason in words
(``states.words_for``), the specifics behind it (``last_error``: the pause's reason and lift route, the
breaker's figure and when it clears, the approval shortfall) and the retry offer (``states.retry_offer``).
One send (``get_send``) also shows ``next_step`` (what changes its reason, and who does it) and, when
the send was sealed ``require_approval``, its ``approval``: id, state, expiry, the frozen stages with the
standing approvals of each, and the open stage (the first one still short). Every send shows
``content_deleted_at`` (ISO 8601 UTC, or null): once retention deleted its sealed body the retry offer is
``none/content_deleted`` (spec/transactional.md §5), and ``get_send`` adds the ``content_deleted`` note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, exists, func, or_, select

from mailnode.audit import audit_entries
from mailnode.authz import mailboxes_visible
from mailnode.errors import MailnodeError, not_found
from mailnode.ids import parse_id
from mailnode.mail.thread import author_kind, grant_for
from mailnode.node import Node
from mailnode.outbound.retry import no_such_send
from mailnode.retention import io as retention_io
from mailnode.retention import rules as retention
from mailnode.schema.governance import approval_decisions, approval_stages, approvals
from mailnode.schema.outbound import send_manifests, send_recipient_events, send_recipients
from mailnode.vocabulary.mail_classes import MailClass
from mailnode.vocabulary.send_states import SendState, StateReason, parse_reason, retry_offer, words_for

#: ``author_kind`` filter values and the author id prefix each selects (``mail.thread.AUTHOR_KINDS``'s words;
#: ``node`` is the node's own mail, sealed ``Auto-Submitted: auto-generated`` under the person it goes to).
AUTHOR_KIND_PREFIXES: dict[str, str | None] = {"person": "usr_", "butler": "btl_", "application": "app_",
                                               "node": None}


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


#: What changes a send's reason, and who does it (``{send}`` and ``{approval}`` are filled in). Total
#: over ``StateReason``; a reason the node does not know gets ``UNKNOWN_NEXT_STEP`` (fails closed).
NEXT_STEP: dict[StateReason, str] = {
    StateReason.POLICY_HOLD: "Someone holding send.propose on the mailbox releases it: "
                             "POST /api/sends/{send}/release-hold; or cancels it: POST /api/sends/{send}/cancel.",
    StateReason.POLICY_APPROVAL_REQUIRED: "An eligible decider approves or denies it: "
                                          "POST /api/approvals/{approval}/decide (GET /api/approvals lists them).",
    StateReason.BUTLER_RELEASE_REQUIRED: "A person holding send.propose on the mailbox releases it: "
                                         "POST /api/sends/{send}/release.",
    StateReason.PROVIDER_UNAVAILABLE: "Nothing to do: it leaves when the provider recovers.",
    StateReason.BREAKER_VOLUME: "Nothing to do: it leaves by itself when the window clears (GET /api/breakers).",
    StateReason.BREAKER_BOUNCE_RATE: "Nothing to do: it leaves by itself when the rate falls (GET /api/breakers).",
    StateReason.BREAKER_COMPLAINT_RATE: "Nothing to do: it leaves by itself when the rate falls "
                                        "(GET /api/breakers).",
    StateReason.POLICY_DENIED: "Nothing changes this send; compose a new one once the policy allows it.",
    StateReason.APPROVAL_UNSATISFIABLE: "Nothing changes this send; grant approval.decide to more people "
                                        "(POST /api/access) and compose it again.",
    StateReason.APPROVAL_DENIED: "Nothing changes this send; compose a new one if the refusal no longer applies.",
    StateReason.DOMAIN_PAUSED: "Nothing changes this send; once an administrator lifts the pause "
                               "(POST /api/domain-pauses/{id}/lift) compose it again.",
    StateReason.AUTHORITY_LOST: "Nothing changes this send; someone who may send from the mailbox composes it again.",
    StateReason.APPROVAL_REVOKED: "Nothing changes this send; compose it again to ask for a new approval.",
    StateReason.APPROVER_INELIGIBLE: "Nothing changes this send; compose it again to ask for a new approval.",
    StateReason.POLICY_STRICTER: "Nothing changes this send; compose it again under the current policy.",
    StateReason.APPROVAL_EXPIRED: "Nothing changes this send; compose it again to ask for a new approval.",
    StateReason.EVIDENCE_CHANGED: "Nothing changes this send; check the evidence store (mailnode doctor) "
                                  "and compose it again.",
    StateReason.GAVE_UP: "Nothing changes this send; send it again once the provider takes mail "
                         "(GET /api/provider-status).",
    StateReason.DEDUP_WINDOW_CLOSED: "A person decides: POST /api/sends/{send}/retry with resend-may-duplicate "
                                     "(a recipient may get it twice), or leave it.",
    StateReason.REALTIME_NOT_RETRIED: "Nothing changes this send; the application or person asks again.",
    StateReason.RETENTION_DELETED: "Nothing changes this send and nothing restores its body; compose it again if it "
                                   "must still go (GET /api/settings/retention shows the setting that deleted it).",
    StateReason.NOT_CLASSIFIED: "Nothing changes this send; report it (mailnode doctor).",
}
#: The next step for a reason outside the vocabulary.
UNKNOWN_NEXT_STEP = "The reason is not one mailnode knows; treat the send as stopped and report it."


def next_step(reason: str | None, *, send_id: str, approval_id: str | None) -> str | None:
    """What changes ``reason`` for send ``send_id``, or None when the send has no reason."""
    if reason is None:
        return None
    r = parse_reason(reason)
    if r is None:
        return UNKNOWN_NEXT_STEP
    return NEXT_STEP[r].replace("{send}", send_id).replace("{approval}", approval_id or "{id}")


def approval_of(conn: Connection, *, org_id: str, send_id: str) -> dict[str, Any] | None:
    """The approval asked for a send, with each stage's standing approvals and the open stage (two
    statements), or None when none was asked. Counts only: the deciders are not named here."""
    a = approvals.c
    s = approval_stages.c
    rows = conn.execute(select(approvals, s.ordinal, s.required_count, s.team_id)
                        .join(approval_stages, s.approval_id == a.id)
                        .where(a.org_id == org_id, a.subject_kind == "send_manifest", a.subject_id == send_id)
                        .order_by(s.ordinal)).all()
    if not rows:
        return None
    head = rows[0]
    d = approval_decisions.c
    standing = {r.stage_ordinal: int(r.n) for r in conn.execute(
        select(d.stage_ordinal, func.count(func.distinct(d.decider_id)).label("n"))
        .where(d.approval_id == head.id, d.decision == "approve", d.withdrawn_at.is_(None))
        .group_by(d.stage_ordinal)).all()}
    stages = [{"ordinal": r.ordinal, "required": r.required_count, "team_id": r.team_id,
               "approved": standing.get(r.ordinal, 0)} for r in rows]
    open_stage = next((st for st in stages if st["approved"] < st["required"]), None)
    return {"id": head.id, "state": head.state, "requested_at": _iso(head.requested_at),
            "expires_at": _iso(head.expires_at), "resolved_at": _iso(head.resolved_at), "stages": stages,
            "open_stage": open_stage if head.state == "pending" else None}


def send_summary(r: Any, ambiguous: int, purge: tuple[str, datetime] | None = None) -> dict[str, Any]:
    """The list shape of a manifest row; ``purge`` is ``(kind, purged_at)`` once retention deleted its body."""
    return {
        "id": r.id, "mailbox_id": r.mailbox_id, "author_id": r.author_id, "state": r.state,
        "state_reason": r.state_reason, "reason_words": words_for(r.state, r.state_reason),
        "subject": r.subject, "from": r.envelope_from, "to": r.to_addresses, "cc": r.cc_addresses,
        "bcc": r.bcc_addresses, "sealed_at": _iso(r.sealed_at), "release_at": _iso(r.release_at),
        "state_at": _iso(r.state_at), "attempts": r.attempts, "last_error": r.last_error,
        "rfc_message_id": r.rfc_message_id, "in_reply_to_message_id": r.in_reply_to_message_id,
        "conversation_id": r.conversation_id, "resend_of": r.resend_of, "auto_submitted": r.auto_submitted,
        "retry": retry_offer(r.state, ambiguous_recipients=ambiguous, content_deleted=purge is not None).to_json(),
        "content_deleted_at": purge[1].isoformat() if purge is not None else None,
    }


@dataclass(frozen=True)
class SendFilter:
    """The search filters of ``GET /api/sends`` beyond mailbox and state; None leaves a field unfiltered.

    Attributes:
        author_kind: a key of ``AUTHOR_KIND_PREFIXES`` (``person``, ``butler``, ``application``, ``node``).
        mail_class: the send's class (``correspondence``, ``realtime``, ``deferrable`` ...).
        recipient: a recipient address's key (the whole address lower-cased); matches a send naming it in
            ``to``, ``cc`` or ``bcc``.
        after: sealed at or after this instant (aware, UTC).
        before: sealed strictly before this instant (aware, UTC).
    """

    author_kind: str | None = None
    mail_class: MailClass | None = None
    recipient: str | None = None
    after: datetime | None = None
    before: datetime | None = None


def _author_kind(kind: str) -> Any:
    """The condition that a manifest's author is of ``kind`` (a key of ``AUTHOR_KIND_PREFIXES``)."""
    m = send_manifests.c
    node_mail = m.auto_submitted == "auto-generated"
    prefix = AUTHOR_KIND_PREFIXES[kind]
    if prefix is None:
        return node_mail
    return m.author_id.startswith(prefix, autoescape=True) & or_(m.auto_submitted.is_(None), ~node_mail)


def list_sends(conn: Connection, *, org_id: str, principal_id: str, limit: int, cursor: str | None,
               mailbox_id: str | None = None, state: SendState | None = None,
               filters: SendFilter | None = None) -> list[dict[str, Any]]:
    """Sends of the mailboxes the caller may see, newest first, after ``cursor`` (two statements + two),
    narrowed by ``mailbox_id``, ``state`` and ``filters`` (``SendFilter``). Raises ``E_ID_MALFORMED``."""
    visible = mailboxes_visible(conn, org_id, principal_id)
    q = select(send_manifests).where(send_manifests.c.org_id == org_id,
                                     send_manifests.c.mailbox_id.in_(sorted(visible)))
    if mailbox_id:
        parse_id(mailbox_id, "mbx", "mailbox_id")
        q = q.where(send_manifests.c.mailbox_id == mailbox_id)
    if state is not None:
        q = q.where(send_manifests.c.state == state.value)
    f = filters or SendFilter()
    if f.author_kind is not None:
        q = q.where(_author_kind(f.author_kind))
    if f.mail_class is not None:
        q = q.where(send_manifests.c.mail_class == f.mail_class.value)
    if f.recipient is not None:
        q = q.where(exists().where(send_recipients.c.manifest_id == send_manifests.c.id,
                                   func.lower(send_recipients.c.address) == f.recipient))
    if f.after is not None:
        q = q.where(send_manifests.c.sealed_at >= f.after)
    if f.before is not None:
        q = q.where(send_manifests.c.sealed_at < f.before)
    if cursor:
        q = q.where(send_manifests.c.id < cursor)
    rows = conn.execute(q.order_by(send_manifests.c.id.desc()).limit(limit)).all()
    ambiguous: dict[str, int] = {}
    if rows:
        ambiguous = {r.manifest_id: int(r.n) for r in conn.execute(
            select(send_recipients.c.manifest_id, func.count().label("n"))
            .where(send_recipients.c.manifest_id.in_([r.id for r in rows]),
                   send_recipients.c.submission_state == SendState.OUTCOME_UNKNOWN.value)
            .group_by(send_recipients.c.manifest_id)).all()}
    purges = retention_io.purges_of(conn, [r.id for r in rows])
    return [_listed(r, send_summary(r, ambiguous.get(r.id, 0), purges.get(r.id))) for r in rows]


def _listed(r: Any, out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with the fields ``GET /api/sends`` adds to ``send_summary``: ``author_kind`` and ``mail_class``."""
    out["author_kind"] = author_kind(r.author_id, r.auto_submitted)
    out["mail_class"] = r.mail_class
    return out


def get_send(conn: Connection, *, org_id: str, principal_id: str, send_id: str) -> dict[str, Any]:
    """One send with its recipients (submission and delivery state, last error), its events, its policy
    outcome and versions, its approval (when sealed ``require_approval``) and the next step."""
    parse_id(send_id, "snd", "send_id")
    row = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id,
                                                    send_manifests.c.org_id == org_id)).first()
    if row is None or row.mailbox_id not in mailboxes_visible(conn, org_id, principal_id):
        raise no_such_send(send_id)
    recipients = conn.execute(select(send_recipients).where(send_recipients.c.manifest_id == send_id)
                              .order_by(send_recipients.c.kind, send_recipients.c.address)).all()
    events = conn.execute(select(send_recipient_events).where(send_recipient_events.c.manifest_id == send_id)
                          .order_by(send_recipient_events.c.received_at, send_recipient_events.c.id)).all()
    ambiguous = sum(1 for r in recipients if r.submission_state == SendState.OUTCOME_UNKNOWN.value)
    purge = retention_io.purges_of(conn, [send_id]).get(send_id)
    out = _listed(row, send_summary(row, ambiguous, purge))
    out["content_deleted"] = (retention.deletion_note(source_id=send_id, kind=purge[0], purged_at=purge[1])
                              if purge is not None else None)
    approval = approval_of(conn, org_id=org_id, send_id=send_id) if row.policy_outcome == "require_approval" else None
    out["policy_outcome"] = row.policy_outcome
    out["policy_versions"] = row.policy_versions
    out["approval"] = approval
    out["next_step"] = next_step(row.state_reason, send_id=send_id, approval_id=approval["id"] if approval else None)
    out["recipients"] = [{
        "id": r.id, "kind": r.kind, "address": r.address, "submission_state": r.submission_state,
        "submission_state_at": _iso(r.submission_state_at), "delivery_state": r.delivery_state,
        "delivery_state_at": _iso(r.delivery_state_at), "bounce_type": r.bounce_type, "last_error": r.last_error,
        "attempts": r.attempts, "transport_message_id": r.transport_message_id,
        "provider_message_id": r.provider_message_id, "suppression_reason": r.suppression_reason,
    } for r in recipients]
    out["events"] = [{
        "id": e.id, "event_type": e.event_type, "recipient": e.recipient, "recipient_id": e.recipient_id,
        "status": e.status, "bounce_type": e.bounce_type, "source": e.source, "received_at": _iso(e.received_at),
        "detail": e.detail,
    } for e in events]
    return out


def raw_not_visible(send_id: str) -> MailnodeError:
    """403 ``E_SEND_RAW_NOT_VISIBLE``: the caller sees the send but not its body, so not its raw message."""
    return MailnodeError(
        code="E_SEND_RAW_NOT_VISIBLE", what=f"The submitted message of {send_id} is not shown to you.",
        why="The raw message holds the body, which only the author and those who may release, cancel or approve "
            "the send, or read the mailbox's content, read (a mailed sign-in code: its author only).",
        fix="Ask someone who holds mailbox.content.read or send.propose on the mailbox, or to be granted one "
            "(POST /api/access).", status=403, detail={"send_id": send_id})


def not_rendered(send_id: str) -> MailnodeError:
    """404 ``E_SEND_NOT_RENDERED``: the send has no stored rendering to show."""
    return not_found("E_SEND_NOT_RENDERED", f"Send {send_id} has no stored submitted message.",
                     fix="Read the send's fields with GET /api/sends/{id}.", send_id=send_id)


def raw_message(node: Node, *, org_id: str, principal_id: str, send_id: str) -> bytes:
    """The message as sealed for submission (``rendered_sha256``'s bytes, RFC 5322), for whoever reads the
    send's body (``mail.thread.grant_for``). Four statements and one evidence read.

    Raises ``E_ID_MALFORMED`` (422), ``E_NO_SUCH_SEND`` (404, absent or not visible),
    ``E_SEND_RAW_NOT_VISIBLE`` (403, metadata only), ``E_SEND_NOT_RENDERED`` (404), ``E_CONTENT_DELETED``
    (410, retention deleted it) and the evidence store's ``E_EVIDENCE_MISSING`` (500).
    """
    parse_id(send_id, "snd", "send_id")
    with node.read() as conn:
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id,
                                                        send_manifests.c.org_id == org_id)).first()
        if row is None or row.mailbox_id not in mailboxes_visible(conn, org_id, principal_id):
            raise no_such_send(send_id)
        if grant_for(conn, org_id=org_id, principal_id=principal_id, row=row) is None:
            raise raw_not_visible(send_id)
    if row.rendered_sha256 is None:
        raise not_rendered(send_id)
    return retention_io.read_content(node, source_id=send_id, digest=row.rendered_sha256)


def send_audit(conn: Connection, *, org_id: str, send_id: str) -> list[dict[str, Any]]:
    """The audit entries about send ``send_id`` (``send.*`` actions with it as subject), oldest first: one
    statement. Each ``{"at" (datetime, UTC), "action", "actor_id", "actor_kind", "outcome", "detail" (dict)}``.
    The caller checks first that the reader may see the send (``get_send``)."""
    a = audit_entries.c
    rows = conn.execute(select(a.at, a.action, a.actor_id, a.actor_kind, a.outcome, a.detail)
                        .where(a.org_id == org_id, a.subject == send_id, a.action.startswith("send."))
                        .order_by(a.seq)).all()
    return [{"at": r.at, "action": r.action, "actor_id": r.actor_id, "actor_kind": r.actor_kind,
             "outcome": r.outcome, "detail": _detail(r.detail)} for r in rows]


def _detail(text: str | None) -> dict[str, Any]:
    """An audit entry's detail as a dict (its stored JSON; anything else kept under ``"text"``)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"text": text}
    return value if isinstance(value, dict) else {"text": text}
