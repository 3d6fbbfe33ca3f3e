"""Dispatch: recheck, claim, submit once per recipient, record; and recovery of lapsed claims.

``dispatch_one`` moves one send, in this order (spec/outbound.md §1.7; issue 4):
1. read it under ``movable_now`` (``outbound.movable``; nothing else decides what may move);
2. recheck, all before the claim so a refusal or a gate spends no attempt. Dispatch reads the facts and
   ``outbound.handover.decide`` (pure, class × facts, beside ``gates.decide``) chooses; dispatch writes
   its answer. The facts: the author still holds
   ``send.propose`` (else ``withheld/authority_lost``); then governance
   (``governance.gatefacts.recheck_facts``, 2 statements, 4 for a send bound ``require_approval``), the
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
3. claim: one conditional update to ``outcome_unknown`` (attempts + 1, a lease, ``state_reason`` cleared,
   ``first_attempt_at`` set once and never moved, a claim token); losing the race is not an error;
   In the claim's transaction the suppression list is read again (``outbound.suppression.suppress_recipients``,
   1 statement): a recipient not yet left whose address was listed after the seal becomes ``suppressed`` with
   its reason, is never submitted, and a send left with only such rows aggregates ``suppressed``;
4. per recipient that ``states.recipient_submittable`` allows: mark the row ``outcome_unknown`` (attempts
   + 1) *before* handing it to the transport, submit (SMTP: the VERP return path of that row), record
   the outcome. A row left ``outcome_unknown`` therefore means "may have left" and is never submitted
   again under a key the transport does not deduplicate;
5. the manifest's aggregate (``states.aggregate``) with ``send.<state>`` in the audit trail, guarded by
   the claim token. ``throttled`` comes round again after a back-off (``release_at``).

A transport that raises is recorded: that recipient stays ``outcome_unknown`` with the exception as its
``last_error``, the send ends ``outcome_unknown`` with the cause, and the traceback is logged; no further
recipient of that send is attempted in the pass.

What the transport answered is bookkeeping that must not be lost to a passing database fault: the
recipient's outcome and the send's aggregate (with its audit entry) are each written in a short
transaction of their own, retried up to ``budgets.DISPATCH_RECORD_ATTEMPTS`` times on a transient
database error (``sqlalchemy.exc.OperationalError``: a deadlock, a serialization failure, SQLite's busy
timeout). A send the transport accepted is therefore recorded ``handed_over``, never left
``outcome_unknown`` because a write after the hand-over failed once; if every attempt
fails the error propagates (logged with the answer that was not recorded) and the lapsed claim is
resolved from the recipients' rows by ``recover_claims``.

Mail classes and the provider breaker (spec/transactional.md §1–§2): after governance's refusals and
before the rate gate, the provider breaker is asked for the send's class. Correspondence it refuses is
gated ``awaiting/provider_unavailable`` (on the transition only, with ``send.provider_unavailable``
audited), drained by ``movable_now`` when the breaker reopens; deferrable and realtime mail it refuses is
left untouched, no attempt spent (the sweeper and the realtime request decide what that means). Policy
and approvals are correspondence's gates: for other classes only the domain pause, the author's
authority and the evidence check withhold, the rate breakers gate every class, and system mail (``Auto-Submitted:
auto-generated``, not correspondence) skips the authority check. Every transport answer is folded into the transport's
``provider_status`` row (``governance.provider_io.record``) in the transaction that records it, and a send
stops submitting further recipients once an answer shut the breaker. The claim asks the breaker for one
request, never for the whole send (a send larger than its class's ceiling would otherwise never go);
instead, before each recipient's request, ``provider_io.reserve`` asks ``may_send`` on the locked row with
the requests in flight (other workers' included) counted against the ceiling and reserves a ticket, which
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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import Connection, and_, case, func, or_, select, update
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
from mailnode.outbound.return_path import bounce_domain_for, verp_address
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
    """Dispatch one send if it is movable now; see the module docstring for the order of steps.

    Never raises for a transport's failure (it becomes the recorded state); raises a database error
    or ``MailnodeError`` from the audit trail (nothing of that step committed).
    """
    now = node.clock.now()
    token = f"{executor_id}/{ULID()}"
    caps = transport.capabilities
    limits = provider_io.limits_of(node.settings)
    with node.begin() as conn:
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == manifest_id,
                                                        movable_now_sql(now))).first()
        if row is None:
            return DispatchResult(manifest_id, None, "not movable now")
        # Read the facts (authority, governance, the provider breaker), decide once, write the answer.
        mail_class = parse_mail_class(row.mail_class)
        system = is_system_mail(row)
        authority = system or holds(conn, row.org_id, row.author_id, "send.propose", "mailbox", row.mailbox_id)
        gov = gatefacts.recheck_facts(
            conn, org_id=row.org_id, manifest_id=row.id, mailbox_id=row.mailbox_id, author_id=row.author_id,
            recipients=[*row.to_addresses, *row.cc_addresses, *row.bcc_addresses],
            is_reply=row.in_reply_to_message_id is not None, sending_domain=row.envelope_from.rpartition("@")[2],
            bound_outcome=row.policy_outcome, now=now, delivery_signals=str(caps.delivery_signals))
        provider = (provider_io.decide(conn, caps.name, mail_class.value, now, limits) if mail_class is not None
                    else None)
        decision = handover.decide(handover.HandoverFacts(
            mail_class=row.mail_class, system_mail=system, authority_held=authority,
            withhold_reason=StateReason(gov.withhold_reason) if gov.withhold_reason is not None else None,
            provider_allowed=provider is not None and provider.allowed,
            rate_gate=StateReason(gov.rate_gate.reason) if gov.rate_gate is not None else None))
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
        if decision.step is not handover.Step.PROCEED or mail_class is None:
            raise ValueError(f"hand-over decision {decision} has no writer; this is a defect in dispatch")
        try:
            rendered = node.evidence.get(row.rendered_sha256)
            text = node.evidence.get(row.body_typed_sha256).decode("utf-8")
            # A reconstructing provider (Resend) is handed the HTML part and the attachments as fields; the
            # attachments are read back from the rendered message, the one copy kept.
            html = node.evidence.get(row.body_html_sha256).decode("utf-8") if row.body_html_sha256 else None
            attached = attachments_of(rendered) if row.attachments else ()
        except MailnodeError as exc:
            # A body retention deleted (a purge record exists) is the setting working, not corruption.
            refusal = retention_io.content_refusal(conn, source_id=row.id, read_error=exc) or exc
            if refusal.code == "E_CONTENT_DELETED":
                withhold(conn, row, StateReason.RETENTION_DELETED, now, refusal.what)
                log.warning("send.retention_deleted manifest=%s", manifest_id)
                return DispatchResult(manifest_id, SendState.WITHHELD.value, StateReason.RETENTION_DELETED.value)
            withhold(conn, row, StateReason.EVIDENCE_CHANGED, now, exc.render())
            log.error("send.evidence_changed manifest=%s %s", manifest_id, exc.code)
            return DispatchResult(manifest_id, SendState.WITHHELD.value, StateReason.EVIDENCE_CHANGED.value)
        attempts = int(row.attempts) + 1
        first_attempt = row.first_attempt_at or now
        claimed = conn.execute(update(send_manifests)
                               .where(send_manifests.c.id == manifest_id, movable_now_sql(now))
                               .values(state=SendState.OUTCOME_UNKNOWN.value, state_at=now, state_reason=None,
                                       attempts=attempts, first_attempt_at=first_attempt,
                                       lease_until=now + timedelta(seconds=lease_seconds), claim_token=token))
        if claimed.rowcount != 1:
            return DispatchResult(manifest_id, None, "claimed by another worker")
        # The suppression list again (it may have grown since the seal): listed rows never reach the transport.
        suppression.suppress_recipients(conn, org_id=row.org_id, manifest_id=manifest_id, at=now)
        recipients = conn.execute(select(send_recipients).where(send_recipients.c.manifest_id == manifest_id)
                                  .order_by(send_recipients.c.kind, send_recipients.c.address)).all()
        bounce = bounce_domain_for(conn, row.org_id, node.settings.bounce_domain)
    bounce = bounce or row.envelope_from.rpartition("@")[2]
    dedup_open = dedup_window_open(caps, first_attempt, now)
    final: dict[str, str] = {r.id: r.submission_state for r in recipients}
    errors: list[str] = []
    retry_after: float | None = None
    for index, rec in enumerate(recipients):
        if not recipient_submittable(rec.submission_state, dedup_window_open=dedup_open):
            continue
        # The reserve (spec/transactional.md §2; issue 17 item 2): each request is reserved on the
        # provider row before it is made, with the requests other workers have in flight counted against
        # the class's ceiling, and the reservation commits with the recipient's mark. A send stops where its
        # class's ceiling is; the claim itself never asked for the whole send.
        with node.begin() as conn:
            reservation = provider_io.reserve(conn, caps.name, mail_class.value, node.clock.now(), limits,
                                              lease_seconds=lease_seconds, manifest_id=manifest_id)
            marked = None
            if reservation.decision.allowed:
                marked = conn.execute(update(send_recipients)
                                      .where(send_recipients.c.id == rec.id,
                                             send_recipients.c.submission_state == rec.submission_state)
                                      .values(submission_state=SendState.OUTCOME_UNKNOWN.value,
                                              submission_state_at=node.clock.now(),
                                              attempts=send_recipients.c.attempts + 1))
                if marked.rowcount != 1:
                    provider_io.release(conn, reservation.request_id)
        if not reservation.decision.allowed:
            refused = reservation.decision
            log.info("send.provider_refused_mid_send manifest=%s class=%s reason=%s", manifest_id,
                     mail_class.value, refused.reason)
            rest = [r for r in recipients[index:]
                    if recipient_submittable(r.submission_state, dedup_window_open=dedup_open)]
            waiting = _wait_for_provider(node, rest, mail_class, refused, limits)
            final.update(waiting)
            if waiting:
                errors.append(f"{len(waiting)} recipient(s) not submitted yet: "
                              f"{_refusal_words(mail_class, refused, limits)}")
            break
        if marked is None or marked.rowcount != 1:
            continue
        final[rec.id] = SendState.OUTCOME_UNKNOWN.value
        raised = False
        try:
            outcome = await transport.submit(_submission(row, rec, rendered, text, bounce, html, attached))
        except Exception as exc:
            log.exception("send.transport_raised manifest=%s recipient=%s", manifest_id, rec.id)
            outcome = SubmitOutcome(state=SubmitState.OUTCOME_UNKNOWN, error_name="transport_raised",
                                    detail=f"the transport raised {type(exc).__name__}: {exc}")
            raised = True
        state = outcome.state.value
        error = None if outcome.state is SubmitState.HANDED_OVER else (outcome.detail or outcome.error_name or state)
        answered_at = node.clock.now()

        def record_answer(conn: Connection, rec: Any = rec, outcome: SubmitOutcome = outcome, state: str = state,
                          error: str | None = error, answered_at: datetime = answered_at,
                          reserved: provider_io.Reservation = reservation) -> Any:
            conn.execute(update(send_recipients).where(send_recipients.c.id == rec.id).values(
                submission_state=state, submission_state_at=answered_at, last_error=error,
                transport_message_id=outcome.transport_message_id or rec.transport_message_id,
                provider_message_id=outcome.provider_message_id or rec.provider_message_id))
            return provider_io.record(conn, caps.name, outcome, answered_at, limits, ticket=reserved.ticket,
                                      request_id=reserved.request_id)

        status = record_with_retries(node, record_answer, what=f"recipient {rec.id} {state}", manifest_id=manifest_id)
        final[rec.id] = state
        if error:
            errors.append(f"{rec.address}: {error}")
        if outcome.retry_after_seconds is not None:
            retry_after = max(retry_after or 0.0, outcome.retry_after_seconds)
        if raised:
            break
        if breaker_state(status, answered_at) is BreakerState.SHUT:
            # The provider stopped taking mail: the rest of this send waits, its rows left as they were;
            # the send aggregates throttled because every pausing answer is itself throttled.
            break
    return _finish(node, row, token, final, errors, attempts, retry_after)


def _refusal_words(mail_class: MailClass, decision: Decision, limits: ProviderLimits) -> str:
    """What a person reads on a recipient the provider breaker stopped before its request."""
    if decision.reason is Refusal.QUOTA_CEILING:
        ceiling = limits.ceiling_for(mail_class)
        until = decision.reopens_at.isoformat() if decision.reopens_at else "the next UTC day"
        return (f"the provider's daily quota reading reached the {mail_class.value} ceiling ({ceiling}); "
                f"it goes again after {until}.")
    return f"the provider refuses {mail_class.value} mail now ({decision.reason})."


def _wait_for_provider(node: Node, rest: list[Any], mail_class: MailClass, decision: Decision,
                       limits: ProviderLimits) -> dict[str, str]:
    """Write ``throttled`` on the not-yet-submitted rows of ``rest`` (provably never offered, so always
    submittable again) once the breaker refused the class mid-send; returns ``{recipient id: state}``.

    ``throttled`` rather than left ``held`` so the send's aggregate is ``throttled`` and it comes round
    (``states.aggregate`` ranks a hand-over above a ``held`` row). Rows left ``outcome_unknown`` are not
    touched: they may have left. Each write is guarded by the state read.
    """
    words = _refusal_words(mail_class, decision, limits)
    waiting: dict[str, str] = {}
    now = node.clock.now()
    with node.begin() as conn:
        for r in rest:
            if r.submission_state not in NOT_YET_LEFT:
                continue
            done = conn.execute(update(send_recipients)
                                .where(send_recipients.c.id == r.id,
                                       send_recipients.c.submission_state == r.submission_state)
                                .values(submission_state=SendState.THROTTLED.value, submission_state_at=now,
                                        last_error=f"Not submitted yet: {words}"))
            if done.rowcount == 1:
                waiting[r.id] = SendState.THROTTLED.value
    return waiting


def _finish(node: Node, row: Any, token: str, final: dict[str, str], errors: list[str], attempts: int,
            retry_after: float | None) -> DispatchResult:
    """Write the aggregate under the claim token and audit ``send.<state>``."""
    state = aggregate(final.values())
    now = node.clock.now()
    values: dict[str, Any] = {"state": state.value, "state_at": now, "state_reason": None, "lease_until": None,
                              "claim_token": None, "last_error": "; ".join(errors)[:2000] or None}
    if state is SendState.THROTTLED:
        values["release_at"] = now + timedelta(seconds=backoff_seconds(attempts, retry_after))
    counts: dict[str, int] = {}
    for s in final.values():
        counts[s] = counts.get(s, 0) + 1

    def write(conn: Connection) -> bool:
        done = conn.execute(update(send_manifests).where(send_manifests.c.id == row.id,
                                                         send_manifests.c.claim_token == token).values(**values))
        if done.rowcount != 1:
            return False
        audit.append(conn, org_id=row.org_id, at=now, action=f"send.{state.value}", actor_id=None, subject=row.id,
                     outcome=_AUDIT_OUTCOME.get(state, "failed"),
                     detail={"attempts": attempts, "recipients": counts, "last_error": values["last_error"]})
        return True

    if not record_with_retries(node, write, what=f"send {state.value}", manifest_id=row.id):
        log.warning("send.claim_lost manifest=%s token=%s", row.id, token)
        return DispatchResult(row.id, None, "the claim was recovered by another worker before it finished")
    return DispatchResult(row.id, state.value, values["last_error"] or "")


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
    """Recover lapsed claims, then dispatch one bounded batch of due sends, at most
    ``budgets.DISPATCH_CONCURRENCY`` at a time (their database work is synchronous and never interleaves
    inside a transaction; only the transport's waits overlap)."""
    report = SweepReport(recovered=recover_claims(node, transport.capabilities))
    gate = asyncio.Semaphore(budgets.DISPATCH_CONCURRENCY)

    async def one(mid: str) -> DispatchResult:
        async with gate:
            try:
                return await dispatch_one(node, transport, mid, executor_id=executor_id,
                                          lease_seconds=lease_seconds)
            except Exception:
                # One send's defect must not sink its batch: without this the first exception left the sweep,
                # and asyncio.run cancelled the others' hand-overs mid-flight. The others finish and are
                # recorded; this one is logged with its traceback and left as it was (a claim it took lapses
                # and is recovered), to be tried again by the next sweep.
                log.exception("send.dispatch_failed manifest=%s", mid)
                return DispatchResult(mid, None, "dispatch_failed")

    report.results.extend(await asyncio.gather(*(one(mid) for mid in due_ids(node, limit, mailbox_ids,
                                                                         transport.capabilities.name))))
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
