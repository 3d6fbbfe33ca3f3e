"""The notify sweeper: one pass over deferrable mail and stranded claims (spec/transactional.md §3).

A pass, in order (``sweeper_rules.pass_plan`` first):

1. the passes registered in ``PRE_SEND_PASSES`` (retention writes: they cost no quota and matter most
   during an outage, so they run before any breaker check). ``retention.io.run_pass(node, now)`` is
   registered at import; a deferrable send that gives up extends retention of what it is about
   (``retention_io.extend_at_give_up``, in the give-up's transaction);
2. stranded claims: every send (any class) whose claim's lease expired — its worker died mid-send;
3. age-outs: deferrable mail past the give-up age, and realtime mail left pending (never retried);
4. re-drives, only when the plan's ``send_mode`` allows: deferrable mail that may move, and ambiguous
   deferrable mail inside its key's window. ``probe_one`` stops after the first send that reached the
   provider unless it was accepted (a send a gate stopped before the transport is not the probe).

For every row ``sweeper_rules.decide_row`` gives the verdict; each verdict but ``skip_leased`` either hands
the send over under a claim or writes a state that takes it out of every sweep query (a stranded claim
whose send may still go is released to ``held``, lease cleared). A send handed to ``dispatch.dispatch_one``
that a rate breaker still gates is written its recheck time (``release_at``; it leaves ``movable_now`` and
so the re-drive query until then), and ``hold_for_provider`` ends the pass's sending at the first row it
meets (the provider refuses that class for every row the query returns). Writes are guarded (the claim
token, the state read, or ``movable_now``), so two sweepers racing write once. Queries page by id with a
cursor, so a page of leased rows never reads as an empty queue. Realtime mail is refused, never re-driven.
``sweep_queries`` names every query a pass reads rows with (for tests of that property).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, or_, select, update
from sqlalchemy.sql.elements import ColumnElement

from mailnode import audit, budgets
from mailnode.governance import provider_io
from mailnode.governance.provider import ProviderStatus
from mailnode.node import Node
from mailnode.outbound import dispatch, sweeper_metrics
from mailnode.outbound.movable import lease_expired_sql, movable_now_sql
from mailnode.outbound.sweeper_rules import (
    PassPlan,
    RowDecision,
    SendMode,
    SweeperReason,
    SweepFacts,
    SweepRules,
    SweepVerdict,
    decide_row,
    pass_plan,
)
from mailnode.retention import io as retention_io
from mailnode.schema.notices import notices
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.transports import Transport, make_transport
from mailnode.vocabulary.mail_classes import MailClass
from mailnode.vocabulary.send_states import NOT_YET_LEFT, SendState, StateReason, recipient_submittable

log = logging.getLogger("mailnode.sweeper")

#: A pass that runs before the send passes: ``(node, now) -> anything``. Registered explicitly.
PrePass = Callable[[Node, datetime], object]

#: Passes that run first in every sweep, before the provider breaker is consulted (spec §3, §5: the
#: retention pass works while sending is paused). ``register_pre_send_pass`` adds one.
PRE_SEND_PASSES: list[PrePass] = []

_PENDING = (SendState.HELD.value, SendState.AWAITING.value, SendState.THROTTLED.value,
            SendState.OUTCOME_UNKNOWN.value)
#: Dispatch answers that end before the transport is asked (a gate, or the row moved): under
#: ``probe_one`` they are not the probe, which the next row still owes.
_NEVER_ASKED_THE_PROVIDER = (None, SendState.AWAITING.value, SendState.WITHHELD.value)


def register_pre_send_pass(fn: PrePass) -> None:
    """Add ``fn`` to ``PRE_SEND_PASSES`` (once)."""
    if fn not in PRE_SEND_PASSES:
        PRE_SEND_PASSES.append(fn)


# Retention's pass runs first on every sweep (``retention.io.run_pass``).
register_pre_send_pass(retention_io.run_pass)


def rules_of(node: Node, transport: Transport) -> SweepRules:
    """The sweeper's numbers from the settings and the transport's idempotency window."""
    s = node.settings
    return SweepRules(give_up_age_seconds=s.sweeper_give_up_age_seconds, max_attempts=s.sweeper_max_attempts,
                      idempotency_window_seconds=transport.capabilities.idempotency_window_seconds)


@dataclass
class PassReport:
    """What one pass did: the plan, each verdict counted, and the sends handed to dispatch."""

    plan: PassPlan | None = None
    verdicts: dict[str, int] = field(default_factory=dict)
    dispatched: list[dispatch.DispatchResult] = field(default_factory=list)
    pre_passes: int = 0

    def count(self, verdict: SweepVerdict) -> None:
        """Count one row's verdict here and in the metrics."""
        self.verdicts[verdict.value] = self.verdicts.get(verdict.value, 0) + 1
        sweeper_metrics.SWEEPER_ROWS.labels(verdict=verdict.value).inc()


