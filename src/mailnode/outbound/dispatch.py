"""Dispatch: recheck, claim, submit once per recipient, record; and recovery of lapsed claims.

A sweep dispatches its batch together (``dispatch_batch``, issue 19): the facts are read once per batch,
the claims, marks, outcomes, aggregates and audit entries written per batch or per window of hand-overs,
never per send (the steps and their statements: ``dispatch_batch``'s docstring). ``dispatch_one`` is a
batch of one. Each send moves in this order (spec/outbound.md §1.7; issue 4):

1. read it under ``movable_now`` (``outbound.movable``; nothing else decides what may move);
2. recheck, all before the claim so a refusal or a gate spends no attempt. Dispatch reads the facts and
   ``outbound.handover.decide`` (pure, class × facts, beside ``gates.decide``) chooses; dispatch writes
   its answer. The facts: the author still holds
   ``send.propose`` (else ``withheld/authority_lost``); then governance
   (``governance.gatefacts.BatchFacts``: 3 statements per organisation and sending domain and batch, 2 more
   for each send bound ``require_approval``), the
   provider breaker for the class; the decision: the
   domain pause, the approval (revoked, expired, an approver no longer eligible) and the policy
   re-evaluated for every send (stricter than the bound outcome: ``policy_stricter``) withhold with
   their reason, recipients following; a tripped rate breaker gates a send of **every** class
   ``awaiting/breaker_*`` (seed 000, spec/transactional.md §1)
   (``record_rate_limited`` guarded by ``movable_now``: it writes the send's recheck time, ``release_at`` =
   now + ``gatefacts.recheck_after_seconds`` of the reading, every time it finds the send gated, and
   ``send.rate_limited`` on the transition only, however many sweeps find it still tripped);
   then the sealed bytes are still in the evidence store unaltered (else ``withheld/evidence_changed``;
   ``withheld/retention_deleted`` when retention deleted them, ``retention.io.content_refusal``).
   Refusals come before the rate gate: a refusal says never and a gate says wait, so gating a send that
   will be refused anyway only delays the reason a person must act on (the reference asked the rates
   first; mailnode keeps governance's order, spec/outbound.md §1.7 notwithstanding). A send gated here
   drains by itself: it leaves every sweep query until its recheck time, then ``movable_now`` re-admits
   ``awaiting/breaker_*`` and the sweep asks again (spec/transactional.md §3: a row a sweep reads leaves
   every sweep query); policy and approval gates never reach this function;
3. claim: one conditional update to ``outcome_unknown`` for the batch (attempts + 1, a lease,
   ``state_reason`` cleared, ``first_attempt_at`` set once and never moved, the batch's claim token); losing
   the race is not an error; in the claim's transaction the suppression list is read again
   (``outbound.suppression.suppress_many``, 1 statement per organisation): a recipient not yet left whose
   address was listed after the seal becomes ``suppressed`` with its reason, is never submitted, and a send
   left with only such rows aggregates ``suppressed``;
4. per recipient that ``states.recipient_submittable`` allows: mark the row ``outcome_unknown`` (attempts
   + 1) *before* handing it to the transport (a window's rows in one statement, committed before any of
   them is submitted), submit (SMTP: the VERP return path of that row), record
   the outcome. A row left ``outcome_unknown`` therefore means "may have left" and is never submitted
   again under a key the transport does not deduplicate;
5. the manifest's aggregate (``states.aggregate``) with ``send.<state>`` in the audit trail, guarded by
   the claim token. ``throttled`` comes round again after a back-off (``release_at``).

A transport that raises is recorded: that recipient stays ``outcome_unknown`` with the exception as its
``last_error``, the send ends ``outcome_unknown`` with the cause, and the traceback is logged; no further
recipient of that send is attempted in the pass.

What the transport answered is bookkeeping that must not be lost to a passing database fault: the
recipients' outcomes (written with the next window's marks, or at the end) and the sends' aggregates
(with their audit entries, at the end) are written in short transactions, each retried up to
``budgets.DISPATCH_RECORD_ATTEMPTS`` times on a transient database error
(``sqlalchemy.exc.OperationalError``: a deadlock, a serialization failure, SQLite's busy timeout). A send
the transport accepted is therefore recorded ``handed_over``, never left ``outcome_unknown`` because a
write after the hand-over failed once; if every attempt fails the error propagates (logged with the
answer that was not recorded) and the lapsed claim is resolved from the recipients' rows by ``recover_claims``.

Mail classes and the provider breaker (spec/transactional.md §1–§2): after governance's refusals and
before the rate gate, the provider breaker is asked for the send's class. Correspondence it refuses is
gated ``awaiting/provider_unavailable`` (on the transition only, with ``send.provider_unavailable``
audited), drained by ``movable_now`` when the breaker reopens; deferrable and realtime mail it refuses is
left untouched, no attempt spent (the sweeper and the realtime request decide what that means). Policy
and approvals are correspondence's gates: for other classes only the domain pause, the author's
authority and the evidence check withhold, the rate breakers gate every class, and system mail (``Auto-Submitted:
auto-generated``, not correspondence) skips the authority check. Every transport answer is folded into the transport's
``provider_status`` row (``governance.provider_io.record_many``) in the transaction that records it, and a send
stops submitting further recipients once an answer shut the breaker. The claim asks the breaker for one
request, never for the whole send (a send larger than its class's ceiling would otherwise never go);
instead, before each recipient's request, ``provider_io.reserve_many`` (a window's requests together, each
asked for on its own) asks ``may_send`` on the locked row with
the requests in flight (other workers' and the window's included) counted against the ceiling and reserves a
ticket, which
the answer is recorded with (an answer to an older request never overwrites a newer reading or reopens a
later pause; issue 17 item 2), and once it refuses (the day's reading reached the class's ceiling: the reserve,
spec/transactional.md §2) the recipients not yet submitted are written ``throttled`` with the refusal in words, so the
send aggregates ``throttled`` and comes round after its back-off: correspondence is then gated
``awaiting/provider_unavailable`` (not read by the sweep until the breaker allows it again, at the next
UTC midnight), deferrable mail waits for the sweeper's ``may_send``. No request is made past the ceiling.

``recover_claims`` finds claims whose lease expired (or, at start-up, claims made under this process's
own executor id, whose holder is necessarily dead) and resolves them (spec/transactional.md §3): a send
with a recipient that provably never left (or may be re-driven under an open dedup window) goes back to
``held``; otherwise it takes its recipients' aggregate.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import Connection, and_, bindparam, case, func, literal, or_, select, tuple_, update
from sqlalchemy.exc import OperationalError
from ulid import ULID

from mailnode import audit, budgets
from mailnode.authz import holds
from mailnode.errors import MailnodeError
from mailnode.governance import breakers, gatefacts, provider_io
from mailnode.governance.provider import (
    BreakerState,
    Decision,
    ProviderLimits,
    Refusal,
    breaker_state,
    may_send,
)
from mailnode.node import Node
from mailnode.outbound import handover, suppression
from mailnode.outbound.movable import lease_expired_sql, movable_now_sql
from mailnode.outbound.render import OutboundAttachment, attachments_of, written_address
from mailnode.outbound.return_path import verp_address
from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.transports import Submission, SubmitOutcome, SubmitState, Transport, make_transport
from mailnode.transports.base import TransportCapabilities
from mailnode.vocabulary.mail_classes import MailClass, parse_mail_class
from mailnode.vocabulary.send_states import (
    NOT_YET_LEFT,
    REASON_WORDS,
    SendState,
    StateReason,
    aggregate,
    recipient_submittable,
)

log = logging.getLogger("mailnode.dispatch")

T = TypeVar("T")

#: Audit outcome of ``send.<state>`` by the state a dispatch ends in.
_AUDIT_OUTCOME: dict[SendState, Any] = {
    SendState.HANDED_OVER: "ok",
    SendState.OUTCOME_UNKNOWN: "failed",
    SendState.THROTTLED: "refused",
    SendState.REFUSED: "refused",
    SendState.SUPPRESSED: "refused",
}
#: Recipient states a withholding moves to ``withheld`` (rows that never left).


@dataclass(frozen=True)
class DispatchResult:
    """What ``dispatch_one`` did: ``state`` is the send's state afterwards, or None when it did not move it."""

    manifest_id: str
    state: str | None
    detail: str = ""


