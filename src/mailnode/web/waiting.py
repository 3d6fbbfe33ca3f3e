"""Waiting for me: Butler proposals to release, approvals to decide, domain pauses and hold lifts awaiting this person
(issue 21).

- ``GET /waiting``: the Butler sends the person may release (``butler.release.releasable``: each with its full
  text, recipients and the message it answers, side by side), and the approvals waiting on their decision
  (``governance.approvals.waiting_on``: sends a policy held, domain pauses, hold lifts, supervised reads).
- ``POST /waiting/sends/{id}/release`` and ``/cancel``: what ``POST /api/sends/{id}/release`` and
  ``/cancel`` do (the same service calls).
- ``POST /waiting/release``: the bulk confirmation page (how many sends and recipients will leave);
  ``POST /waiting/release/confirm`` releases each ticked send and shows each outcome.
- ``POST /waiting/approvals/{id}/decide`` ``{decision, reason?}``: ``POST /api/approvals/{id}/decide``.

A refusal is the API's own error, shown on the page above the lists with its status. At import, this module
installs the header's count (``nav.set_waiting_counter``): the same two things the page lists, counted in
at most ``budgets.WAITING_COUNT_MAX_STATEMENTS`` statements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse

from mailnode import budgets
from mailnode.butler import release
from mailnode.directory.tokens import Principal
from mailnode.errors import MailnodeError
from mailnode.governance import approvals
from mailnode.mail.thread import body_of
from mailnode.node import Node
from mailnode.outbound import submit
from mailnode.outbound.workflows import wake
from mailnode.web import nav
from mailnode.web.render import page
from mailnode.web.session import CsrfDep, PersonDep, WebPerson

router = APIRouter(include_in_schema=False)


def count(node: Node, principal: Principal) -> int:
    """What waits on ``principal``: the Butler sends they may release plus the approvals waiting on their
    decision (five statements: two scopes, the administrator check, two counts)."""
    with node.read() as conn:
        scopes = approvals.scopes_of(conn, org_id=principal.org_id, caller_id=principal.principal_id)
        mine = release.release_scopes(conn, org_id=principal.org_id, principal_id=principal.principal_id)
        return (approvals.count_waiting(conn, org_id=principal.org_id, caller_id=principal.principal_id,
                                        scopes=scopes)
                + release.count_releasable(conn, org_id=principal.org_id, scopes=mine))


nav.set_waiting_counter(count)


@dataclass(frozen=True)
class Shown:
    """One Butler proposal as the page shows it: the proposal, its body (None when deleted) and recipients."""

    proposal: release.Proposal
    body: dict[str, str | None] | None

    @property
    def recipients(self) -> list[tuple[str, str]]:
        """``(kind, address)`` in To, Cc, Bcc order."""
        r = self.proposal.row
        return ([("To", a) for a in r.to_addresses or []] + [("Cc", a) for a in r.cc_addresses or []]
                + [("Bcc", a) for a in r.bcc_addresses or []])


@dataclass(frozen=True)
class Outcome:
    """What one act did, in words, for the notice above the lists: ``ok`` or the refusal."""

    send_id: str
    words: str
    refusal: MailnodeError | None = None


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def _read(node: Node, person: WebPerson) -> tuple[list[Shown], list[dict[str, Any]], bool]:
    """The page's reads: the proposals with their bodies, the approvals, and whether the person may decide
    or release anything at all (a fixed number of statements; bodies come from the evidence store)."""
    p = person.principal
    with node.read() as conn:
        scopes = approvals.scopes_of(conn, org_id=p.org_id, caller_id=p.principal_id)
        mine = release.release_scopes(conn, org_id=p.org_id, principal_id=p.principal_id)
        proposals = release.releasable(conn, org_id=p.org_id, principal_id=p.principal_id, scopes=mine,
                                       limit=budgets.WAITING_PAGE_MAX)
        asked = approvals.waiting_on(conn, org_id=p.org_id, caller_id=p.principal_id, scopes=scopes,
                                     limit=budgets.WAITING_PAGE_MAX)
    shown = [Shown(x, None if x.content_deleted_at is not None else body_of(node, x.row)) for x in proposals]
    may_act = bool(mine or scopes.mailboxes or scopes.admin)
    return shown, asked, may_act


def _page(request: Request, person: WebPerson, *, outcomes: list[Outcome] | None = None,
          refusal: MailnodeError | None = None) -> HTMLResponse:
    node = _node(request)
    shown, asked, may_act = _read(node, person)
    status = refusal.status if refusal is not None else 200
    return page(request, "waiting/waiting.html", status_code=status, proposals=shown, approvals=asked,
                may_act=may_act, outcomes=outcomes or [], refusal=refusal, area="waiting",
                reason_max=budgets.APPROVAL_DECISION_REASON_MAX_CHARS, page_max=budgets.WAITING_PAGE_MAX)


@router.get("/waiting", response_class=HTMLResponse)
def waiting(request: Request, person: PersonDep) -> HTMLResponse:
    """Everything waiting on the signed-in person, oldest first in each section."""
    return _page(request, person)


def _release_one(node: Node, person: WebPerson, send_id: str) -> Outcome:
    """``POST /api/sends/{id}/release``'s calls: release, tell the run, wake the dispatcher at ``release_at``."""
    p = person.principal
    with node.begin() as conn:
        done = release.release_send(conn, org_id=p.org_id, principal_id=p.principal_id, at=node.clock.now(),
                                    send_id=send_id)
    release.tell_run(node, done, p.principal_id)
    wake(send_id, max(0.0, (done.release_at - node.clock.now()).total_seconds()))
    return Outcome(send_id, f"Released: held until {done.release_at:%Y-%m-%d %H:%M} UTC (you may still cancel "
                            "it from its send page until then), then handed over.")