def _facts(conn: Connection, row: Any) -> SweepFacts:
    states = [r.submission_state for r in conn.execute(
        select(send_recipients.c.submission_state).where(send_recipients.c.manifest_id == row.id)).all()]
    return SweepFacts(send_id=row.id, mail_class=row.mail_class, state=row.state, queued_at=row.sealed_at,
                      attempts=int(row.attempts), first_attempt_at=row.first_attempt_at, lease_until=row.lease_until,
                      may_have_reached_provider=any(s == SendState.OUTCOME_UNKNOWN.value for s in states))


def _page(node: Node, where: ColumnElement[bool], cursor: str | None, limit: int) -> list[Any]:
    q = select(send_manifests).where(where)
    if cursor is not None:
        q = q.where(send_manifests.c.id > cursor)
    with node.read() as conn:
        return list(conn.execute(q.order_by(send_manifests.c.id).limit(limit)).all())


def _write(conn: Connection, row: Any, decision: RowDecision, now: datetime) -> bool:
    """Apply a verdict's write, guarded by the state and claim token read; True when it matched."""
    write = decision.write
    if write is None:
        return False
    m = send_manifests.c
    guard = and_(m.id == row.id, m.state == row.state,
                 m.claim_token.is_(None) if row.claim_token is None else m.claim_token == row.claim_token)
    done = conn.execute(update(send_manifests).where(guard).values(
        state=write.state.value, state_reason=StateReason(write.reason.value).value, state_at=now,
        lease_until=None, claim_token=None, last_error=decision.explanation))
    if done.rowcount != 1:
        return False
    if write.state is SendState.WITHHELD:
        conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == row.id,
                                                   send_recipients.c.submission_state.in_(NOT_YET_LEFT))
                     .values(submission_state=SendState.WITHHELD.value, submission_state_at=now))
    audit.append(conn, org_id=row.org_id, at=now, action=f"send.{write.state.value}", actor_id=None,
                 subject=row.id, outcome="refused" if write.state is SendState.WITHHELD else "failed",
                 detail={"reason": write.reason.value, "by": "sweeper", "evidence": decision.explanation[:300]})
    if write.reason is SweeperReason.GAVE_UP:
        # Giving up is when the person will never be told (seed 002, "the more important half"): what the
        # send is about, and its own body, get a fresh grace period from now, in the give-up's transaction.
        retention_io.extend_at_give_up(conn, source_ids=[row.id, *about_of_send(conn, row.id)], now=now)
    return True


def about_of_send(conn: Connection, send_id: str) -> list[str]:
    """The content ids (``msg_`` / ``snd_``) the notices sent by ``send_id`` are about (one statement)."""
    rows = conn.execute(select(notices.c.about).where(notices.c.send_id == send_id)).all()
    return sorted({str(i) for r in rows for i in (r.about or [])})


