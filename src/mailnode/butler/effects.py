"""The five effect nodes, performed through the functions people call, with the Butler as principal.

Seed 003 "Effects go through Layer 5, not around it"; spec/butler.md §6.5 and §7. ``perform(node, conn,
who, call, at)`` runs one effect inside the caller's transaction (the engine's step, which writes the
effect row in the same transaction) and returns an ``EffectResult``. The principal of every write and
of every audit entry is the Butler's ``btl_`` id, so the trail says ``actor_kind = butler``.

| node | the people's function | what the engine adds |
|---|---|---|
| ``case.assign`` | ``mail.cases.claim`` | the three-term authority for ``send.propose`` folded into the case read |
| ``case.close`` | ``mail.cases.close`` | the same read; only a case this Butler holds |
| ``draft`` | ``outbound.drafts.create`` | the intersection on the named mailbox first; the one recipient (``parent``) |
| ``mail.send.propose`` | ``outbound.seal.seal`` | the draft read back as the Butler, then its mailbox's intersection |
| ``lookup`` | a row read | a declared projection per entity, with the authority folded into the read |

A people's function runs inside a savepoint: when it refuses (a ``MailnodeError``), its partial writes
roll back and the refusal becomes the effect's ``refused`` row with the code (or the engine's token,
``case_held``, ``case_closed``, ``assignee_may_not_work_it``, ``case_not_held_by_butler``,
``not_readable``, ``case_not_actionable``, ``capability_not_declared``, ``butler_not_granted``,
``sponsor_lacks_it``) as its reason; the run carries on. A seal that withholds is ``refused`` with the
send's reason; a seal that gates is ``ok`` with it, and ``butler_release_required`` parks the run.

Inside a re-run (``replay_of`` set; seed 003 "Materially new is decided by content"): a ``draft``
resumes this Butler's own draft for the same parent instead of colliding with the one-draft rule, and
a ``mail.send.propose`` first compares the draft's content identity (``replay.content_identity``) with
the sends the source run proposed (one statement). Identical to one that stands: ``ok`` with
``replay_identical_content``, the incumbent as subject, nothing sealed, no park. Identical to one that
was cancelled or withheld: ``refused`` with ``replay_send_decided`` (composing it again is
``resend-may-duplicate``, a person's act). An incumbent whose manifest is gone ends the run
``refused/replay_send_unprovable`` (``RunEnds``): content that cannot be compared is not assumed new.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, exists, select

from mailnode.authz import holds
from mailnode.butler import authority, replay_rule
from mailnode.butler.authority import Principal
from mailnode.butler.walk import EffectCall, EffectResult
from mailnode.errors import MailnodeError
from mailnode.mail import cases as cases_mod
from mailnode.node import Node
from mailnode.outbound import drafts as drafts_mod
from mailnode.outbound.render import normalise_body
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.mail import mailboxes
from mailnode.schema.mail_messages import cases, conversations, messages
from mailnode.schema.outbound import drafts
from mailnode.vocabulary.send_states import SendState, StateReason

SEND_PROPOSE = "send.propose"
METADATA_OR_CONTENT = ("mailbox.metadata.read", "mailbox.content.read")
CONTENT = ("mailbox.content.read",)

#: The engine's token for a people's function's refusal code (others keep their ``E_...`` code).
_CLAIM_REASONS = {"E_CASE_CLOSED": "case_closed", "E_CASE_HELD": "case_held",
                  "E_ASSIGNEE_MAY_NOT_WORK_IT": "assignee_may_not_work_it"}
_CLOSE_REASONS = {"E_CASE_CLOSED": "case_closed", "E_NOT_YOUR_CASE": "case_held"}


@dataclass
class _InTransaction(Node):
    """The node, with ``begin``/``read`` answering the effect's own open transaction.

    The seal opens its own transactions; handed this, its reads and writes land in the effect step's
    transaction, so the manifest and the effect row commit (or roll back) together.
    """

    conn: Connection | None = None

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """The effect's transaction (never committed here)."""
        if self.conn is None:
            raise RuntimeError("_InTransaction used without a connection")
        yield self.conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """The effect's transaction, for reading."""
        if self.conn is None:
            raise RuntimeError("_InTransaction used without a connection")
        yield self.conn


class RunEnds(Exception):
    """The run must end before this effect is performed (``state``, ``reason``): its Butler was paused,
    or a re-run's incumbent cannot be compared. Raised inside the effect's transaction, which then
    rolls back: nothing of the effect is written."""

    def __init__(self, state: str, reason: str, **detail: Any) -> None:
        super().__init__(state, reason)
        self.state = state
        self.reason = reason
        self.detail = detail


