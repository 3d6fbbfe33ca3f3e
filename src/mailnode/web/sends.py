"""Sends: the list with its search filters and a send's page with its timeline and actions (issue 21).

``/sends`` pages ``outbound.reads.list_sends`` (the service behind ``GET /api/sends``) with the same filters,
parsed by ``api.sends.send_filter``. ``/sends/{id}`` reads ``outbound.reads.get_send`` and the send's audit
entries (``send_audit``) and shows them as a timeline (``web.send_timeline``), the outcome in words
(``outbound.outcome.gate_outcome``, the composer's countdown) and the retry offer as the API makes it.
Actions call the API's services: cancel and release-hold (``outbound.submit``), retry-effect and
resend-may-duplicate (``outbound.retry``); a refusal re-renders the page with the error's four parts and
its status. ``/sends/{id}/raw`` is ``outbound.reads.raw_message`` as ``text/plain``. Who sees a send is the
API's rule (``E_NO_SUCH_SEND`` for a send on a mailbox the person may not read).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from sqlalchemy import select

from mailnode import budgets
from mailnode.api.deps import id_filter, query_invalid
from mailnode.api.errors import validation_error
from mailnode.api.sends import send_filter
from mailnode.authz import holds, mailboxes_visible
from mailnode.errors import MailnodeError
from mailnode.governance.approvals import approvers
from mailnode.mail.thread import author_kind, grant_for
from mailnode.outbound import reads, retry, submit
from mailnode.outbound.outcome import gate_outcome
from mailnode.outbound.workflows import wake
from mailnode.schema.mail import mailboxes
from mailnode.schema.outbound import send_manifests
from mailnode.vocabulary.mail_classes import MailClass
from mailnode.vocabulary.send_states import SendState
from mailnode.web.conversation import names_of, node_of
from mailnode.web.render import page
from mailnode.web.send_timeline import timeline
from mailnode.web.session import CsrfDep, PersonDep

router = APIRouter(include_in_schema=False)

#: The author kinds the filter offers, as the API names them, with their labels.
AUTHOR_KINDS: dict[str, str] = {"person": "Person", "butler": "Butler", "application": "Application",
                                "node": "The node (notices, codes)"}


def _day(value: str, name: str) -> datetime | None:
    """A ``YYYY-MM-DD`` form field as midnight UTC, or None when empty; else 422 naming ``query.<name>``."""
    if not value:
        return None
    try:
        return datetime.combine(date.fromisoformat(value), time(0), tzinfo=UTC)
    except ValueError:
        raise query_invalid(name, value, "a date is YYYY-MM-DD") from None


def filters_of(q: dict[str, str]) -> tuple[str | None, SendState | None, reads.SendFilter]:
    """The list's form fields (``mailbox``, ``state``, ``author_kind``, ``class``, ``recipient``, ``after``,
    ``before``; empty means unfiltered) as ``(mailbox_id, state, SendFilter)``, parsed as ``GET /api/sends``
    parses its query. ``before`` is a day and includes it (sealed before the next midnight UTC). Raises the
    API's 422s: ``E_REQUEST_INVALID`` naming the field, ``E_STATE_UNKNOWN``."""
    mailbox_id = id_filter(q.get("mailbox") or None, "mailbox", "mbx")
    state = retry.state_of(q["state"]) if q.get("state") else None
    before = _day(q.get("before", ""), "before")
    if before is not None:
        before += timedelta(days=1)
    f = send_filter(author_kind=q.get("author_kind") or None, mail_class=q.get("class") or None,
                    recipient=q.get("recipient") or None, after=_day(q.get("after", ""), "after"), before=before)
    return mailbox_id, state, f


#: The list's form fields, in the form's order.
FIELDS = ("state", "mailbox", "author_kind", "class", "recipient", "after", "before")


