"""The dry run: walk a Butler's draft (or live version) over the recorded facts of a real run, writing nothing.

spec/butler.md Part A decision 8; seed 003 "Simulation: what a dry run really asks, and what it cannot";
issue 8. ``simulate`` uses the engine's own walk (``walk.walk``) with ``DryEffects``, whose only methods
are the four the walk calls; none of them writes. Writes are impossible twice over: ``DryEffects`` has
no write path and is handed only a connection from ``Node.read()``, which is read-only at the connection
on both databases (PostgreSQL ``READ ONLY``; SQLite ``PRAGMA query_only``), so a write attempted by any
code it reaches raises.

Every effect is decided by the live run's own decisions (issue 17 item 6: a dry run that diverges is
worse than none), over what it reads plus what this walk would already have written: ``lookup`` is the
live projected, authority-folded read; ``case.assign`` is ``cases.claim_refusal`` over the case, the
Butler's and the assignee's ``send.propose`` (the claim's own decision), ``case.close`` is
``effects.close_reason``; ``draft`` is the three-term authority then ``drafts.vet_new`` (every decision
of the people's save-draft: authority, the reply's parent with the trigger exemption for the run's own
message, the one-draft rule counting this walk's drafts, the composition checks); ``mail.send.propose``
is ``effects.propose_reason`` (and a draft this walk sealed is retired, as the seal retires it). Also
the checker, every expression, loop bounds and affordability (``cost.affordable``), and who a reply
would go to (``outbound.butler_recipient.reply_recipient``, in the walk). Where the live run writes, the verdict is
``would``; a refusal is ``refused`` with the live reason. What it cannot decide (the seal's policy and
gates, a race with another writer) is listed, in words, in every report (``LIMITS``).
``tests/butler/runs/test_dry_run_agrees.py`` runs every documented, demo and fixture program both ways.

The sponsor whose authority caps the walk is the version's publisher for a published version and,
for a draft (which has no publisher yet), the administrator asking.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, select

from mailnode import budgets
from mailnode.authz import METADATA_READERS, holds, is_admin
from mailnode.butler import cost, pause
from mailnode.butler import effects as live_effects
from mailnode.butler.authority import Ceiling, Principal, effective_on_mailbox
from mailnode.butler.check import check_stored
from mailnode.butler.cost import RUNTIME_RESERVATIONS
from mailnode.butler.lifecycle import no_such_butler
from mailnode.butler.replay import disclose
from mailnode.butler.walk import EFFECT_TYPES, EffectCall, EffectResult, initial_state, walk
from mailnode.errors import MailnodeError, conflict, not_found
from mailnode.ids import is_id, new_id
from mailnode.mail import cases as cases_mod
from mailnode.outbound import drafts as drafts_mod
from mailnode.schema.butler import butler_versions, butlers
from mailnode.schema.butler_runs import butler_pauses, butler_runs
from mailnode.schema.mail_messages import cases

#: The verdict of an effect the live run would have written.
WOULD = "would"
#: Node types whose ``ok`` is a write (a ``lookup``'s ``ok`` is a read the dry run really did).
WRITING_TYPES = ("case.assign", "case.close", "draft", "mail.send.propose")

#: What a dry run cannot tell, in every report.
LIMITS = (
    ("Policy, the rate breakers, the domain pause and approvals decide at the seal, against content this dry "
    "run did not store: a send is reported as one that would be proposed, never as one that would be sent."),
    ("A Butler's send waits for a person's release unless a stricter policy outcome applies; this dry run "
    "walks on as though it had been released."),
    ("A case.assign or case.close is decided as the claim and the close decide it, over the case as read now; "
    "another person's claim between this dry run and a live run changes the answer."),
    ("A draft has no publisher, so its authority was capped against the asker's own; publishing caps it against "
    "whoever publishes, who may hold less."),
    ("Anything read after a node this dry run did not write (the draft it would have saved, a case it would "
    "have assigned) is reasoned about, not read."),
    "A wait is reported, not slept.",
)


@dataclass
class DryEffects:
    """``walk.Effects`` for a dry run: reads on a read-only connection, writes reported as ``would``."""

    conn: Connection
    who: Principal
    pot: int
    reserved: int = 0
    trigger_key: str | None = None
    drafts: dict[str, dict[str, Any]] = field(default_factory=dict)
    cases: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    proposed: set[str] = field(default_factory=set)
    waits: list[dict[str, Any]] = field(default_factory=list)

    def affordable(self, call: EffectCall) -> bool:
        """The engine's guard (``cost.affordable``) over the engine's statements before the walk and the
        reservations so far."""
        before_walk = budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS - budgets.BUTLER_RUN_CLOSE_STATEMENTS
        return cost.affordable(before_walk + self.reserved, call.node_type, self.pot)

    async def perform(self, call: EffectCall) -> EffectResult:
        """Really perform what only reads; report what would write (see the module docstring)."""
        self.reserved += RUNTIME_RESERVATIONS[call.node_type]
        p = call.params
        if call.node_type == "lookup":
            return self._lookup(str(p["entity"]), str(p["entity_id"]))
        if call.node_type in ("case.assign", "case.close"):
            return self._case(call.node_type, str(p["case_id"]), str(p.get("assignee_id") or ""))
        if call.node_type == "draft":
            return self._draft(p)
        if call.node_type == "mail.send.propose":
            return self._propose(str(p["draft_id"]))
        raise ValueError(f"{call.node_type} is not an effect node")

    async def wait(self, step: str, seconds: int) -> None:
        """Reported, not slept."""
        self.waits.append({"step": step, "seconds": seconds})

    async def await_release(self, call: EffectCall, result: EffectResult) -> bool:
        """Walk on as though a person released the send, so the rest of the program is seen."""
        return True

    # --- the nodes -----------------------------------------------------------------------------------

    def _lookup(self, entity: str, entity_id: str) -> EffectResult:
        if entity == "draft" and entity_id in self.drafts:
            d = self.drafts[entity_id]
            return EffectResult(outcome=WOULD, subject=entity_id, binding={
                "id": entity_id, "mailbox_id": d["mailboxId"], "in_reply_to_message_id": d["inReplyToMessageId"],
                "to_addresses": list(d["to"]), "cc_addresses": [], "bcc_addresses": [], "subject": d["subject"],
                "body_bytes": d["bodyBytes"], "updated_at": None})
        found = live_effects._lookup(self.conn, self.who, entity, entity_id)
        if found is None:
            return EffectResult(outcome="refused", reason="not_readable", subject=entity_id)
        return EffectResult(outcome="ok", subject=entity_id, binding=found)

    def _case(self, node_type: str, case_id: str, assignee_id: str) -> EffectResult:
        row = live_effects._actionable_case(self.conn, self.who, case_id)
        if row is None:
            return EffectResult(outcome="refused", reason="case_not_actionable", subject=case_id)
        # What this walk would already have written to the case, else the row.
        state, holder = self.cases.get(case_id, (row.state, row.assignee_id))
        if node_type == "case.close":
            reason = live_effects.close_reason(state=state, holder_id=holder, butler_id=self.who.butler_id)
            if reason is not None:
                return EffectResult(outcome="refused", reason=reason, subject=case_id)
            self.cases[case_id] = ("closed", holder)
            return EffectResult(outcome=WOULD, subject=case_id)
        mailbox_id = self.conn.execute(select(cases.c.mailbox_id).where(cases.c.id == case_id)).scalar_one()
        butler_may = holds(self.conn, self.who.org_id, self.who.butler_id, live_effects.SEND_PROPOSE, "mailbox",
                           mailbox_id)
        assignee_may = butler_may and (assignee_id == self.who.butler_id or holds(
            self.conn, self.who.org_id, assignee_id, live_effects.SEND_PROPOSE, "mailbox", mailbox_id))
        refusal = cases_mod.claim_refusal(state=state, holder_id=holder, principal_id=self.who.butler_id,
                                          assignee_id=assignee_id, principal_may_work=butler_may,
                                          assignee_may_work=assignee_may, take=False)
        reason = live_effects.assign_reason(refusal)
        if reason is not None:
            return EffectResult(outcome="refused", reason=reason, subject=case_id)
        self.cases[case_id] = (state, assignee_id)
        return EffectResult(outcome=WOULD, subject=case_id)

    def _draft(self, p: dict[str, Any]) -> EffectResult:
        mailbox_id = str(p["mailbox_id"])
        reason = effective_on_mailbox(self.conn, self.who, mailbox_id, live_effects.SEND_PROPOSE)
        if reason is not None:
            return EffectResult(outcome="refused", reason=reason, subject=mailbox_id)
        parent = p["in_reply_to_message_id"]
        # The decisions of the people's save-draft, on the read-only connection: the same function, with
        # the run's trigger for the trigger exemption and this walk's own drafts for the one-draft rule.
        own = {d["inReplyToMessageId"]: d_id for d_id, d in self.drafts.items() if d["inReplyToMessageId"]}
        try:
            row = drafts_mod.vet_new(self.conn, org_id=self.who.org_id, author_id=self.who.butler_id,
                                     mailbox_id=mailbox_id, in_reply_to_message_id=parent,
                                     triggered_by=self.trigger_key, drafted=own, to=[p["recipient"]],
                                     subject=p["subject"], body=p["body"])
        except MailnodeError as err:
            return EffectResult(outcome="refused", reason=err.code, subject=mailbox_id)
        draft_id = new_id("dft")
        binding = {"id": draft_id, "mailboxId": mailbox_id, "subject": row["subject"], "to": list(row["to_addresses"]),
                   "inReplyToMessageId": parent, "bodyBytes": len(str(row["body"]).encode("utf-8"))}
        self.drafts[draft_id] = binding
        return EffectResult(outcome=WOULD, subject=draft_id, binding=binding)

    def _propose(self, draft_id: str) -> EffectResult:
        if draft_id in self.proposed:
            # The seal retires the draft it seals: the live run would not read it again.
            return EffectResult(outcome="refused", reason="not_readable", subject=draft_id)
        if draft_id in self.drafts:
            mailbox_id = str(self.drafts[draft_id]["mailboxId"])
        else:
            try:
                mailbox_id = str(drafts_mod.row_of(self.conn, org_id=self.who.org_id, author_id=self.who.butler_id,
                                                   draft_id=draft_id).mailbox_id)
            except MailnodeError:
                return EffectResult(outcome="refused", reason="not_readable", subject=draft_id)
        refused = live_effects.propose_reason(self.conn, self.who, mailbox_id)
        if refused is not None:
            return EffectResult(outcome="refused", reason=refused[0], subject=draft_id if refused[1] else mailbox_id)
        self.proposed.add(draft_id)
        return EffectResult(outcome=WOULD, subject=draft_id)


def _no_run(run_id: str) -> MailnodeError:
    return not_found("E_NO_SUCH_BUTLER_RUN", f"No Butler run {run_id}.",
                     fix="A dry run walks over a run this node performed: GET /api/butler-runs lists them.",
                     run_id=run_id)


def _program(conn: Connection, org_id: str, butler_id: str) -> Any:
    """The Butler with its draft (preferred) or live version and the pause in force (one statement)."""
    v = butler_versions.c
    rows = conn.execute(select(butlers.c.name, v.id, v.state, v.ast_json, v.published_by,
                               butler_pauses.c.id.label("pause_id"))
                        .join(butler_versions, v.butler_id == butlers.c.id)
                        .outerjoin(butler_pauses, pause.in_force_on(butlers.c.org_id, butlers.c.id))
                        .where(butlers.c.id == butler_id, butlers.c.org_id == org_id,
                               v.state.in_(("draft", "published")))).all()
    by_state = {r.state: r for r in rows}
    return by_state.get("draft") or by_state.get("published")


async def simulate(conn: Connection, *, org_id: str, principal_id: str, butler_id: str, run_id: str,
                   pot: int) -> dict[str, Any]:
    """Walk the Butler's draft (or live version) over run ``run_id``'s recorded facts; the report.

    ``conn`` must come from ``Node.read()``. Administrators only: anyone else gets ``E_NO_SUCH_BUTLER``
    (404). Raises ``E_NO_SUCH_BUTLER_RUN`` (404) for a run not in the organisation and
    ``E_BUTLER_NO_PROGRAM`` (409) for a Butler with neither draft nor live version. The report:
    ``{butler_id, version_id, version_state, run_id, checks, findings, outcome: {state, reason, detail},
    nodes: [{node_id, type, verdict, ...}], price: {...}, waits, paused, trigger_facts_redacted, limits}``.
    """
    if not is_id(butler_id, "btl") or not is_admin(conn, org_id, principal_id):
        raise no_such_butler(butler_id)
    prog = _program(conn, org_id, butler_id)
    if prog is None:
        raise conflict("E_BUTLER_NO_PROGRAM", f"Butler {butler_id} has no draft and no live version.",
                       "A dry run walks the draft, or the live version when there is no draft.",
                       f"Save a draft: PUT /api/butlers/{butler_id}/draft.", butler_id=butler_id)
    r = butler_runs.c
    source = conn.execute(select(r.id, r.trigger_event, r.trigger_key, r.trigger_facts)
                          .where(r.id == run_id, r.org_id == org_id)).first()
    if source is None:
        raise _no_run(run_id)
    facts = dict(source.trigger_facts or {})
    mailbox_id = facts.get("mailbox_id")
    may_read = is_id(mailbox_id, "mbx") and holds(conn, org_id, principal_id, METADATA_READERS, "mailbox",
                                                 str(mailbox_id))
    report: dict[str, Any] = {
        "butler_id": butler_id, "version_id": prog.id, "version_state": prog.state, "run_id": run_id,
        "paused": prog.pause_id, "limits": list(LIMITS), "waits": [], "nodes": [],
        "trigger_facts_redacted": None if may_read else disclose(facts, False)[1]}
    checked = check_stored(prog.ast_json, pot=pot)
    report["checks"] = checked.ok
    report["findings"] = [f.render() for f in checked.findings]
    if not checked.ok or checked.ast is None or checked.price is None:
        report["outcome"] = {"state": "refused", "reason": "ast_does_not_check", "detail": {}}
        report["price"] = None
        return report
    document = checked.ast
    price = {"checker": checked.price.total, "engine_fixed": budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS,
             "pot": pot, "reserved_by_walk": 0}
    report["price"] = price
    if checked.price.total + budgets.BUTLER_RUN_ENGINE_FIXED_STATEMENTS > pot:
        report["outcome"] = {"state": "refused", "reason": "unaffordable_with_engine", "detail": {}}
        return report
    sponsor = prog.published_by if prog.state == "published" else principal_id
    who = Principal(org_id=org_id, butler_id=butler_id, sponsor_id=str(sponsor),
                    ceiling=Ceiling.from_capabilities([c.model_dump() for c in document.capabilities]))
    dry = DryEffects(conn=conn, who=who, pot=pot, trigger_key=source.trigger_key)
    state = initial_state(facts, butler_id, prog.id, prog.name)
    result = await walk(document, state, dry, source.trigger_event)
    types = {n.id: n.type for n in document.nodes}
    by_step = {v.call.step: v for v in result.verdicts}
    visits: dict[str, int] = {}
    for node_id in result.visited:
        visits[node_id] = visits.get(node_id, 0) + 1
        step = f"{node_id}#{visits[node_id]}"
        entry: dict[str, Any] = {"node_id": node_id, "type": types.get(node_id), "step": step}
        verdict = by_step.get(step)
        if verdict is None:
            entry["verdict"] = "ran" if types.get(node_id) not in EFFECT_TYPES else "not_reached"
        else:
            entry.update(seq=verdict.call.seq, verdict=verdict.result.outcome, reason=verdict.result.reason,
                         subject=verdict.result.subject)
            if verdict.call.node_type == "draft":
                entry["recipient"] = verdict.call.params["recipient"] if may_read else None
        report["nodes"].append(entry)
    price["reserved_by_walk"] = dry.reserved
    report["waits"] = dry.waits
    detail = {k: v for k, v in result.detail.items() if k != "what"} if result.detail else {}
    if result.detail.get("what") and may_read:
        detail["what"] = result.detail["what"]
    report["outcome"] = {"state": str(result.state), "reason": result.reason, "detail": detail}
    if prog.pause_id is not None:
        report["limits"].insert(0, f"This Butler is paused ({prog.pause_id}): a live run would not start at all "
                                   "until an administrator resumes it.")
    return report