@dataclass
class SweepReport:
    """One sweep: claims recovered, and each send it tried."""

    recovered: int = 0
    results: list[DispatchResult] = field(default_factory=list)


def dedup_window_open(caps: TransportCapabilities, first_attempt_at: datetime | None, now: datetime) -> bool:
    """True when the transport deduplicates a repeated key and its window, measured from the first
    attempt (which never moves), has not closed (spec/outbound.md Part A 6)."""
    window = caps.idempotency_window_seconds
    if window is None:
        return False
    start = first_attempt_at or now
    return now < start + timedelta(seconds=window)


def backoff_seconds(attempts: int, retry_after: float | None) -> float:
    """Seconds before a throttled send comes round: BASE * 2^(attempts-1), capped, or the transport's ask."""
    base = min(budgets.DISPATCH_BACKOFF_MAX_SECONDS,
               budgets.DISPATCH_BACKOFF_BASE_SECONDS * 2 ** max(0, min(attempts - 1, 20)))
    return max(float(base), retry_after or 0.0)


def withhold(conn: Connection, row: Any, reason: StateReason, now: datetime, detail: str = "") -> bool:
    """Withhold a movable send (guarded by ``movable_now``); recipients that never left follow it.

    Returns False when the send was no longer movable (someone else moved it). Audits ``send.withheld``.
    """
    done = conn.execute(update(send_manifests)
                        .where(send_manifests.c.id == row.id, movable_now_sql(now))
                        .values(state=SendState.WITHHELD.value, state_reason=reason.value, state_at=now,
                                last_error=detail or REASON_WORDS[reason]))
    if done.rowcount != 1:
        return False
    conn.execute(update(send_recipients)
                 .where(send_recipients.c.manifest_id == row.id, send_recipients.c.submission_state.in_(NOT_YET_LEFT))
                 .values(submission_state=SendState.WITHHELD.value, submission_state_at=now))
    audit.append(conn, org_id=row.org_id, at=now, action="send.withheld", actor_id=None, subject=row.id,
                 outcome="refused", detail={"reason": reason.value, "evidence": detail[:300]})
    return True


def _withhold_words(row: Any, reason: StateReason, governance_detail: str) -> str:
    """The ``last_error`` of a send the hand-over decision withholds."""
    if reason is StateReason.NOT_CLASSIFIED:
        return f"The mail class {row.mail_class!r} is not known."
    if reason is StateReason.AUTHORITY_LOST:
        return f"{row.author_id} no longer holds send.propose on {row.mailbox_id}."
    return governance_detail


def is_system_mail(row: Any) -> bool:
    """The node's own mail: ``Auto-Submitted: auto-generated`` on a class other than correspondence."""
    return row.auto_submitted == "auto-generated" and row.mail_class != MailClass.CORRESPONDENCE.value


def gate_provider_unavailable(conn: Connection, row: Any, now: datetime, detail: str) -> bool:
    """Gate a movable correspondence send ``awaiting/provider_unavailable`` (on the transition only).

    Guarded by ``movable_now`` and by not already waiting for that reason; recipients that have not left
    follow; ``send.provider_unavailable`` is audited. Returns True when the send was gated now.
    """
    m = send_manifests.c
    reason = StateReason.PROVIDER_UNAVAILABLE.value
    done = conn.execute(update(send_manifests)
                        .where(m.id == row.id, movable_now_sql(now),
                               ~and_(m.state == SendState.AWAITING.value, m.state_reason == reason))
                        .values(state=SendState.AWAITING.value, state_reason=reason, state_at=now,
                                last_error=detail or REASON_WORDS[StateReason.PROVIDER_UNAVAILABLE]))
    if done.rowcount != 1:
        return False
    conn.execute(update(send_recipients)
                 .where(send_recipients.c.manifest_id == row.id, send_recipients.c.submission_state.in_(NOT_YET_LEFT))
                 .values(submission_state=SendState.AWAITING.value, submission_state_at=now))
    audit.append(conn, org_id=row.org_id, at=now, action="send.provider_unavailable", actor_id=None,
                 subject=row.id, outcome="refused", detail={"at": "dispatch", "evidence": detail[:300]})
    return True