@router.get("/sends", response_class=HTMLResponse)
def sends_list(request: Request, person: PersonDep, cursor: str | None = None, state: str = "", mailbox: str = "",
               author_kind: str = "", mail_class: Annotated[str, Query(alias="class")] = "", recipient: str = "",
               after: str = "", before: str = "") -> HTMLResponse:
    """The sends of the mailboxes the person may read, newest first, filtered (the form's fields, ``FIELDS``)
    and paged (``budgets.WEB_SENDS_PAGE_SIZE``); a bad filter shows the API's refusal above the form (422)."""
    node = node_of(request)
    p = person.principal
    given = (state, mailbox, author_kind, mail_class, recipient, after, before)
    q = {k: v.strip() for k, v in zip(FIELDS, given, strict=True)}
    refusal: MailnodeError | None = None
    items: list[dict[str, Any]] = []
    with node.read() as conn:
        visible = sorted(mailboxes_visible(conn, p.org_id, p.principal_id))
        boxes = {str(r.id): str(r.name) for r in conn.execute(
            select(mailboxes.c.id, mailboxes.c.name).where(mailboxes.c.org_id == p.org_id,
                                                           mailboxes.c.id.in_(visible))
            .order_by(mailboxes.c.name)).all()} if visible else {}
        try:
            mailbox_id, wanted, f = filters_of(q)
            if cursor:
                id_filter(cursor, "cursor", "snd")
            items = reads.list_sends(conn, org_id=p.org_id, principal_id=p.principal_id,
                                     limit=budgets.WEB_SENDS_PAGE_SIZE, cursor=cursor, mailbox_id=mailbox_id,
                                     state=wanted, filters=f)
        except MailnodeError as err:
            refusal = err
        except RequestValidationError as exc:
            # The API's query refusals (``query_invalid``) are the framework's validation error; the page
            # shows them as the API words them (``E_REQUEST_INVALID`` naming ``query.<field>``).
            refusal = validation_error(list(exc.errors()))
    names = names_of(node, p.org_id, {i["author_id"] for i in items})
    for i in items:
        i["author_name"] = names.get(i["author_id"], i["author_id"])
        i["mailbox_name"] = boxes.get(i["mailbox_id"], i["mailbox_id"])
    more = len(items) == budgets.WEB_SENDS_PAGE_SIZE
    kept = {k: v for k, v in q.items() if v}
    older = "/sends?" + urlencode({**kept, "cursor": items[-1]["id"]}) if more else None
    return page(request, "sends/list.html", status_code=refusal.status if refusal else 200, area="sends",
                q=q, items=items, boxes=boxes, states=[s.value for s in SendState], author_kinds=AUTHOR_KINDS,
                classes=[c.value for c in MailClass], refusal=refusal, older=older, first=bool(cursor),
                first_href="/sends?" + urlencode(kept) if kept else "/sends")


def send_context(request: Request, person: Any, send_id: str) -> dict[str, Any]:
    """The send page's facts: the send as the API reads it, its outcome in words, its timeline, whether the
    person may act on it (``send.propose``) and read its body (the raw message). A fixed number of
    statements whatever the number of recipients and events. Raises ``E_NO_SUCH_SEND`` (404)."""
    node = node_of(request)
    p = person.principal
    with node.read() as conn:
        s = reads.get_send(conn, org_id=p.org_id, principal_id=p.principal_id, send_id=send_id)
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id)).one()
        ids: frozenset[str] = frozenset()
        if s["state"] == "awaiting" and s["state_reason"] == "policy_approval_required":
            ids = approvers(conn, org_id=p.org_id, scope_type="mailbox", relation="approval.decide",
                            scope_id=row.mailbox_id)
        audit = reads.send_audit(conn, org_id=p.org_id, send_id=send_id)
        may_act = holds(conn, p.org_id, p.principal_id, "send.propose", "mailbox", row.mailbox_id)
        grant = grant_for(conn, org_id=p.org_id, principal_id=p.principal_id, row=row)
        box = conn.execute(select(mailboxes.c.name).where(mailboxes.c.id == row.mailbox_id)).scalar_one()
    people = set(ids) | {row.author_id} | {e["actor_id"] for e in audit if e["actor_id"]}
    names = names_of(node, p.org_id, people)
    now: datetime = node.clock.now()
    outcome = gate_outcome(s["state"], s["state_reason"], send_id=send_id, now=now, release_at=row.release_at,
                           approvers=tuple(sorted(names.get(i, i) for i in ids if i != row.author_id)),
                           approval_id=(s["approval"] or {}).get("id"))
    return {"send": s, "outcome": outcome, "now": now.isoformat(), "steps": timeline(s, audit, names),
            "may_act": may_act, "body_visible": grant is not None and s["content_deleted"] is None,
            "grant": grant.value if grant is not None else None, "mailbox_name": box, "mail_class": row.mail_class,
            "author_kind": author_kind(row.author_id, row.auto_submitted),
            "author_name": names.get(row.author_id, row.author_id), "refusal": None, "area": "sends"}