@router.post("/waiting/sends/{send_id}/release", response_class=HTMLResponse)
def release_send(request: Request, send_id: str, person: PersonDep, _csrf: CsrfDep) -> HTMLResponse:
    """Release one Butler send; the page again with what happened, or the API's refusal."""
    try:
        done = _release_one(_node(request), person, send_id)
    except MailnodeError as err:
        return _page(request, person, refusal=err)
    return _page(request, person, outcomes=[done])


@router.post("/waiting/sends/{send_id}/cancel", response_class=HTMLResponse)
def cancel_send(request: Request, send_id: str, person: PersonDep, _csrf: CsrfDep) -> HTMLResponse:
    """Cancel one Butler send (``outbound.submit.cancel``, as ``POST /api/sends/{id}/cancel``)."""
    p = person.principal
    try:
        submit.cancel(_node(request), org_id=p.org_id, principal_id=p.principal_id, send_id=send_id)
    except MailnodeError as err:
        return _page(request, person, refusal=err)
    return _page(request, person, outcomes=[Outcome(send_id, "Cancelled: it will not leave.")])


def _no_selection() -> MailnodeError:
    return MailnodeError(code="E_WAITING_NOTHING_TICKED", what="No send was ticked.",
                         why="A bulk release acts on the Butler sends you tick, and you ticked none.",
                         fix="Tick the sends to release, then choose Release the ticked sends.", status=422)


@router.post("/waiting/release", response_class=HTMLResponse)
def confirm_bulk(request: Request, person: PersonDep, _csrf: CsrfDep,
                 send_id: Annotated[list[str] | None, Form()] = None) -> HTMLResponse:
    """The confirmation of a bulk release: the ticked sends still waiting, how many there are and how many
    recipients they will go to. Ticked sends no longer waiting are named as such."""
    ticked = list(dict.fromkeys(send_id or []))
    if not ticked:
        return _page(request, person, refusal=_no_selection())
    shown, _, _ = _read(_node(request), person)
    by_id = {s.proposal.row.id: s for s in shown}
    chosen = [by_id[i] for i in ticked if i in by_id]
    gone = [i for i in ticked if i not in by_id]
    recipients = sum(len(s.recipients) for s in chosen)
    return page(request, "waiting/confirm.html", chosen=chosen, gone=gone, recipients=recipients, area="waiting")


@router.post("/waiting/release/confirm", response_class=HTMLResponse)
def release_bulk(request: Request, person: PersonDep, _csrf: CsrfDep,
                 send_id: Annotated[list[str] | None, Form()] = None) -> HTMLResponse:
    """Release each confirmed send, one transaction each; the page with each one's outcome or refusal."""
    ticked = list(dict.fromkeys(send_id or []))
    if not ticked:
        return _page(request, person, refusal=_no_selection())
    node = _node(request)
    outcomes: list[Outcome] = []
    for sid in ticked:
        try:
            outcomes.append(_release_one(node, person, sid))
        except MailnodeError as err:
            outcomes.append(Outcome(sid, "Not released.", err))
    return _page(request, person, outcomes=outcomes)


_DECIDED_WORDS = {"approved": "Approved: every stage is filled, so the approval takes effect.",
                  "denied": "Denied: the approval is settled and its subject refused.",
                  "pending": "Recorded: the approval still waits on other people."}


@router.post("/waiting/approvals/{approval_id}/decide", response_class=HTMLResponse)
def decide(request: Request, approval_id: str, person: PersonDep, _csrf: CsrfDep,
           decision: Annotated[str, Form()] = "", reason: Annotated[str, Form()] = "") -> HTMLResponse:
    """Approve or deny with an optional reason (``approvals.decide``, as ``POST /api/approvals/{id}/decide``)."""
    node = _node(request)
    p = person.principal
    try:
        with node.begin() as conn:
            out = approvals.decide(conn, org_id=p.org_id, approval_id=approval_id, caller_id=p.principal_id,
                                   decision=decision, now=node.clock.now(), reason=reason or None)
    except MailnodeError as err:
        return _page(request, person, refusal=err)
    words = _DECIDED_WORDS.get(str(out["approval_state"]), str(out["approval_state"]))
    return _page(request, person, outcomes=[Outcome(approval_id, words)])