def _release(conn: Connection, row: Any, now: datetime, caps_window_open: bool) -> bool:
    """Release a stranded claim whose send may still go: back to ``held`` (movable at once), lease cleared."""
    states = [r.submission_state for r in conn.execute(
        select(send_recipients.c.submission_state).where(send_recipients.c.manifest_id == row.id)).all()]
    if not any(recipient_submittable(s, dedup_window_open=caps_window_open) for s in states):
        return False
    done = conn.execute(update(send_manifests).where(send_manifests.c.id == row.id,
                                                     send_manifests.c.claim_token == row.claim_token)
                        .values(state=SendState.HELD.value, state_reason=None, state_at=now, lease_until=None,
                                claim_token=None, release_at=now,
                                last_error=f"The worker holding the claim stopped (lease until {row.lease_until})."))
    if done.rowcount != 1:
        return False
    audit.append(conn, org_id=row.org_id, at=now, action="send.claim_recovered", actor_id=None, subject=row.id,
                 detail={"by": "sweeper", "lapsed_claim": row.claim_token})
    return True


def _stranded(node: Node, status: ProviderStatus, rules: SweepRules, transport: Transport, now: datetime,
              batch: int, report: PassReport) -> None:
    cursor: str | None = None
    while True:
        rows = _page(node, lease_expired_sql(now), cursor, batch)
        for row in rows:
            cursor = row.id
            with node.begin() as conn:
                facts = _facts(conn, row)
                decision = decide_row(facts, status, now, rules, provider_io.limits_of(node.settings))
                report.count(decision.verdict)
                if decision.write is not None:
                    _write(conn, row, decision, now)
                    continue
                window = dispatch.dedup_window_open(transport.capabilities, row.first_attempt_at, now)
                if not _release(conn, row, now, window):
                    # Nothing left to submit: the recipients' answers decide (dispatch's recovery rule).
                    dispatch.recover_one(conn, row, now, window)
        if len(rows) < batch:
            return


def _age_out_where(node: Node, now: datetime) -> ColumnElement[bool]:
    m = send_manifests.c
    s = node.settings
    unleased = or_(m.lease_until.is_(None), m.lease_until <= now)
    deferrable = and_(m.mail_class == MailClass.DEFERRABLE.value,
                      m.sealed_at <= now - timedelta(seconds=s.sweeper_give_up_age_seconds))
    # Realtime mail still pending a lease after it was sealed was abandoned by its request: never retried.
    realtime = and_(m.mail_class == MailClass.REALTIME.value,
                    m.sealed_at <= now - timedelta(seconds=s.sweeper_lease_seconds))
    # One IN over the state (not an OR of two state tests), so the (mail_class, state, sealed_at) index
    # serves all three columns on both databases.
    waiting = and_(m.state.in_(_PENDING), or_(m.state != SendState.OUTCOME_UNKNOWN.value,
                                              m.state_reason.is_(None)))
    return and_(waiting, unleased, or_(deferrable, realtime))


def _age_outs(node: Node, status: ProviderStatus, rules: SweepRules, now: datetime, batch: int,
              report: PassReport) -> None:
    cursor: str | None = None
    while True:
        rows = _page(node, _age_out_where(node, now), cursor, batch)
        for row in rows:
            cursor = row.id
            with node.begin() as conn:
                decision = decide_row(_facts(conn, row), status, now, rules, provider_io.limits_of(node.settings))
                report.count(decision.verdict)
                _write(conn, row, decision, now)
        if len(rows) < batch:
            return


def _send_where(now: datetime) -> ColumnElement[bool]:
    m = send_manifests.c
    ambiguous = and_(m.state == SendState.OUTCOME_UNKNOWN.value, m.lease_until.is_(None), m.state_reason.is_(None))
    return and_(m.mail_class == MailClass.DEFERRABLE.value, or_(movable_now_sql(now), ambiguous))