def _submission(row: Any, rec: Any, rendered: bytes, text: str, bounce_domain: str, html: str | None = None,
                attachments: tuple[OutboundAttachment, ...] = ()) -> Submission:
    headers: list[tuple[str, str]] = []
    if row.in_reply_to_header:
        headers.append(("In-Reply-To", row.in_reply_to_header))
    if row.references_header:
        headers.append(("References", row.references_header))
    if row.auto_submitted:
        headers.append(("Auto-Submitted", row.auto_submitted))
    # Application mail's custom headers (outbound.mail_fields' allowlist) travel as the rendered ones do.
    headers.extend((str(n), str(v)) for n, v in (row.custom_headers or []))
    return Submission(
        manifest_id=row.id, recipient_id=rec.id, recipient=rec.address,
        envelope_from=verp_address(rec.id, bounce_domain), rendered=rendered,
        message_id=f"<{row.rfc_message_id}>", from_header=written_address(row.envelope_from, row.from_name),
        to=tuple(row.to_addresses), cc=tuple(row.cc_addresses), bcc=tuple(row.bcc_addresses), subject=row.subject,
        text=text, headers=tuple(headers), html=html,
        attachments=tuple((a.filename, a.content_type, a.data) for a in attachments),
        reply_to=tuple(str(a) for a in (row.reply_to or [])),
    )


async def dispatch_one(node: Node, transport: Transport, manifest_id: str, *, executor_id: str = "local",
                       lease_seconds: float = budgets.DISPATCH_LEASE_SECONDS) -> DispatchResult:
    """Dispatch one send if it is movable now: ``dispatch_batch`` of that one send (see the module docstring).

    Never raises for a transport's failure (it becomes the recorded state); raises a database error
    or ``MailnodeError`` from the audit trail (nothing of that step committed).
    """
    results = await dispatch_batch(node, transport, [manifest_id], executor_id=executor_id,
                                   lease_seconds=lease_seconds, isolate=False)
    return results[0]


@dataclass
class _Send:
    """One claimed send of a batch: what its hand-overs need, and what they have done so far."""

    row: Any
    mail_class: MailClass
    rendered: bytes
    text: str
    html: str | None
    attached: tuple[OutboundAttachment, ...]
    attempts: int = 0
    bounce: str = ""
    queue: list[Any] = field(default_factory=list)
    final: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    retry_after: float | None = None
    stopped: bool = False


@dataclass
class _Answer:
    """One transport answer, kept until the batch's next transaction records it."""

    send: _Send
    rec: Any
    outcome: SubmitOutcome
    answered_at: datetime
    reservation: provider_io.Reservation
    raised: bool = False


@dataclass
class _Proceed:
    """A send the recheck let through, with its sealed bytes read back."""

    row: Any
    mail_class: MailClass
    rendered: bytes
    text: str
    html: str | None
    attached: tuple[OutboundAttachment, ...]


def _read_evidence(node: Node, row: Any) -> tuple[bytes, str, str | None, tuple[OutboundAttachment, ...]]:
    """The sealed bytes of ``row`` (rendered, text, HTML, attachments); raises ``MailnodeError`` when one is
    missing or altered."""
    rendered = node.evidence.get(row.rendered_sha256)
    text = node.evidence.get(row.body_typed_sha256).decode("utf-8")
    # A reconstructing provider (Resend) is handed the HTML part and the attachments as fields; the
    # attachments are read back from the rendered message, the one copy kept.
    html = node.evidence.get(row.body_html_sha256).decode("utf-8") if row.body_html_sha256 else None
    attached = attachments_of(rendered) if row.attachments else ()
    return rendered, text, html, attached


def _decide(conn: Connection, row: Any, facts: gatefacts.BatchFacts, authority: dict[tuple[str, str, str], bool],
            provider_decision: Callable[[str], Decision]) -> tuple[handover.HandoverDecision, Any, Decision | None]:
    """Read one send's facts (the batch's, cached) and decide its hand-over (``handover.decide``)."""
    mail_class = parse_mail_class(row.mail_class)
    system = is_system_mail(row)
    key = (row.org_id, row.author_id, row.mailbox_id)
    if not system and key not in authority:
        authority[key] = holds(conn, row.org_id, row.author_id, "send.propose", "mailbox", row.mailbox_id)
    held = system or authority[key]
    gov = facts.recheck(conn, org_id=row.org_id, manifest_id=row.id, mailbox_id=row.mailbox_id,
                        author_id=row.author_id, recipients=[*row.to_addresses, *row.cc_addresses, *row.bcc_addresses],
                        is_reply=row.in_reply_to_message_id is not None,
                        sending_domain=row.envelope_from.rpartition("@")[2], bound_outcome=row.policy_outcome)
    provider = provider_decision(mail_class.value) if mail_class is not None else None
    decision = handover.decide(handover.HandoverFacts(
        mail_class=row.mail_class, system_mail=system, authority_held=held,
        withhold_reason=StateReason(gov.withhold_reason) if gov.withhold_reason is not None else None,
        provider_allowed=provider is not None and provider.allowed,
        rate_gate=StateReason(gov.rate_gate.reason) if gov.rate_gate is not None else None))
    return decision, gov, provider