def _refused(reason: str, subject: str | None) -> EffectResult:
    return EffectResult(outcome="refused", reason=reason, subject=subject)


def _through(conn: Connection, act: Callable[[], Any]) -> tuple[Any, MailnodeError | None]:
    """Run a people's function in a savepoint; a ``MailnodeError`` rolls it back and is returned."""
    try:
        with conn.begin_nested():
            return act(), None
    except MailnodeError as exc:
        return None, exc


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


# --- lookup ------------------------------------------------------------------------------------------

def _lookup(conn: Connection, who: Principal, entity: str, entity_id: str) -> dict[str, Any] | None:
    """The declared projection of one row, or None when absent or not readable (alike)."""
    if entity == "draft":
        d = drafts.c
        row = conn.execute(select(d.id, d.mailbox_id, d.in_reply_to_message_id, d.to_addresses, d.cc_addresses,
                                  d.bcc_addresses, d.subject, d.body, d.updated_at)
                           .where(d.id == entity_id, d.org_id == who.org_id, d.author_id == who.butler_id)).first()
        if row is None:
            return None
        return {"id": row.id, "mailbox_id": row.mailbox_id, "in_reply_to_message_id": row.in_reply_to_message_id,
                "to_addresses": list(row.to_addresses), "cc_addresses": list(row.cc_addresses),
                "bcc_addresses": list(row.bcc_addresses), "subject": row.subject,
                "body_bytes": len(row.body.encode("utf-8")), "updated_at": _iso(row.updated_at)}
    relations = CONTENT if entity == "message" else METADATA_OR_CONTENT
    if not who.ceiling.addresses(relations):
        return None
    subjects = authority.sponsor_subjects(conn, who.org_id, who.sponsor_id)
    if entity == "message":
        m = messages.c
        r = conn.execute(select(m.id, m.subject, m.from_address, m.date, m.received_at, m.rfc_message_id,
                                m.conversation_id, m.parse_error)
                         .where(m.id == entity_id, m.org_id == who.org_id,
                                authority.readable(who, subjects, relations, m.mailbox_id))).first()
        return None if r is None else {
            "id": r.id, "subject": r.subject, "from_addr": r.from_address, "sent_at": _iso(r.date),
            "received_at": _iso(r.received_at), "rfc_message_id": r.rfc_message_id,
            "conversation_id": r.conversation_id, "parse_error": r.parse_error}
    if entity == "case":
        c = cases.c
        r = conn.execute(select(c.id, c.conversation_id, c.mailbox_id, c.state, c.assignee_id, c.assigned_at,
                                c.opened_at, c.closed_at)
                         .where(c.id == entity_id, c.org_id == who.org_id,
                                authority.readable(who, subjects, relations, c.mailbox_id))).first()
        return None if r is None else {
            "id": r.id, "conversation_id": r.conversation_id, "mailbox_id": r.mailbox_id, "state": r.state,
            "assignee": r.assignee_id, "assigned_at": _iso(r.assigned_at), "opened_at": _iso(r.opened_at),
            "closed_at": _iso(r.closed_at)}
    if entity == "conversation":
        v = conversations.c
        some_case = exists(select(cases.c.id).where(cases.c.conversation_id == v.id,
                                                    authority.readable(who, subjects, relations, cases.c.mailbox_id)))
        cv = conn.execute(select(v.id, v.subject, v.created_at)
                          .where(v.id == entity_id, v.org_id == who.org_id, some_case)).first()
        return None if cv is None else {"id": cv.id, "subject": cv.subject, "created_at": _iso(cv.created_at)}
    b = mailboxes.c
    mb = conn.execute(select(b.id, b.name, b.created_at)
                      .where(b.id == entity_id, b.org_id == who.org_id,
                             authority.readable(who, subjects, relations, b.id))).first()
    return None if mb is None else {"id": mb.id, "name": mb.name, "created_at": _iso(mb.created_at)}


# --- cases -------------------------------------------------------------------------------------------

def _actionable_case(conn: Connection, who: Principal, case_id: str) -> Any | None:
    subjects = authority.sponsor_subjects(conn, who.org_id, who.sponsor_id)
    c = cases.c
    return conn.execute(select(c.id, c.state, c.assignee_id)
                        .where(c.id == case_id, c.org_id == who.org_id,
                               authority.readable(who, subjects, (SEND_PROPOSE,), c.mailbox_id))).first()