def _send_page(request: Request, person: Any, send_id: str, refusal: MailnodeError | None = None) -> HTMLResponse:
    ctx = send_context(request, person, send_id)
    ctx["refusal"] = refusal
    return page(request, "sends/send.html", status_code=refusal.status if refusal else 200, **ctx)


@router.get("/sends/{send_id}", response_class=HTMLResponse)
def send_page(send_id: str, request: Request, person: PersonDep) -> HTMLResponse:
    """A send's page: the outcome in words (a live countdown while held), the timeline, the retry offer and
    the actions the person may take."""
    return _send_page(request, person, send_id)


@router.get("/sends/{send_id}/outcome")
def send_outcome(send_id: str, request: Request, person: PersonDep) -> JSONResponse:
    """The outcome as JSON for the send page's polling: ``{"state", "kind", "sentence", "may_cancel",
    "seconds_left"}``."""
    ctx = send_context(request, person, send_id)
    o = ctx["outcome"]
    return JSONResponse({"state": ctx["send"]["state"], "kind": o.kind.value, "sentence": o.sentence,
                         "may_cancel": o.may_cancel, "seconds_left": o.seconds_left})


@router.get("/sends/{send_id}/raw")
def send_raw(send_id: str, request: Request, person: PersonDep) -> Response:
    """The submitted message as sealed, ``text/plain`` (``outbound.reads.raw_message``): 403
    ``E_SEND_RAW_NOT_VISIBLE`` to one who sees the send's fields only, 404 ``E_NO_SUCH_SEND``, 410
    ``E_CONTENT_DELETED``, each as a page."""
    p = person.principal
    data = reads.raw_message(node_of(request), org_id=p.org_id, principal_id=p.principal_id, send_id=send_id)
    return PlainTextResponse(data)


def _acted(request: Request, person: Any, send_id: str, act: Any) -> Response:
    """Run ``act()``; back to the send's page (303), or the page with the refusal in its four parts."""
    try:
        target = act()
    except MailnodeError as err:
        if err.code in ("E_NO_SUCH_SEND", "E_ID_MALFORMED"):
            raise
        return _send_page(request, person, send_id, refusal=err)
    return RedirectResponse(f"/sends/{target or send_id}", status_code=303)


@router.post("/sends/{send_id}/cancel")
def cancel(send_id: str, request: Request, person: PersonDep, _: CsrfDep) -> Response:
    """Cancel a held or awaiting send (``outbound.submit.cancel``), then back to its page."""
    p = person.principal
    return _acted(request, person, send_id, lambda: submit.cancel(
        node_of(request), org_id=p.org_id, principal_id=p.principal_id, send_id=send_id) and None)


@router.post("/sends/{send_id}/release-hold")
def release_hold(send_id: str, request: Request, person: PersonDep, _: CsrfDep) -> Response:
    """Release a send a policy holds (``outbound.submit.release_hold``), then back to its page."""
    p = person.principal
    return _acted(request, person, send_id, lambda: submit.release_hold(
        node_of(request), org_id=p.org_id, principal_id=p.principal_id, send_id=send_id) and None)


@router.post("/sends/{send_id}/retry")
def retry_send(send_id: str, request: Request, person: PersonDep, _: CsrfDep, mode: Annotated[str, Form()],
               reason: Annotated[str, Form()] = "", accept_duplicate_risk: Annotated[str, Form()] = ""
               ) -> Response:
    """``retry-effect`` (the same send goes round again) or ``resend-may-duplicate`` (a new send, then its
    page), as ``POST /api/sends/{id}/retry`` does them."""
    node = node_of(request)
    p = person.principal

    def act() -> str | None:
        m = retry.check_mode(mode)
        if m == "retry-effect":
            with node.begin() as conn:
                retry.retry_effect(conn, org_id=p.org_id, principal_id=p.principal_id, at=node.clock.now(),
                                   send_id=send_id)
            wake(send_id, 0.0)
            return None
        sealed = retry.resend_may_duplicate(node, org_id=p.org_id, principal_id=p.principal_id, send_id=send_id,
                                            reason=reason, accept_duplicate_risk=accept_duplicate_risk == "yes")
        submit.wake_at(node, sealed.id, sealed.release_at)
        return sealed.id

    return _acted(request, person, send_id, act)