def _write_decision(node: Node, row: Any, decision: handover.HandoverDecision, gov: Any, provider: Decision | None,
                    now: datetime) -> DispatchResult:
    """Write a decision other than ``proceed`` in a transaction of its own (guarded by ``movable_now``)."""
    manifest_id = row.id
    mail_class = parse_mail_class(row.mail_class)
    with node.begin() as conn:
        if decision.step is handover.Step.WITHHOLD and decision.reason is not None:
            withhold(conn, row, decision.reason, now, _withhold_words(row, decision.reason, gov.withhold_detail))
            return DispatchResult(manifest_id, SendState.WITHHELD.value, decision.reason.value)
        if decision.step in (handover.Step.GATE_PROVIDER, handover.Step.LEAVE):
            cls = mail_class.value if mail_class is not None else row.mail_class
            refused_as = provider.reason if provider is not None else None
            reason_text = f"The provider refuses {cls} mail now ({refused_as})."
            if decision.step is handover.Step.GATE_PROVIDER:
                gated = gate_provider_unavailable(conn, row, now, reason_text)
                return DispatchResult(manifest_id, SendState.AWAITING.value if gated else None,
                                      StateReason.PROVIDER_UNAVAILABLE.value)
            return DispatchResult(manifest_id, None, StateReason.PROVIDER_UNAVAILABLE.value)
        if decision.step is handover.Step.GATE_RATE and gov.rate_gate is not None:
            gated = gatefacts.record_rate_limited(conn, org_id=row.org_id, manifest_id=row.id,
                                                  mailbox_id=row.mailbox_id, reading=gov.rate_gate, now=now,
                                                  at="dispatch", guard=movable_now_sql(now))
            return DispatchResult(manifest_id, SendState.AWAITING.value if gated else None, gov.rate_gate.reason)
    raise ValueError(f"hand-over decision {decision} has no writer; this is a defect in dispatch")


def _withhold_evidence(node: Node, row: Any, exc: MailnodeError, now: datetime) -> DispatchResult:
    """Withhold a send whose sealed bytes could not be read back (retention's purge, or corruption)."""
    with node.begin() as conn:
        # A body retention deleted (a purge record exists) is the setting working, not corruption.
        refusal = retention_io.content_refusal(conn, source_id=row.id, read_error=exc) or exc
        if refusal.code == "E_CONTENT_DELETED":
            withhold(conn, row, StateReason.RETENTION_DELETED, now, refusal.what)
            log.warning("send.retention_deleted manifest=%s", row.id)
            return DispatchResult(row.id, SendState.WITHHELD.value, StateReason.RETENTION_DELETED.value)
        withhold(conn, row, StateReason.EVIDENCE_CHANGED, now, exc.render())
    log.error("send.evidence_changed manifest=%s %s", row.id, exc.code)
    return DispatchResult(row.id, SendState.WITHHELD.value, StateReason.EVIDENCE_CHANGED.value)


_R = send_recipients.c
#: One recipient's answer, written for a window of answers at once (executemany; bound names kept apart
#: from the column names, which SQLAlchemy reserves for the SET clause).
_RECORD_ANSWER = (update(send_recipients).where(_R.id == bindparam("b_id"))
                  .values(submission_state=bindparam("b_state"), submission_state_at=bindparam("b_at"),
                          last_error=bindparam("b_error"), transport_message_id=bindparam("b_tmid"),
                          provider_message_id=bindparam("b_pmid")))


def _record_answers(conn: Connection, transport_name: str, answers: list[_Answer], limits: ProviderLimits,
                    now: datetime) -> Any:
    """Write a window's answers: each recipient's outcome (one statement) and the provider breaker's fold of
    them all (``provider_io.record_many``, three). Returns the provider status written."""
    rows = []
    for a in answers:
        handed = a.outcome.state is SubmitState.HANDED_OVER
        rows.append({"b_id": a.rec.id, "b_state": a.outcome.state.value, "b_at": a.answered_at,
                     "b_error": None if handed else (a.outcome.detail or a.outcome.error_name or a.outcome.state.value),
                     "b_tmid": a.outcome.transport_message_id or a.rec.transport_message_id,
                     "b_pmid": a.outcome.provider_message_id or a.rec.provider_message_id})
    conn.execute(_RECORD_ANSWER, rows)
    return provider_io.record_many(conn, transport_name, [(a.outcome, a.answered_at, a.reservation.ticket)
                                                          for a in answers], limits,
                                   request_ids=[a.reservation.request_id for a in answers], now=now)


def _throttle_rest(conn: Connection, rest: list[Any], words: str, now: datetime) -> dict[str, str]:
    """Write ``throttled`` on the not-yet-submitted rows of ``rest`` (provably never offered, so always
    submittable again) once the breaker refused the class mid-send; returns ``{recipient id: state}``.

    ``throttled`` rather than left ``held`` so the send's aggregate is ``throttled`` and it comes round
    (``states.aggregate`` ranks a hand-over above a ``held`` row). Rows left ``outcome_unknown`` are not
    touched: they may have left. Each write is guarded by the state read.
    """
    waiting: dict[str, str] = {}
    for r in rest:
        if r.submission_state not in NOT_YET_LEFT:
            continue
        done = conn.execute(update(send_recipients)
                            .where(_R.id == r.id, _R.submission_state == r.submission_state)
                            .values(submission_state=SendState.THROTTLED.value, submission_state_at=now,
                                    last_error=f"Not submitted yet: {words}"))
        if done.rowcount == 1:
            waiting[r.id] = SendState.THROTTLED.value
    return waiting


@dataclass
class _Step:
    """What one window's transaction did: the status its answers made, the reservations, the rows marked
    and the rows throttled (per send)."""

    status: Any = None
    reserved: list[tuple[_Send, Any, provider_io.Reservation]] = field(default_factory=list)
    marked: set[str] = field(default_factory=set)
    throttled: dict[str, tuple[dict[str, str], str]] = field(default_factory=dict)


def _finish_values(send: _Send, now: datetime) -> dict[str, Any]:
    """The aggregate of one send and what its row and ``send.<state>`` entry say."""
    state = aggregate(send.final.values())
    last_error = "; ".join(send.errors)[:2000] or None
    release_at = None
    if state is SendState.THROTTLED:
        release_at = now + timedelta(seconds=backoff_seconds(send.attempts, send.retry_after))
    counts: dict[str, int] = {}
    for s in send.final.values():
        counts[s] = counts.get(s, 0) + 1
    return {"state": state, "last_error": last_error, "release_at": release_at, "counts": counts}


_M = send_manifests.c


