"""What governance contributes to a send, read in as few statements as possible: the seal/dispatch interface.

The seal (``outbound.seal``) and the dispatch recheck (``outbound.dispatch``) own the order of gates
(``outbound.gates``) and every write to a manifest; governance supplies facts and three small writes.

At seal, before the seal's transaction or inside it::

    facts = seal_facts(conn, org_id=..., mailbox_id=..., author_id=..., recipients=[addr, ...],
                       is_reply=bool, sending_domain="example.org", now=now, delivery_signals="dsn")
    gates.GateFacts(**facts.gate_inputs(), butler_release_required=..., provider_unavailable=...)
    # store facts.policy.outcome as send_manifests.policy_outcome and facts.policy.version_ids as
    # policy_versions; add facts.audit_detail() to send.sealed.

``seal_facts`` costs 2 statements (the breaker statement, which also answers the pause, the daily volume
and which recipient domains are the organisation's; the live policies), plus 1-2 when the outcome is
``require_approval`` (the mailbox's deciders; team rosters when a stage names a team): at most
``budgets.GOVERNANCE_SEAL_FACTS_MAX_STATEMENTS``. Then, in the seal's transaction:

- sealed ``awaiting/policy_approval_required``: ``write_approval_request(conn, org_id=..., manifest_id=...,
  facts=facts, now=now)`` writes the approval and ``approval.requested`` and returns the ``apr_`` id. A
  seal that ends ``withheld`` (a refusal outranks a gate, Part A 1) writes no approval.
- sealed ``awaiting/breaker_*``: ``record_rate_limited(conn, ..., at="seal", guard=None)`` appends
  ``send.rate_limited`` (the insert was the transition).

At hand-over, before the claim::

    rf = recheck_facts(conn, org_id=..., manifest_id=..., mailbox_id=..., author_id=..., recipients=[...],
                       is_reply=bool, sending_domain=..., bound_outcome=row.policy_outcome, now=now,
                       delivery_signals=...)
    decision = outbound.handover.decide(HandoverFacts(..., withhold_reason=..., rate_gate=...))
    # withhold -> withhold(conn, row, decision.reason, now, rf.withhold_detail)
    # gate_rate -> record_rate_limited(conn, ..., reading=rf.rate_gate, at="dispatch",
    #                                  guard=movable_now_sql(now))   # recheck time; audit once

``recheck_facts`` re-evaluates policy for every send (Part A 12): a current outcome ranked above the
bound one withholds ``policy_stricter``; for a send bound ``require_approval`` it checks the approval
(``approval_revoked``: missing, not approved, or no standing approver; ``approval_expired``: past
``expires_at``; ``approver_ineligible``: an approver no longer holds ``approval.decide`` or is the
author). Refusals come first, in the order domain pause, approval, policy; the first tripped rate is
reported alongside whatever refuses, and the hand-over decision (``outbound.handover.decide``) gates on it
only when no refusal applies to the send's class (a gate says wait, a refusal says never). Cost:
2 statements, plus 2 (the approval with its decisions, the deciders) for an approved send.

``record_rate_limited`` at dispatch writes a recheck time on the send whether or not it is a transition
(spec/transactional.md §3: every row a sweep reads leaves every sweep query): ``release_at`` =
``now + recheck_after_seconds(reading)``, so ``movable_now`` stops matching it until then and no sweep
re-reads it meanwhile. Two conditional UPDATEs, both guarded by the caller's ``movable_now`` predicate so
two workers write once: first the send already waiting for that reason (the recheck: ``release_at`` and
the fresh ``last_error`` only, no audit entry; 1 statement), else the transition into the gate (state,
reason, ``release_at``), then the recipients, then the audit entry, only when it matched (3 more). A send
held behind a tripped breaker for many sweeps has exactly one ``send.rate_limited``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, and_, not_, select, update
from sqlalchemy.sql.elements import ColumnElement

from mailnode import audit, budgets
from mailnode.audit import actor_kind_of
from mailnode.clock import utc
from mailnode.directory.domains import org_domains
from mailnode.governance import approvals as ap
from mailnode.governance import breakers
from mailnode.governance.policies import load_live
from mailnode.governance.policy import Outcome, PolicyResult, SendFacts, evaluate, stricter
from mailnode.schema.governance import approval_decisions, approvals
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.vocabulary.send_states import NOT_YET_LEFT

#: Recipient rows that have not left and so follow the manifest into a gate.


@dataclass(frozen=True)
class GovernanceFacts:
    """Everything governance knows about a send at seal.

    Attributes:
        policy: the outcome, the matched versions and the folded stages.
        approval: for ``require_approval``, the plan: stages, eligible deciders (author removed) and the
            shortfall when nobody can fill them; None otherwise.
        domain_pause: the pause in force on the sending domain, or None.
        breakers: the three readings (``breakers.gate`` is the first tripped one).
        mailbox_id, author_id: as given (``write_approval_request`` uses them).
    """

    policy: PolicyResult
    approval: ap.Plan | None
    domain_pause: breakers.PauseInForce | None
    breakers: breakers.BreakerState
    mailbox_id: str
    author_id: str

    @property
    def approval_satisfiable(self) -> bool:
        """False only when approval is required and nobody can give it."""
        return self.approval is None or self.approval.shortfall is None

    @property
    def rate_gate(self) -> str | None:
        """The ``state_reason`` of the first tripped breaker, or None."""
        gate = self.breakers.gate
        return gate.reason if gate else None

    def gate_inputs(self) -> dict[str, Any]:
        """Keyword arguments for ``outbound.gates.GateFacts`` (``rate_gate`` as a reason string)."""
        return {"policy_outcome": self.policy.outcome.value, "approval_satisfiable": self.approval_satisfiable,
                "domain_paused": self.domain_pause is not None, "rate_gate": self.rate_gate}

    def shortfall_sentence(self) -> str | None:
        """For ``last_error`` of a send withheld ``approval_unsatisfiable``."""
        if self.approval is None or self.approval.shortfall is None:
            return None
        return self.approval.shortfall.sentence()

    def audit_detail(self) -> dict[str, Any]:
        """What ``send.sealed`` records about governance (counts and ids, never people)."""
        return {"policy_outcome": self.policy.outcome.value,
                "policy_versions": [f"{m.policy_name}@{m.version}:{m.version_id}" for m in self.policy.matched],
                "approval": self.approval.to_json() if self.approval else None,
                "domain_paused": self.domain_pause.id if self.domain_pause else None,
                "breakers": [{"breaker": r.breaker.value, "armed": r.armed, "observations": r.observations,
                              "observed": r.observed, "percent": r.percent, "tripped": r.tripped}
                             for r in self.breakers.readings]}


def _domains(recipients: Sequence[str]) -> list[str]:
    return sorted({r.rpartition("@")[2].strip().lower() for r in recipients if "@" in r})


def _policy(conn: Connection, *, org_id: str, mailbox_id: str, author_id: str, recipients: Sequence[str],
            is_reply: bool, state: breakers.BreakerState) -> PolicyResult:
    live = load_live(conn, org_id)
    wanted = _domains(recipients)
    known = state.known_recipient_domains or 0
    facts = SendFacts(mailbox_id=mailbox_id, actor_id=author_id, actor_kind=actor_kind_of(author_id),
                      any_external=known < len(wanted), is_reply=is_reply, org_daily_volume=state.day_volume)
    return evaluate(live, facts)


def seal_facts(conn: Connection, *, org_id: str, mailbox_id: str, author_id: str, recipients: Sequence[str],
               is_reply: bool, sending_domain: str, now: datetime, delivery_signals: str) -> GovernanceFacts:
    """Read governance's facts for a send about to be sealed (see the module docstring for the cost).

    ``recipients`` are normalised addresses; ``sending_domain`` is the envelope From's domain (IDNA,
    lower case); ``delivery_signals`` is the transport's (``webhook | dsn | none``). Raises
    ``E_POLICY_OUTCOME_UNKNOWN`` / ``E_POLICY_STAGE_TEAM_CONFLICT`` (500) from a broken live policy.
    """
    state = breakers.evaluate(conn, org_id=org_id, now=now, delivery_signals=delivery_signals,
                              sending_domain=sending_domain.lower(), recipient_domains=_domains(recipients))
    result = _policy(conn, org_id=org_id, mailbox_id=mailbox_id, author_id=author_id, recipients=recipients,
                     is_reply=is_reply, state=state)
    plan = None
    if result.outcome is Outcome.REQUIRE_APPROVAL:
        plan = ap.plan(conn, org_id=org_id, kind=ap.SubjectKind.SEND_MANIFEST, scope_id=mailbox_id,
                       actor_id=author_id, stages=result.stages)
    return GovernanceFacts(result, plan, state.pause, state, mailbox_id, author_id)


def write_approval_request(conn: Connection, *, org_id: str, manifest_id: str, facts: GovernanceFacts,
                           now: datetime) -> str:
    """Write the approval of a send sealed ``awaiting/policy_approval_required``; returns the ``apr_`` id.

    In the seal's transaction, after the manifest row. Raises ``E_APPROVAL_NOT_REQUIRED`` (500) when the
    facts carry no approval plan, ``E_APPROVAL_UNSATISFIABLE`` (409) when the plan has a shortfall (such
    a send is sealed ``withheld/approval_unsatisfiable`` and needs no request).
    """
    if facts.approval is None:
        from mailnode.errors import MailnodeError

        raise MailnodeError(code="E_APPROVAL_NOT_REQUIRED", what=f"Send {manifest_id} needs no approval.",
                            why="Its policy outcome is not require_approval.",
                            fix="This is a defect in the seal; report it.", status=500,
                            detail={"manifest_id": manifest_id})
    return ap.write_request(conn, org_id=org_id, plan=facts.approval, subject_id=manifest_id, now=now,
                            extra={"mailbox_id": facts.mailbox_id,
                                   "policy_versions": facts.policy.version_ids})


@dataclass(frozen=True)
class RecheckFacts:
    """Governance's answer at hand-over.

    Attributes:
        withhold_reason: ``domain_paused | approval_revoked | approval_expired | approver_ineligible |
            policy_stricter`` (the first that applies), or None.
        withhold_detail: the specifics for ``last_error``.
        rate_gate: the first tripped reading, or None, whether or not ``withhold_reason`` is set (the
            refusal may not apply to the send's class: ``outbound.handover.decide`` orders them).
        policy: the current policy result.
        breakers: every reading.
    """

    withhold_reason: str | None
    withhold_detail: str
    rate_gate: breakers.Reading | None
    policy: PolicyResult
    breakers: breakers.BreakerState


def _approval_problem(conn: Connection, *, org_id: str, manifest_id: str, mailbox_id: str, author_id: str,
                      now: datetime) -> tuple[str, str] | None:
    a = approvals.c
    d = approval_decisions.c
    rows = conn.execute(
        select(approvals, d.decider_id, d.decision, d.withdrawn_at)
        .outerjoin(approval_decisions, d.approval_id == a.id)
        .where(a.org_id == org_id, a.subject_kind == ap.SubjectKind.SEND_MANIFEST.value, a.subject_id == manifest_id)
    ).all()
    if not rows or rows[0].state != ap.ApprovalState.APPROVED.value:
        state = rows[0].state if rows else "missing"
        return "approval_revoked", f"The approval of {manifest_id} is {state}, not approved."
    standing = {r.decider_id for r in rows if r.decision == "approve" and r.withdrawn_at is None}
    if not standing:
        return "approval_revoked", f"No approval of {manifest_id} still stands."
    expires = rows[0].expires_at
    if expires is not None and utc(now) > utc(expires):
        return "approval_expired", f"The approval of {manifest_id} expired at {utc(expires).isoformat()}."
    spec = ap.SUBJECTS[ap.SubjectKind.SEND_MANIFEST]
    eligible = ap.approvers(conn, org_id=org_id, scope_type=spec.scope_type, relation=spec.relation,
                            scope_id=mailbox_id) - {author_id}
    gone = sorted(standing - eligible)
    if gone:
        return "approver_ineligible", f"{', '.join(gone)} no longer may approve sends from {mailbox_id}."
    return None


def recheck_facts(conn: Connection, *, org_id: str, manifest_id: str, mailbox_id: str, author_id: str,
                  recipients: Sequence[str], is_reply: bool, sending_domain: str, bound_outcome: str | None,
                  now: datetime, delivery_signals: str) -> RecheckFacts:
    """Re-ask governance at hand-over (see the module docstring for the order and the cost)."""
    state = breakers.evaluate(conn, org_id=org_id, now=now, delivery_signals=delivery_signals,
                              sending_domain=sending_domain.lower(), recipient_domains=_domains(recipients))
    result = _policy(conn, org_id=org_id, mailbox_id=mailbox_id, author_id=author_id, recipients=recipients,
                     is_reply=is_reply, state=state)
    return _recheck(conn, state, result, org_id=org_id, manifest_id=manifest_id, mailbox_id=mailbox_id,
                    author_id=author_id, sending_domain=sending_domain, bound_outcome=bound_outcome, now=now)


def _recheck(conn: Connection, state: breakers.BreakerState, result: PolicyResult, *, org_id: str,
             manifest_id: str, mailbox_id: str, author_id: str, sending_domain: str, bound_outcome: str | None,
             now: datetime) -> RecheckFacts:
    """The refusals in order (domain pause, approval, policy) over a breaker reading and a policy result."""
    reason: str | None = None
    detail = ""
    if state.pause is not None:
        reason = "domain_paused"
        detail = (f"Sending from {sending_domain} is paused since {state.pause.placed_at.isoformat()}: "
                  f"{state.pause.reason} (lift: POST /api/domain-pauses/{state.pause.id}/lift).")
    if reason is None and bound_outcome == Outcome.REQUIRE_APPROVAL.value:
        problem = _approval_problem(conn, org_id=org_id, manifest_id=manifest_id, mailbox_id=mailbox_id,
                                    author_id=author_id, now=now)
        if problem is not None:
            reason, detail = problem
    if reason is None and stricter(result.outcome, bound_outcome):
        reason = "policy_stricter"
        detail = (f"Policy now says {result.outcome.value}; the send was sealed under "
                  f"{bound_outcome or 'allow'} ({', '.join(result.version_ids) or 'no version'}).")
    # The tripped breaker is reported whether or not something refuses: a refusal of policy or approvals
    # does not apply to every mail class, so which one wins is the hand-over decision's
    # (``outbound.handover.decide``), never this reader's (issue 17: dropping it here let deferrable mail
    # through a tripped breaker whenever a policy was stricter than the bound outcome).
    return RecheckFacts(reason, detail, state.gate, result, state)


def rate_limited_detail(reading: breakers.Reading, *, mailbox_id: str, at: Literal["seal", "dispatch"]
                        ) -> dict[str, Any]:
    """The ``send.rate_limited`` detail (spec/outbound.md §3.5)."""
    return {"breaker": reading.breaker.value, "reason": reading.reason, "limit": reading.limit,
            "observed": reading.observed, "observations": reading.observations, "percent": reading.percent,
            "window_seconds": reading.window_seconds, "retry_after_seconds": reading.retry_after_seconds,
            "retry_after_exact": reading.retry_after_exact, "mailbox_id": mailbox_id, "at": at}


def recheck_after_seconds(reading: breakers.Reading) -> int:
    """Seconds until a send ``reading`` gates is asked again (pure; spec/transactional.md §3).

    The reading's ``retry_after_seconds`` (the oldest counted row leaves the window: the earliest time
    alone can change the answer; exactly when a volume breaker one over its limit clears), held within
    ``[budgets.BREAKER_RECHECK_MIN_SECONDS, budgets.BREAKER_RECHECK_SECONDS]``: the ceiling bounds the wait
    for a clearing the reading cannot foresee (a limit raised, deliveries lowering a rate), the floor keeps
    a breaker far over its limit from bringing its sends back on every sweep. A reading without a retry
    time gets the ceiling.
    """
    retry = reading.retry_after_seconds
    if retry is None:
        return budgets.BREAKER_RECHECK_SECONDS
    return min(budgets.BREAKER_RECHECK_SECONDS, max(budgets.BREAKER_RECHECK_MIN_SECONDS, int(retry)))


def recheck_sentence(reading: breakers.Reading, recheck_at: datetime) -> str:
    """The gated send's ``last_error``: the reading's sentence and when the node asks again (UTC)."""
    when = utc(recheck_at).isoformat(timespec="seconds")
    return f"{reading.sentence} The node asks the breakers again at {when}."


def record_rate_limited(conn: Connection, *, org_id: str, manifest_id: str, mailbox_id: str,
                        reading: breakers.Reading, now: datetime, at: Literal["seal", "dispatch"],
                        guard: ColumnElement[bool] | None) -> bool:
    """Gate a send behind a tripped rate and audit ``send.rate_limited``, on the transition only.

    ``at="seal"`` with ``guard=None``: the seal inserted the manifest already gated; only the entry is
    written. ``at="dispatch"``: the send leaves every sweep query until ``now +
    recheck_after_seconds(reading)`` (its ``release_at``), in two conditional UPDATEs guarded by ``guard``
    (the caller's ``movable_now``): a send already waiting for this reason gets only the recheck time and a
    fresh ``last_error`` (no entry); any other send moves to ``awaiting/<reason>`` with the recheck time,
    its recipients that have not left follow, and the entry is written. Returns True when an entry was
    written (the transition); False for a recheck, or when ``guard`` no longer matched (another worker
    moved it). ``now`` is aware UTC.
    """
    detail = rate_limited_detail(reading, mailbox_id=mailbox_id, at=at)
    if guard is not None:
        m = send_manifests.c
        recheck_at = now + timedelta(seconds=recheck_after_seconds(reading))
        sentence = recheck_sentence(reading, recheck_at)
        waiting = and_(m.state == "awaiting", m.state_reason == reading.reason)
        rechecked = conn.execute(update(send_manifests)
                                 .where(m.id == manifest_id, guard, waiting)
                                 .values(release_at=recheck_at, last_error=sentence))
        if rechecked.rowcount == 1:
            return False
        done = conn.execute(update(send_manifests)
                            .where(m.id == manifest_id, guard, not_(waiting))
                            .values(state="awaiting", state_reason=reading.reason, state_at=now,
                                    release_at=recheck_at, last_error=sentence))
        if done.rowcount != 1:
            return False
        r = send_recipients.c
        conn.execute(update(send_recipients)
                     .where(r.manifest_id == manifest_id, r.submission_state.in_(NOT_YET_LEFT))
                     .values(submission_state="awaiting", submission_state_at=now))
        detail["recheck_at"] = utc(recheck_at).isoformat()
    audit.append(conn, org_id=org_id, at=now, action="send.rate_limited", actor_id=None, subject=manifest_id,
                 detail=detail)
    return True


class BatchFacts:
    """Governance's facts for one dispatch batch, read once per organisation and sending domain (issue 19).

    ``recheck`` answers what ``recheck_facts`` answers, for every send of a batch, at a cost of one breaker
    statement per (organisation, sending domain), one read of the live policies and one of the
    organisation's domains per organisation (which recipient domains are the organisation's is counted
    here, not in the breaker statement), plus the approval's 2 for a send bound ``require_approval``,
    which stay per send. The breaker counts are read once at ``now``; what the batch itself is about to
    hand over is added locally (``will_hand_over``): the recipients of every send the batch lets through
    count as handed over, in the volume, the daily volume and the ``handed_over`` bounce basis, before their
    hand-overs are made. Counting them before they happen fails closed: a send the batch would take past
    a limit waits behind the breaker exactly as it would after the earlier sends' hand-overs were
    recorded (``observed > limit`` trips after ``limit + 1``, as for sends handed over one by one), and
    a hand-over that then fails only made the batch stricter until the next sweep reads the counts again.
    Re-reading the database inside the batch could not tell more: the batch's own hand-overs are not
    made yet when its sends are decided.
    """

    def __init__(self, *, now: datetime, delivery_signals: str) -> None:
        self.now = now
        self.delivery_signals = delivery_signals
        self._counts: dict[tuple[str, str], breakers.Counts] = {}
        self._live: dict[str, Any] = {}
        self._domains: dict[str, list[str]] = {}
        self._added: dict[str, int] = {}

    def org_domains(self, conn: Connection, org_id: str) -> list[str]:
        """The organisation's domains, oldest first (one statement, once per organisation)."""
        if org_id not in self._domains:
            self._domains[org_id] = org_domains(conn, org_id)
        return self._domains[org_id]

    def state(self, conn: Connection, *, org_id: str, sending_domain: str,
              recipients: Sequence[str]) -> breakers.BreakerState:
        """The breaker reading for one send: the batch's counts with its planned hand-overs added (pure
        after the first read per key)."""
        key = (org_id, sending_domain.lower())
        counts = self._counts.get(key)
        if counts is None:
            counts = breakers.fetch(conn, org_id=org_id, now=self.now, sending_domain=key[1])
            self._counts[key] = counts
        added = self._added.get(org_id, 0)
        wanted = _domains(recipients)
        known = set(self.org_domains(conn, org_id))
        adjusted = replace(counts, volume_n=counts.volume_n + added,
                           volume_oldest=counts.volume_oldest or (self.now if added else None),
                           bounce_handed_over=counts.bounce_handed_over + added,
                           day_volume=counts.day_volume + added,
                           known_recipient_domains=sum(1 for d in wanted if d in known) if wanted else None)
        return breakers.read(adjusted, now=self.now, delivery_signals=self.delivery_signals,
                             sending_domain=key[1])

    def will_hand_over(self, org_id: str, recipients: int) -> None:
        """Count ``recipients`` the batch lets through as handed over for the organisation's later sends."""
        self._added[org_id] = self._added.get(org_id, 0) + recipients

    def recheck(self, conn: Connection, *, org_id: str, manifest_id: str, mailbox_id: str, author_id: str,
                recipients: Sequence[str], is_reply: bool, sending_domain: str,
                bound_outcome: str | None) -> RecheckFacts:
        """``recheck_facts`` for one send of the batch (same order, same answers; see the class docstring)."""
        state = self.state(conn, org_id=org_id, sending_domain=sending_domain, recipients=recipients)
        live = self._live.get(org_id)
        if live is None:
            live = self._live[org_id] = load_live(conn, org_id)
        wanted = _domains(recipients)
        known = state.known_recipient_domains or 0
        facts = SendFacts(mailbox_id=mailbox_id, actor_id=author_id, actor_kind=actor_kind_of(author_id),
                          any_external=known < len(wanted), is_reply=is_reply, org_daily_volume=state.day_volume)
        result = evaluate(live, facts)
        return _recheck(conn, state, result, org_id=org_id, manifest_id=manifest_id, mailbox_id=mailbox_id,
                        author_id=author_id, sending_domain=sending_domain, bound_outcome=bound_outcome,
                        now=self.now)