def assign_reason(refusal: str | None) -> str | None:
    """The effect row's reason for ``cases.claim_refusal``'s code (the live claim's error, mapped alike)."""
    return None if refusal is None else _CLAIM_REASONS.get(refusal, refusal)


def close_reason(*, state: str, holder_id: str | None, butler_id: str) -> str | None:
    """The decision before a Butler's ``case.close``: ``case_closed``, ``case_not_held_by_butler`` or None.

    ``cases.close_refusal`` with the engine's tokens; the live effect and the dry run both decide with it.
    """
    refusal = cases_mod.close_refusal(state=state, holder_id=holder_id, principal_id=butler_id)
    return {"E_CASE_CLOSED": "case_closed", "E_NOT_YOUR_CASE": "case_not_held_by_butler"}.get(refusal or "", refusal)


def propose_reason(conn: Connection, who: Principal, mailbox_id: str) -> tuple[str, bool] | None:
    """The decision before a Butler's seal: ``(reason, about the draft)`` or None (at most 3 statements).

    ``E_MAY_NOT_SEND_AS_MAILBOX`` when the Butler holds no ``send.propose`` on the draft's mailbox (the
    refusal is about the draft), else the three-term authority's reason (about the mailbox).
    """
    if not holds(conn, who.org_id, who.butler_id, SEND_PROPOSE, "mailbox", mailbox_id):
        return "E_MAY_NOT_SEND_AS_MAILBOX", True
    reason = authority.effective_on_mailbox(conn, who, mailbox_id, SEND_PROPOSE)
    return None if reason is None else (reason, False)


def _assign(conn: Connection, who: Principal, case_id: str, assignee_id: str, at: datetime) -> EffectResult:
    if _actionable_case(conn, who, case_id) is None:
        return _refused("case_not_actionable", case_id)
    _, err = _through(conn, lambda: cases_mod.claim(conn, org_id=who.org_id, principal_id=who.butler_id, at=at,
                                                     case_id=case_id, assignee_id=assignee_id))
    if err is not None:
        return _refused(assign_reason(err.code) or err.code, case_id)
    return EffectResult(outcome="ok", subject=case_id)


def _close(conn: Connection, who: Principal, case_id: str, at: datetime) -> EffectResult:
    row = _actionable_case(conn, who, case_id)
    if row is None:
        return _refused("case_not_actionable", case_id)
    reason = close_reason(state=row.state, holder_id=row.assignee_id, butler_id=who.butler_id)
    if reason is not None:
        return _refused(reason, case_id)
    _, err = _through(conn, lambda: cases_mod.close(conn, org_id=who.org_id, principal_id=who.butler_id, at=at,
                                                     case_id=case_id))
    if err is not None:
        return _refused(_CLOSE_REASONS.get(err.code, err.code), case_id)
    return EffectResult(outcome="ok", subject=case_id)


# --- draft and send ----------------------------------------------------------------------------------

def _own_draft_for(conn: Connection, who: Principal, mailbox_id: str, parent: str | None) -> str | None:
    """This Butler's existing draft answering ``parent`` in ``mailbox_id`` (one statement), or None."""
    if parent is None:
        return None
    d = drafts.c
    row = conn.execute(select(d.id).where(d.org_id == who.org_id, d.author_id == who.butler_id,
                                          d.in_reply_to_message_id == parent, d.mailbox_id == mailbox_id)).first()
    return None if row is None else str(row.id)


def _draft(conn: Connection, who: Principal, p: dict[str, Any], at: datetime, replay_of: str | None) -> EffectResult:
    mailbox_id = str(p["mailbox_id"])
    reason = authority.effective_on_mailbox(conn, who, mailbox_id, SEND_PROPOSE)
    if reason is not None:
        return _refused(reason, mailbox_id)
    # The one recipient is the parent delivery's return path, derived by the walk; no cc or bcc is
    # passed at all, so there is no field here for a later edit to start filling in.
    resumed = _own_draft_for(conn, who, mailbox_id, p["in_reply_to_message_id"]) if replay_of else None
    if resumed is not None:
        made, err = _through(conn, lambda: drafts_mod.edit(
            conn, org_id=who.org_id, author_id=who.butler_id, at=at, draft_id=resumed, to=[p["recipient"]],
            subject=p["subject"], body=p["body"]))
    else:
        made, err = _through(conn, lambda: drafts_mod.create(
            conn, org_id=who.org_id, author_id=who.butler_id, at=at, mailbox_id=mailbox_id,
            in_reply_to_message_id=p["in_reply_to_message_id"], to=[p["recipient"]], subject=p["subject"],
            body=p["body"]))
    if err is not None:
        return _refused(err.code, mailbox_id)
    binding = {"id": made["id"], "mailboxId": mailbox_id, "subject": made["subject"], "to": list(made["to"]),
               "inReplyToMessageId": made["in_reply_to_message_id"], "bodyBytes": len(made["body"].encode("utf-8"))}
    return EffectResult(outcome="ok", subject=made["id"], binding=binding)