def _finish_batch(conn: Connection, sends: list[_Send], token: str, now: datetime) -> set[str]:
    """Write every send's aggregate and ``send.<state>`` in the caller's transaction; returns the ids written.

    The aggregates of the sends still under the batch's claim token are written in one statement (an
    UPDATE ... RETURNING of the sends it matched, each value chosen by the send's id), then the entries
    are appended per organisation in organisation order (``audit.append_many``: 2 each), so the transaction
    updates only its own sends before its first append and only inserts after it (``audit``'s deadlock rule).
    """
    if not sends:
        return set()
    values = {s.row.id: _finish_values(s, now) for s in sends}

    def by_send(key: str, column: Any, *, keep: bool = False) -> Any:
        whens = {sid: literal(v[key].value if key == "state" else v[key], column.type)
                 for sid, v in values.items() if not (keep and v[key] is None)}
        if not whens:
            return column
        return case(whens, value=_M.id, else_=column if keep else None)

    owned = set(conn.execute(
        update(send_manifests).where(_M.id.in_(list(values)), _M.claim_token == token)
        .values(state=by_send("state", _M.state), state_at=now, state_reason=None, lease_until=None,
                claim_token=None, last_error=by_send("last_error", _M.last_error),
                release_at=by_send("release_at", _M.release_at, keep=True))
        .returning(_M.id)).scalars())
    mine = [s for s in sends if s.row.id in owned]
    for org_id in sorted({s.row.org_id for s in mine}):
        audit.append_many(conn, org_id=org_id, entries=[
            audit.Entry(at=now, action=f"send.{values[s.row.id]['state'].value}", actor_id=None, subject=s.row.id,
                        outcome=_AUDIT_OUTCOME.get(values[s.row.id]["state"], "failed"),
                        detail={"attempts": s.attempts, "recipients": values[s.row.id]["counts"],
                                "last_error": values[s.row.id]["last_error"]})
            for s in mine if s.row.org_id == org_id])
    return owned


async def dispatch_batch(node: Node, transport: Transport, manifest_ids: list[str], *, executor_id: str = "local",
                         lease_seconds: float = budgets.DISPATCH_LEASE_SECONDS,
                         isolate: bool = True) -> list[DispatchResult]:
    """Dispatch a batch of sends together (issue 19); one ``DispatchResult`` per id, in the order given.

    The order of steps is ``dispatch_one``'s (the module docstring), taken per batch:

    1. one read transaction: the sends still movable (1 statement) and their facts, governance's read once
       per organisation and sending domain (``gatefacts.BatchFacts``), the author's authority once per
       author and mailbox, the provider breaker once per class; each send's ``handover.decide``;
    2. the sealed bytes of each send the decision lets through, read back outside any transaction; the
       refusals and gates written, each in a short transaction of its own (guarded by ``movable_now``);
    3. one transaction claims every send let through (one UPDATE ... RETURNING, one claim token for the
       batch), re-reads the suppression list (one statement per organisation) and reads the recipients;
    4. windows of at most ``budgets.DISPATCH_CONCURRENCY`` recipients (one per send at a time, so a send's
       recipients go in order): one transaction records the previous window's answers and reserves
       (``provider_io.reserve_many``: one reservation per request) and marks this window's rows
       ``outcome_unknown`` (one statement) *before* any of them is submitted; then they are submitted
       together. A row left ``outcome_unknown`` therefore still means "may have left";
    5. one transaction records the last window's answers, every send's aggregate and the audit entries.

    Those transactions are retried on a transient database error (``record_with_retries``). With
    ``isolate`` (a sweep) one send's defect is logged with its traceback (``send.dispatch_failed``) and that
    send is left as it was while the others go on; without it (``dispatch_one``) the defect propagates.
    """
    now = node.clock.now()
    token = f"{executor_id}/{ULID()}"
    caps = transport.capabilities
    limits = provider_io.limits_of(node.settings)
    results: dict[str, DispatchResult] = {}

    facts = gatefacts.BatchFacts(now=now, delivery_signals=str(caps.delivery_signals))
    plans: list[tuple[Any, handover.HandoverDecision, Any, Decision | None]] = []
    with node.read() as conn:
        rows = {r.id: r for r in conn.execute(select(send_manifests).where(
            _M.id.in_(manifest_ids), movable_now_sql(now))).all()}
        authority: dict[tuple[str, str, str], bool] = {}
        provider: dict[str, Decision] = {}

        def provider_decision(cls: str) -> Decision:
            if cls not in provider:
                provider[cls] = provider_io.decide(conn, caps.name, cls, now, limits)
            return provider[cls]

        for mid in manifest_ids:
            row = rows.get(mid)
            if row is None:
                results[mid] = DispatchResult(mid, None, "not movable now")
                continue
            try:
                decision, gov, refused = _decide(conn, row, facts, authority, provider_decision)
            except Exception:
                if not isolate:
                    raise
                # One send's defect must not sink its batch: it is logged with its traceback and left as it
                # was (nothing of it written), to be tried again by the next sweep; the others go on.
                log.exception("send.dispatch_failed manifest=%s", mid)
                results[mid] = DispatchResult(mid, None, "dispatch_failed")
                continue
            if decision.step is handover.Step.PROCEED:
                facts.will_hand_over(row.org_id, len(row.to_addresses) + len(row.cc_addresses)
                                     + len(row.bcc_addresses))
            plans.append((row, decision, gov, refused))
        bounce_domains = {org: (node.settings.bounce_domain.lower() if node.settings.bounce_domain
                                else next(iter(facts.org_domains(conn, org)), ""))
                          for org in {r.org_id for r, d, _, _ in plans if d.step is handover.Step.PROCEED}}

    proceed: list[_Proceed] = []
    for row, decision, gov, refused in plans:
        try:
            if decision.step is not handover.Step.PROCEED:
                results[row.id] = _write_decision(node, row, decision, gov, refused, now)
                continue
            mail_class = parse_mail_class(row.mail_class)
            if mail_class is None:
                raise ValueError(f"hand-over decision {decision} for an unknown class; this is a defect in dispatch")
            try:
                rendered, text, html, attached = _read_evidence(node, row)
            except MailnodeError as exc:
                results[row.id] = _withhold_evidence(node, row, exc, now)
                continue
            proceed.append(_Proceed(row, mail_class, rendered, text, html, attached))
        except Exception:
            if not isolate:
                raise
            log.exception("send.dispatch_failed manifest=%s", row.id)
            results[row.id] = DispatchResult(row.id, None, "dispatch_failed")
    if proceed:
        await _hand_over(node, transport, proceed, results, token=token, now=now, limits=limits,
                         lease_seconds=lease_seconds, bounce_domains=bounce_domains, isolate=isolate)
    return [results[mid] for mid in manifest_ids]