def sweep_queries(node: Node, now: datetime) -> dict[str, ColumnElement[bool]]:
    """Every predicate over ``send_manifests`` a pass at ``now`` reads rows with, by name: ``stranded``
    (lapsed claims), ``age_out`` (past the give-up age) and ``send`` (the re-drive). A row a pass read and
    did not hand over matches none of them afterwards unless another worker holds it under a live lease
    (spec/transactional.md §3)."""
    return {"stranded": lease_expired_sql(now), "age_out": _age_out_where(node, now), "send": _send_where(now)}


async def _redrive(node: Node, status: ProviderStatus, rules: SweepRules, transport: Transport, now: datetime,
                   plan: PassPlan, executor_id: str, report: PassReport) -> None:
    cursor: str | None = None
    while True:
        rows = _page(node, _send_where(now), cursor, plan.batch_max)
        for row in rows:
            cursor = row.id
            with node.begin() as conn:
                decision = decide_row(_facts(conn, row), status, now, rules, provider_io.limits_of(node.settings))
                report.count(decision.verdict)
                if decision.write is not None:
                    _write(conn, row, decision, now)
                    continue
                if decision.verdict is SweepVerdict.HOLD_FOR_PROVIDER:
                    return
                if decision.verdict is not SweepVerdict.SEND:
                    continue
                if row.state == SendState.OUTCOME_UNKNOWN.value:
                    # Inside its key's window: make it movable again; dispatch resubmits under the same key.
                    conn.execute(update(send_manifests).where(send_manifests.c.id == row.id,
                                                              send_manifests.c.state == row.state,
                                                              send_manifests.c.lease_until.is_(None))
                                 .values(state=SendState.THROTTLED.value, release_at=now))
            result = await dispatch.dispatch_one(node, transport, row.id, executor_id=executor_id,
                                                 lease_seconds=node.settings.sweeper_lease_seconds)
            report.dispatched.append(result)
            if result.state is None and result.detail == StateReason.PROVIDER_UNAVAILABLE.value:
                return
            probe_failed = result.state not in (*_NEVER_ASKED_THE_PROVIDER, SendState.HANDED_OVER.value)
            if plan.send_mode is SendMode.PROBE_ONE and probe_failed:
                return
            with node.read() as conn:
                status = provider_io.read_status(conn, transport.capabilities.name)
            plan = pass_plan(status, node.clock.now(), plan.batch_max)
            if plan.send_mode is SendMode.NONE:
                return
        if len(rows) < plan.batch_max:
            return


async def run_pass_async(node: Node, transport: Transport, *, executor_id: str = "sweeper",
                         batch_max: int = budgets.SWEEPER_BATCH_MAX) -> PassReport:
    """One sweeper pass with ``transport`` at the node's clock; see the module docstring for the order."""
    now = node.clock.now()
    report = PassReport()
    for fn in PRE_SEND_PASSES:
        fn(node, now)
        report.pre_passes += 1
    with node.read() as conn:
        status = provider_io.read_status(conn, transport.capabilities.name)
    plan = pass_plan(status, now, batch_max)
    report.plan = plan
    rules = rules_of(node, transport)
    _stranded(node, status, rules, transport, now, batch_max, report)
    _age_outs(node, status, rules, now, batch_max, report)
    if plan.send_mode is not SendMode.NONE:
        await _redrive(node, status, rules, transport, now, plan, executor_id, report)
    sweeper_metrics.SWEEPER_PASSES.labels(send_mode=plan.send_mode.value).inc()
    return report


def run_pass(node: Node, *, transport: Transport | None = None, executor_id: str = "sweeper",
             batch_max: int = budgets.SWEEPER_BATCH_MAX) -> PassReport:
    """``run_pass_async`` from synchronous code; builds (and closes) the configured transport when none is given."""
    async def run() -> PassReport:
        t = transport or make_transport(node.settings)
        try:
            return await run_pass_async(node, t, executor_id=executor_id, batch_max=batch_max)
        finally:
            if transport is None:
                await t.aclose()

    return asyncio.run(run())