def _replay_rule(conn: Connection, who: Principal, row: Any, replay_of: str) -> EffectResult | None:
    """The re-run content rule over the draft ``row``: an effect result, or None to seal as usual."""
    sources = replay_rule.source_sends(conn, who.org_id, replay_of)
    missing = [s.send_id for s in sources if s.state is None]
    if missing:
        raise RunEnds("refused", "replay_send_unprovable", missing=missing)
    identity = replay_rule.content_identity(
        row.mailbox_id, list(row.to_addresses), list(row.cc_addresses), list(row.bcc_addresses), row.subject,
        row.in_reply_to_message_id, hashlib.sha256(normalise_body(row.body).encode("utf-8")).hexdigest())
    incumbent = next((s for s in sources if s.identity == identity), None)
    if incumbent is None:
        return None
    if replay_rule.stands(incumbent.state):
        return EffectResult(outcome="ok", reason=replay_rule.IDENTICAL, subject=incumbent.send_id)
    return _refused(replay_rule.DECIDED, incumbent.send_id)


def _propose(node: Node, conn: Connection, who: Principal, draft_id: str, replay_of: str | None) -> EffectResult:
    row, err = _through(conn, lambda: drafts_mod.row_of(conn, org_id=who.org_id, author_id=who.butler_id,
                                                         draft_id=draft_id))
    if err is not None:
        return _refused("not_readable", draft_id)
    refused = propose_reason(conn, who, row.mailbox_id)
    if refused is not None:
        return _refused(refused[0], draft_id if refused[1] else row.mailbox_id)
    if replay_of is not None:
        decided = _replay_rule(conn, who, row, replay_of)
        if decided is not None:
            return decided
    request = SealRequest(mailbox_id=row.mailbox_id, to=list(row.to_addresses), cc=list(row.cc_addresses),
                          bcc=list(row.bcc_addresses), subject=row.subject, body=row.body,
                          in_reply_to_message_id=row.in_reply_to_message_id)
    bound = _InTransaction(settings=node.settings, engine=node.engine, clock=node.clock, conn=conn)
    sealed, err = _through(conn, lambda: seal(bound, org_id=who.org_id, author_id=who.butler_id, request=request,
                                               draft_id=draft_id))
    if err is not None:
        return _refused(err.code, draft_id)
    if sealed.state is SendState.WITHHELD:
        return _refused(sealed.state_reason or "withheld", sealed.id)
    return EffectResult(outcome="ok", reason=sealed.state_reason, subject=sealed.id,
                        parks=sealed.state_reason == StateReason.BUTLER_RELEASE_REQUIRED.value)


def perform(node: Node, conn: Connection, who: Principal, call: EffectCall, at: datetime,
            replay_of: str | None = None) -> EffectResult:
    """Perform ``call`` in ``conn``'s transaction as the Butler ``who``; see the module docstring.

    ``replay_of`` is the source run of a re-run (None for a delivery's run). Raises ``RunEnds`` when
    the run must end first, and otherwise only what is not a refusal (a database error, a defect); the
    engine records that as ``engine_fault``.
    """
    p = call.params
    if call.node_type == "lookup":
        found = _lookup(conn, who, str(p["entity"]), str(p["entity_id"]))
        if found is None:
            return _refused("not_readable", str(p["entity_id"]))
        return EffectResult(outcome="ok", subject=str(p["entity_id"]), binding=found)
    if call.node_type == "case.assign":
        return _assign(conn, who, str(p["case_id"]), str(p["assignee_id"]), at)
    if call.node_type == "case.close":
        return _close(conn, who, str(p["case_id"]), at)
    if call.node_type == "draft":
        return _draft(conn, who, p, at, replay_of)
    if call.node_type == "mail.send.propose":
        return _propose(node, conn, who, str(p["draft_id"]), replay_of)
    raise ValueError(f"{call.node_type} is not an effect node")