async def _hand_over(node: Node, transport: Transport, proceed: list[_Proceed], results: dict[str, DispatchResult],
                     *, token: str, now: datetime, limits: ProviderLimits, lease_seconds: float,
                     bounce_domains: dict[str, str], isolate: bool) -> None:
    """Steps 3 to 5 of ``dispatch_batch``: claim, submit in windows, record. Fills ``results``."""
    caps = transport.capabilities
    ids = [p.row.id for p in proceed]

    def claim(conn: Connection) -> tuple[dict[str, Any], Sequence[Any]]:
        claimed = {r.id: r for r in conn.execute(
            update(send_manifests).where(_M.id.in_(ids), movable_now_sql(now))
            .values(state=SendState.OUTCOME_UNKNOWN.value, state_at=now, state_reason=None,
                    attempts=_M.attempts + 1, first_attempt_at=func.coalesce(_M.first_attempt_at, now),
                    lease_until=now + timedelta(seconds=lease_seconds), claim_token=token)
            .returning(_M.id, _M.attempts, _M.first_attempt_at)).all()}
        if not claimed:
            return claimed, []
        # The suppression list again (it may have grown since the seal): listed rows never reach the transport.
        for org_id in sorted({p.row.org_id for p in proceed if p.row.id in claimed}):
            suppression.suppress_many(conn, org_id=org_id, at=now, manifest_ids=[
                p.row.id for p in proceed if p.row.id in claimed and p.row.org_id == org_id])
        recipients = conn.execute(select(send_recipients).where(_R.manifest_id.in_(list(claimed)))
                                  .order_by(_R.manifest_id, _R.kind, _R.address)).all()
        return claimed, recipients

    try:
        with node.begin() as conn:
            claimed, recipients = claim(conn)
    except Exception:
        if not isolate:
            raise
        # Nothing of the claim committed: every send of the batch is left as it was, for the next sweep.
        log.exception("send.dispatch_failed manifests=%s", ",".join(ids))
        results.update({mid: DispatchResult(mid, None, "dispatch_failed") for mid in ids})
        return
    by_send: dict[str, list[Any]] = {}
    for r in recipients:
        by_send.setdefault(r.manifest_id, []).append(r)
    sends: list[_Send] = []
    for p in proceed:
        got = claimed.get(p.row.id)
        if got is None:
            results[p.row.id] = DispatchResult(p.row.id, None, "claimed by another worker")
            continue
        recs = by_send.get(p.row.id, [])
        dedup_open = dedup_window_open(caps, got.first_attempt_at or now, now)
        sends.append(_Send(row=p.row, mail_class=p.mail_class, rendered=p.rendered, text=p.text, html=p.html,
                           attached=p.attached, attempts=int(got.attempts),
                           bounce=bounce_domains.get(p.row.org_id) or p.row.envelope_from.rpartition("@")[2],
                           queue=[r for r in recs if recipient_submittable(r.submission_state,
                                                                           dedup_window_open=dedup_open)],
                           final={r.id: r.submission_state for r in recs}))
    pending: list[_Answer] = []
    try:
        while True:
            window = [s for s in sends if not s.stopped and s.queue][:budgets.DISPATCH_CONCURRENCY]
            if not window:
                break
            answered = {id(a.send) for a in pending}

            def step(conn: Connection, window: list[_Send] = window, pending: list[_Answer] = pending,
                     answered: set[int] = answered) -> _Step:
                out = _Step()
                at = node.clock.now()
                go = window
                if pending:
                    out.status = _record_answers(conn, caps.name, pending, limits, at)
                    if breaker_state(out.status, at) is BreakerState.SHUT:
                        # The provider stopped taking mail: a send whose answer this was waits, its rows left
                        # as they were (it aggregates throttled: every pausing answer is itself throttled);
                        # the others ask the breaker and are refused.
                        go = [s for s in window if id(s) not in answered]
                reservations = provider_io.reserve_many(conn, caps.name, [(s.mail_class.value, s.row.id) for s in go],
                                                        at, limits, lease_seconds=lease_seconds)
                allowed: list[tuple[_Send, Any, provider_io.Reservation]] = []
                for s, res in zip(go, reservations, strict=True):
                    if res.decision.allowed:
                        allowed.append((s, s.queue[0], res))
                        continue
                    words = _refusal_words(s.mail_class, res.decision, limits)
                    log.info("send.provider_refused_mid_send manifest=%s class=%s reason=%s", s.row.id,
                             s.mail_class.value, res.decision.reason)
                    out.throttled[s.row.id] = (_throttle_rest(conn, s.queue, words, at), words)
                if allowed:
                    out.marked = set(conn.execute(
                        update(send_recipients)
                        .where(tuple_(_R.id, _R.submission_state).in_([(r.id, r.submission_state)
                                                                       for _, r, _ in allowed]))
                        .values(submission_state=SendState.OUTCOME_UNKNOWN.value, submission_state_at=at,
                                attempts=_R.attempts + 1)
                        .returning(_R.id)).scalars())
                    provider_io.release_many(conn, [res.request_id for _, r, res in allowed
                                                    if r.id not in out.marked])
                out.reserved = allowed
                return out

            done = record_with_retries(node, step, what=f"window of {len(window)} recipient(s)",
                                       manifest_id=window[0].row.id)
            answered_sends = {id(a.send) for a in pending}
            pending = []
            if done.status is not None and breaker_state(done.status, node.clock.now()) is BreakerState.SHUT:
                for s in window:
                    if id(s) in answered_sends:
                        s.stopped = True
            for s in window:
                if s.row.id in done.throttled:
                    waiting, words = done.throttled[s.row.id]
                    s.final.update(waiting)
                    if waiting:
                        s.errors.append(f"{len(waiting)} recipient(s) not submitted yet: {words}")
                    s.stopped = True
            marked = [(s, r, res) for s, r, res in done.reserved if r.id in done.marked]
            for s, r, _ in done.reserved:
                s.queue.pop(0)
                if r.id in done.marked:
                    s.final[r.id] = SendState.OUTCOME_UNKNOWN.value
            if not marked:
                continue
            pending = list(await asyncio.gather(*(_submit(transport, s, r, res, node) for s, r, res in marked)))
            for a in pending:
                a.send.final[a.rec.id] = a.outcome.state.value
                if a.outcome.state is not SubmitState.HANDED_OVER:
                    a.send.errors.append(f"{a.rec.address}: "
                                         f"{a.outcome.detail or a.outcome.error_name or a.outcome.state.value}")
                if a.outcome.retry_after_seconds is not None:
                    a.send.retry_after = max(a.send.retry_after or 0.0, a.outcome.retry_after_seconds)
                if a.raised:
                    # No further recipient of a send whose transport raised is attempted in this pass.
                    a.send.stopped = True

        def finish(conn: Connection, pending: list[_Answer] = pending) -> set[str]:
            at = node.clock.now()
            if pending:
                _record_answers(conn, caps.name, pending, limits, at)
            return _finish_batch(conn, sends, token, at)

        owned = record_with_retries(node, finish, what=f"batch of {len(sends)} send(s)",
                                    manifest_id=sends[0].row.id if sends else "")
    except Exception:
        if not isolate:
            raise
        # What committed stays (every mark before its submission); the claims lapse and ``recover_claims``
        # resolves them from the recipients' rows.
        log.exception("send.dispatch_failed manifests=%s", ",".join(s.row.id for s in sends))
        results.update({s.row.id: DispatchResult(s.row.id, None, "dispatch_failed") for s in sends})
        return
    for s in sends:
        if s.row.id not in owned:
            log.warning("send.claim_lost manifest=%s token=%s", s.row.id, token)
            results[s.row.id] = DispatchResult(s.row.id, None,
                                               "the claim was recovered by another worker before it finished")
            continue
        v = _finish_values(s, now)
        results[s.row.id] = DispatchResult(s.row.id, v["state"].value, v["last_error"] or "")


async def _submit(transport: Transport, send: _Send, rec: Any, reservation: provider_io.Reservation,
                  node: Node) -> _Answer:
    """Hand one marked recipient to the transport; a transport that raises is an ``outcome_unknown`` answer
    (logged with its traceback)."""
    row = send.row
    raised = False
    try:
        outcome = await transport.submit(_submission(row, rec, send.rendered, send.text, send.bounce, send.html,
                                                     send.attached))
    except Exception as exc:
        log.exception("send.transport_raised manifest=%s recipient=%s", row.id, rec.id)
        outcome = SubmitOutcome(state=SubmitState.OUTCOME_UNKNOWN, error_name="transport_raised",
                                detail=f"the transport raised {type(exc).__name__}: {exc}")
        raised = True
    return _Answer(send, rec, outcome, node.clock.now(), reservation, raised)


def _refusal_words(mail_class: MailClass, decision: Decision, limits: ProviderLimits) -> str:
    """What a person reads on a recipient the provider breaker stopped before its request."""
    if decision.reason is Refusal.QUOTA_CEILING:
        ceiling = limits.ceiling_for(mail_class)
        until = decision.reopens_at.isoformat() if decision.reopens_at else "the next UTC day"
        return (f"the provider's daily quota reading reached the {mail_class.value} ceiling ({ceiling}); "
                f"it goes again after {until}.")
    return f"the provider refuses {mail_class.value} mail now ({decision.reason})."


def record_with_retries(node: Node, write: Callable[[Connection], T], *, what: str, manifest_id: str,
                        attempts: int = budgets.DISPATCH_RECORD_ATTEMPTS) -> T:
    """Run ``write`` in a transaction of its own, again on a transient database error, at most ``attempts``
    times; returns what ``write`` returned.

    Transient is ``sqlalchemy.exc.OperationalError`` (a PostgreSQL deadlock or serialization failure,
    SQLite's busy timeout): each attempt rolled back whole, so a retry writes once. Anything else, and the
    last attempt's error, propagates (logged with ``what`` was not recorded); nothing is swallowed.
    """
    for attempt in range(1, attempts + 1):
        try:
            with node.begin() as conn:
                return write(conn)
        except OperationalError as exc:
            if attempt == attempts:
                log.error("send.record_failed manifest=%s what=%r attempts=%d: %s", manifest_id, what, attempt,
                          exc.orig)
                raise
            log.warning("send.record_retried manifest=%s what=%r attempt=%d: %s", manifest_id, what, attempt,
                        exc.orig)
    # Only reached with attempts < 1: the loop above returns or raises.
    raise ValueError(f"record_with_retries needs at least 1 attempt, not {attempts}")


def capabilities_of(node: Node) -> TransportCapabilities:
    """The configured transport's capabilities (the transport is built and closed again)."""
    transport = make_transport(node.settings)
    try:
        return transport.capabilities
    finally:
        asyncio.run(transport.aclose())


#: ``state_reason`` of sends whose turn in a batch is a recheck of a rate breaker, not a hand-over (every
#: breaker's reason, ``governance.breakers.REASON_OF``).
_BREAKER_RECHECKS = tuple(sorted(breakers.REASON_OF.values()))


def due_ids(node: Node, limit: int = budgets.DISPATCH_BATCH_MAX, mailbox_ids: list[str] | None = None,
            transport_name: str | None = None) -> list[str]:
    """Ids of mail movable now, at most ``limit`` (two statements: the provider breaker, then the sends):
    sends that may go first, oldest ``release_at`` first; then sends waiting behind a rate breaker whose
    recheck time has come, oldest first.

    Correspondence, and deferrable mail's **first** hand-over (``attempts == 0``, younger than the give-up
    age), so a notice or an application's queued mail leaves within a dispatch interval rather than a
    sweeper interval; once an attempt has failed, deferrable mail is the notify sweeper's, under its three
    refusals (``outbound.classes.DeliveredBy``). Deferrable mail is not taken while the provider refuses its
    class or while the breaker owes a probe (the sweeper probes with one send). Realtime mail goes inside
    its request. While the breaker refuses correspondence, sends waiting ``awaiting/provider_unavailable``
    are not read (``movable_now``). Rechecks come last so that one organisation's tripped breaker, however
    many sends it gates, never takes a batch's place from another organisation's mail (each recheck moves
    the send's ``release_at`` past ``now``, so the rechecks themselves take turns too).
    """
    now = node.clock.now()
    limits = provider_io.limits_of(node.settings)
    with node.read() as conn:
        status = provider_io.read_status(conn, transport_name or node.settings.transport)
    correspondence = may_send(status, MailClass.CORRESPONDENCE, now, limits)
    provider_io.emit(correspondence.logs)
    deferrable = may_send(status, MailClass.DEFERRABLE, now, limits)
    m = send_manifests.c
    classes = m.mail_class == MailClass.CORRESPONDENCE.value
    if deferrable.allowed and not deferrable.probe:
        first_deferrable = and_(m.mail_class == MailClass.DEFERRABLE.value, m.attempts == 0,
                                m.sealed_at > now - timedelta(seconds=node.settings.sweeper_give_up_age_seconds))
        classes = or_(classes, first_deferrable)
    q = select(m.id).where(movable_now_sql(now, provider_shut=not correspondence.allowed), classes)
    if mailbox_ids is not None:
        q = q.where(m.mailbox_id.in_(mailbox_ids))
    with node.read() as conn:
        recheck = case((m.state_reason.in_(_BREAKER_RECHECKS), 1), else_=0)
        q = q.order_by(recheck, m.release_at, m.id).limit(limit)
        return [r.id for r in conn.execute(q).all()]


def recover_one(conn: Connection, row: Any, now: datetime, dedup_open: bool) -> bool:
    """Resolve one lapsed claim (guarded by its claim token): ``held`` when a recipient may still be
    submitted, else its recipients' aggregate. Returns True when this call resolved it."""
    states = [r.submission_state for r in conn.execute(
        select(send_recipients.c.submission_state).where(send_recipients.c.manifest_id == row.id)).all()]
    movable = any(recipient_submittable(s, dedup_window_open=dedup_open) for s in states)
    ambiguous = sum(1 for s in states if s == SendState.OUTCOME_UNKNOWN.value)
    note = (f"The worker holding the claim stopped (lease until {row.lease_until}); "
            f"{ambiguous} recipient(s) may have been handed over.")
    target = SendState.HELD if movable else aggregate(states)
    done = conn.execute(update(send_manifests).where(send_manifests.c.id == row.id,
                                                     send_manifests.c.claim_token == row.claim_token)
                        .values(state=target.value, state_at=now, state_reason=None, lease_until=None,
                                claim_token=None, last_error=note))
    if done.rowcount != 1:
        return False
    action = "send.claim_recovered" if movable else f"send.{target.value}"
    audit.append(conn, org_id=row.org_id, at=now, action=action, actor_id=None, subject=row.id,
                 outcome="ok" if movable else _AUDIT_OUTCOME.get(target, "failed"),
                 detail={"ambiguous_recipients": ambiguous, "state": target.value,
                         "lapsed_claim": row.claim_token})
    return True


def recover_claims(node: Node, caps: TransportCapabilities, *, own_executor_id: str | None = None,
                   limit: int = budgets.DISPATCH_BATCH_MAX) -> int:
    """Resolve lapsed claims (lease expired, or held under ``own_executor_id`` at start-up); returns how many.

    A send with a recipient ``recipient_submittable`` allows goes back to ``held`` (``release_at``
    unchanged, so it is movable at once) and is audited ``send.claim_recovered``; otherwise it takes the
    aggregate of its recipients and ``send.<state>``.
    """
    now = node.clock.now()
    cond = lease_expired_sql(now)
    if own_executor_id:
        prefix = f"{own_executor_id}/"
        cond = or_(cond, and_(send_manifests.c.state == SendState.OUTCOME_UNKNOWN.value,
                              func.substr(send_manifests.c.claim_token, 1, len(prefix)) == prefix))
    recovered = 0
    with node.read() as conn:
        rows = conn.execute(select(send_manifests).where(cond).limit(limit)).all()
    # One transaction per send (each guarded by its claim token): a transaction that has appended to the
    # audit chain updates no other send afterwards, so two recoverers cannot deadlock on the chain lock.
    for row in rows:
        with node.begin() as conn:
            if recover_one(conn, row, now, dedup_window_open(caps, row.first_attempt_at, now)):
                recovered += 1
    if recovered:
        log.warning("send.claims_recovered count=%d", recovered)
    return recovered


async def sweep_async(node: Node, transport: Transport, *, executor_id: str = "local",
                      limit: int = budgets.DISPATCH_BATCH_MAX, mailbox_ids: list[str] | None = None,
                      lease_seconds: float = budgets.DISPATCH_LEASE_SECONDS) -> SweepReport:
    """Recover lapsed claims, then dispatch one bounded batch of due sends together (``dispatch_batch``: its
    database work is taken per batch, at most ``budgets.DISPATCH_CONCURRENCY`` hand-overs in flight at a
    time; one send's defect is logged and leaves that send as it was, the others finish)."""
    report = SweepReport(recovered=recover_claims(node, transport.capabilities))
    ids = due_ids(node, limit, mailbox_ids, transport.capabilities.name)
    if ids:
        report.results.extend(await dispatch_batch(node, transport, ids, executor_id=executor_id,
                                                   lease_seconds=lease_seconds))
    return report


def sweep(node: Node, *, transport: Transport | None = None, executor_id: str = "local",
          limit: int = budgets.DISPATCH_BATCH_MAX, mailbox_ids: list[str] | None = None,
          lease_seconds: float = budgets.DISPATCH_LEASE_SECONDS) -> SweepReport:
    """``sweep_async`` from synchronous code (no running event loop on this thread).

    Without ``transport`` it builds the configured one (``make_transport``) and closes it afterwards.
    """
    async def run() -> SweepReport:
        t = transport or make_transport(node.settings)
        try:
            return await sweep_async(node, t, executor_id=executor_id, limit=limit, mailbox_ids=mailbox_ids,
                                     lease_seconds=lease_seconds)
        finally:
            if transport is None:
                await t.aclose()

    return asyncio.run(run())
