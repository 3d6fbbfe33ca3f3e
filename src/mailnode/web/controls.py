"""The operator's controls under Limits and health: domain pauses, legal holds, retention settings and the
suppression list (issue 21).

Pages at ``/limits/pauses``, ``/limits/holds``, ``/limits/retention`` and ``/limits/suppressions``. Every form
posts to a route here that calls the service the API calls (``governance.pauses``, ``governance.approvals``,
``retention.holds``, ``retention.io``, ``outbound.suppression``); a refusal re-renders the page with the
API's error in words (code, what happened, why, the fix) and the error's status, and writes nothing. A
success answers 303 back to the page with ``?done=<key>``, which the page words from ``DONE``.

Who sees what: the pauses page is for everyone signed in (``GET /api/domain-pauses`` is), with its forms for
administrators; holds, retention and suppressions are for administrators, and anyone else gets the page with
the API's ``E_NOT_AN_ADMINISTRATOR`` refusal (403).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from mailnode import budgets
from mailnode.authz import require_admin
from mailnode.errors import MailnodeError, invalid
from mailnode.governance import approvals, pause_reads, pauses
from mailnode.mail.mailboxes import list_mailboxes
from mailnode.outbound import suppression
from mailnode.outbound.suppression import ListFilter, parse_csv
from mailnode.retention import hold_reads, holds
from mailnode.retention import io as retention_io
from mailnode.web.conversation import names_of, node_of
from mailnode.web.render import page
from mailnode.web.session import CsrfDep, PersonDep, WebPerson

router = APIRouter(include_in_schema=False)

_SUPPRESSION_ACT = "manage the suppression list"

#: What a completed form did, by the ``done`` key its redirect carries (an unknown key shows nothing).
DONE: dict[str, str] = {
    "pause_requested": "The pause was requested. It is placed when two other administrators approve it; "
                       "until then the domain keeps sending.",
    "pause_lifted": "The pause was lifted; the domain's mail goes out again.",
    "approved": "Your approval was recorded.",
    "denied": "Your denial was recorded; the request is refused.",
    "hold_placed": "The legal hold was placed and is in force now.",
    "lift_requested": "The lift was requested. The hold stays in force until two other deciders of the "
                      "mailbox approve.",
    "retention_saved": "The retention settings were saved.",
    "suppression_added": "The address is on the suppression list.",
    "suppression_removed": "The address was taken off the suppression list.",
}

#: Pages a decision on an approval may return to.
_BACK: dict[str, str] = {"pauses": "/limits/pauses", "holds": "/limits/holds"}


def done_words(key: str | None) -> str | None:
    """The sentence for a ``done`` key, or None for none or an unknown one. Pure."""
    return DONE.get(key or "")


def seconds_field(value: str) -> int | str | None:
    """A retention form field: None when blank (unchanged), an ``int`` when it is a whole number written in
    digits, else the text as typed, which ``retention.rules.check_changes`` refuses in its own words. Pure."""
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.lstrip("-").isdigit():
        return int(text)
    return text


def _back(target: str, done: str) -> RedirectResponse:
    return RedirectResponse(f"{target}?done={done}", status_code=303)


def _render(request: Request, template: str, subarea: str, status: int, refusal: MailnodeError | None,
            done: str | None, **ctx: Any) -> HTMLResponse:
    return page(request, template, status_code=status, area="limits", subarea=subarea, refusal=refusal,
                notice=done_words(done), **ctx)


# Domain pauses ---------------------------------------------------------------------------------------------------


def pauses_context(request: Request, person: WebPerson) -> dict[str, Any]:
    """The pauses page's facts: ``pauses`` (``pause_reads.PausesPage``) and ``names`` (id to display name)."""
    node = node_of(request)
    p = person.principal
    with node.read() as conn:
        facts = pause_reads.read(conn, org_id=p.org_id, reader_id=p.principal_id,
                                 limit=budgets.WEB_CONTROLS_PAUSES_SHOWN)
    ids = {v.requested_by for v in facts.pauses} | {v.lifted_by for v in facts.pauses if v.lifted_by}
    for v in facts.pauses:
        ids |= set(v.approved_by) | set(v.denied_by)
    return {"facts": facts, "names": names_of(node, p.org_id, ids), "me": p.principal_id,
            "approvers_needed": budgets.DOMAIN_PAUSE_APPROVERS}


def _pauses(request: Request, person: WebPerson, refusal: MailnodeError | None = None,
            done: str | None = None) -> HTMLResponse:
    status = refusal.status if refusal is not None else 200
    return _render(request, "controls/pauses.html", "pauses", status, refusal, done,
                   **pauses_context(request, person))


@router.get("/limits/pauses", response_class=HTMLResponse)
def pauses_page(request: Request, person: PersonDep, done: str | None = None) -> HTMLResponse:
    """Every pause in force or asked for, and recent ones, with who asked and approved and what is needed."""
    return _pauses(request, person, done=done)


@router.post("/limits/pauses", response_class=HTMLResponse, response_model=None)
def request_pause(request: Request, person: PersonDep, _: CsrfDep, domain: Annotated[str, Form()] = "",
                  reason: Annotated[str, Form()] = "") -> Response:
    """Ask two other administrators to pause ``domain`` (``pauses.request``, as ``POST /api/domain-pauses``)."""
    node = node_of(request)
    p = person.principal
    try:
        with node.begin() as conn:
            pauses.request(conn, org_id=p.org_id, actor_id=p.principal_id, domain=domain, reason=reason,
                           now=node.clock.now())
    except MailnodeError as err:
        return _pauses(request, person, refusal=err)
    return _back("/limits/pauses", "pause_requested")


@router.post("/limits/pauses/{pause_id}/lift", response_class=HTMLResponse, response_model=None)
def lift_pause(pause_id: str, request: Request, person: PersonDep, _: CsrfDep,
               reason: Annotated[str, Form()] = "") -> Response:
    """Lift a pause in force (``pauses.lift``, as ``POST /api/domain-pauses/{id}/lift``)."""
    node = node_of(request)
    p = person.principal
    try:
        with node.begin() as conn:
            pauses.lift(conn, org_id=p.org_id, actor_id=p.principal_id, pause_id=pause_id, reason=reason or None,
                        now=node.clock.now())
    except MailnodeError as err:
        return _pauses(request, person, refusal=err)
    return _back("/limits/pauses", "pause_lifted")


@router.post("/limits/approvals/{approval_id}/decide", response_class=HTMLResponse, response_model=None)
def decide(approval_id: str, request: Request, person: PersonDep, _: CsrfDep,
           decision: Annotated[str, Form()] = "", back: Annotated[str, Form()] = "pauses") -> Response:
    """Approve or deny a pause request or a hold lift (``approvals.decide``, as ``POST
    /api/approvals/{id}/decide``); back to the pauses or holds page (``back``)."""
    if back not in _BACK:
        raise invalid("E_REQUEST_INVALID", f"The form names no page {back[:40]!r} to return to.",
                      "A decision returns to the pauses or the holds page.", "Decide from one of those pages.")
    node = node_of(request)
    p = person.principal
    try:
        with node.begin() as conn:
            approvals.decide(conn, org_id=p.org_id, approval_id=approval_id, caller_id=p.principal_id,
                             decision=decision, now=node.clock.now())
    except MailnodeError as err:
        return _pauses(request, person, refusal=err) if back == "pauses" else _holds(request, person, refusal=err)
    return _back(_BACK[back], "approved" if decision == "approve" else "denied")


# Legal holds -----------------------------------------------------------------------------------------------------


def holds_context(request: Request, person: WebPerson, cursor: str | None) -> dict[str, Any]:
    """The holds page's facts: ``holds`` (``hold_reads.HoldView``), ``mailboxes`` (id to name), ``names``,
    ``next_cursor``. Raises ``E_NOT_AN_ADMINISTRATOR`` (403) for anyone but an administrator."""
    node = node_of(request)
    p = person.principal
    with node.read() as conn:
        views = hold_reads.read(conn, org_id=p.org_id, reader_id=p.principal_id,
                                limit=budgets.WEB_CONTROLS_HOLDS_PAGE, cursor=cursor)
        boxes = list_mailboxes(conn, org_id=p.org_id, principal_id=p.principal_id,
                               limit=budgets.WEB_CONTROLS_MAILBOX_CHOICES, cursor=None)
    ids = {v.hold["placed_by"] for v in views} | {v.lift_requested_by for v in views if v.lift_requested_by}
    for v in views:
        ids |= set(v.approved_by) | set(v.denied_by)
    full = len(views) == budgets.WEB_CONTROLS_HOLDS_PAGE
    return {"holds": views, "mailboxes": {b["id"]: b["name"] for b in boxes}, "names": names_of(node, p.org_id, ids),
            "next_cursor": views[-1].hold["id"] if full else None, "approvers_needed": budgets.HOLD_LIFT_APPROVERS}


def _holds(request: Request, person: WebPerson, refusal: MailnodeError | None = None, done: str | None = None,
           cursor: str | None = None) -> HTMLResponse:
    try:
        ctx = holds_context(request, person, cursor)
    except MailnodeError as err:
        return _render(request, "controls/holds.html", "holds", err.status, err, done, denied=True)
    status = refusal.status if refusal is not None else 200
    return _render(request, "controls/holds.html", "holds", status, refusal, done, denied=False, **ctx)


@router.get("/limits/holds", response_class=HTMLResponse)
def holds_page(request: Request, person: PersonDep, done: str | None = None,
               cursor: str | None = None) -> HTMLResponse:
    """Every legal hold, in force or lifted, with its lift request and the forms the reader may use."""
    return _holds(request, person, done=done, cursor=cursor)


@router.post("/limits/holds", response_class=HTMLResponse, response_model=None)
def place_hold(request: Request, person: PersonDep, _: CsrfDep, mailbox_id: Annotated[str, Form()] = "",
               matter_id: Annotated[str, Form()] = "", from_date: Annotated[str, Form()] = "",
               to_date: Annotated[str, Form()] = "") -> Response:
    """Place a legal hold at once (``holds.place``, as ``POST /api/holds``); blank fields are left out."""
    node = node_of(request)
    p = person.principal
    try:
        with node.begin() as conn:
            holds.place(conn, org_id=p.org_id, actor_id=p.principal_id, mailbox_id=mailbox_id or None,
                        matter_id=matter_id or None, from_date=from_date or None, to_date=to_date or None,
                        now=node.clock.now())
    except MailnodeError as err:
        return _holds(request, person, refusal=err)
    return _back("/limits/holds", "hold_placed")


@router.post("/limits/holds/{hold_id}/lift", response_class=HTMLResponse, response_model=None)
def request_lift(hold_id: str, request: Request, person: PersonDep, _: CsrfDep,
                 reason: Annotated[str, Form()] = "") -> Response:
    """Ask two other deciders of the held mailbox to lift a hold (``holds.request_lift``, as ``POST
    /api/holds/{id}/lift``)."""
    node = node_of(request)
    p = person.principal
    try:
        with node.begin() as conn:
            holds.request_lift(conn, org_id=p.org_id, actor_id=p.principal_id, hold_id=hold_id, reason=reason,
                               now=node.clock.now())
    except MailnodeError as err:
        return _holds(request, person, refusal=err)
    return _back("/limits/holds", "lift_requested")


# Retention -------------------------------------------------------------------------------------------------------


def _retention(request: Request, person: WebPerson, refusal: MailnodeError | None = None,
               done: str | None = None, typed: dict[str, str] | None = None) -> HTMLResponse:
    node = node_of(request)
    p = person.principal
    try:
        with node.read() as conn:
            settings = retention_io.get_settings(conn, org_id=p.org_id, actor_id=p.principal_id)
    except MailnodeError as err:
        return _render(request, "controls/retention.html", "retention", err.status, err, None, denied=True)
    status = refusal.status if refusal is not None else 200
    return _render(request, "controls/retention.html", "retention", status, refusal, done, denied=False,
                   settings=settings, typed=typed or {}, ceiling_max=budgets.RETENTION_SECONDS_MAX)


@router.get("/limits/retention", response_class=HTMLResponse)
def retention_page(request: Request, person: PersonDep, done: str | None = None) -> HTMLResponse:
    """The organisation's retention settings, with a form for administrators."""
    return _retention(request, person, done=done)


@router.post("/limits/retention", response_class=HTMLResponse, response_model=None)
def save_retention(request: Request, person: PersonDep, _: CsrfDep, inbound_raw_seconds: Annotated[str, Form()] = "",
                   sealed_body_seconds: Annotated[str, Form()] = "",
                   ceiling_seconds: Annotated[str, Form()] = "") -> Response:
    """Change the settings (``retention.io.update_settings``, as ``PATCH /api/settings/retention``); a blank
    field is unchanged. A refusal keeps what was typed in the form."""
    node = node_of(request)
    p = person.principal
    typed = {"inbound_raw_seconds": inbound_raw_seconds, "sealed_body_seconds": sealed_body_seconds,
             "ceiling_seconds": ceiling_seconds}
    try:
        with node.begin() as conn:
            retention_io.update_settings(conn, org_id=p.org_id, actor_id=p.principal_id,
                                         changes={k: seconds_field(v) for k, v in typed.items()},
                                         now=node.clock.now())
    except MailnodeError as err:
        return _retention(request, person, refusal=err, typed=typed)
    return _back("/limits/retention", "retention_saved")


# Suppressions ----------------------------------------------------------------------------------------------------


def _suppressions(request: Request, person: WebPerson, *, q: str = "", exact: bool = False, reason: str = "",
                  cursor: str | None = None, refusal: MailnodeError | None = None, done: str | None = None,
                  imported: suppression.ImportResult | None = None) -> HTMLResponse:
    node = node_of(request)
    p = person.principal
    status = refusal.status if refusal is not None else 200
    tpl = "controls/suppressions.html"
    base: dict[str, Any] = {"q": q, "exact": exact, "reason": reason, "reasons": [r.value for r in suppression.Reason],
                            "imported": imported, "lines_shown": budgets.WEB_CONTROLS_IMPORT_LINES_SHOWN,
                            "max_rows": budgets.SUPPRESSION_IMPORT_MAX_ROWS,
                            "max_bytes": budgets.SUPPRESSION_IMPORT_MAX_BYTES}
    try:
        with node.read() as conn:
            require_admin(conn, p.org_id, p.principal_id, _SUPPRESSION_ACT)
            filters = ListFilter(q=q or None, exact=exact, reason=suppression.parse_reason(reason))
            rows = suppression.list_page(conn, org_id=p.org_id, filters=filters,
                                         limit=budgets.WEB_CONTROLS_SUPPRESSIONS_PAGE, cursor=cursor)
    except MailnodeError as err:
        if err.code == "E_NOT_AN_ADMINISTRATOR":
            return _render(request, tpl, "suppressions", err.status, err, None, denied=True, **base)
        # A bad filter: the page answers the refusal with the list unfiltered.
        return _suppressions(request, person, refusal=refusal or err, done=done, imported=imported)
    full = len(rows) == budgets.WEB_CONTROLS_SUPPRESSIONS_PAGE
    names = names_of(node, p.org_id, {r.added_by for r in rows if r.added_by})
    return _render(request, tpl, "suppressions", status, refusal, done, denied=False, rows=rows, names=names,
                   next_cursor=rows[-1].id if full else None, **base)


@router.get("/limits/suppressions", response_class=HTMLResponse)
def suppressions_page(request: Request, person: PersonDep, q: str = "", exact: bool = False, reason: str = "",
                      cursor: str | None = None, done: str | None = None) -> HTMLResponse:
    """The suppression list, newest first, searched by a part of the address (or the whole with ``exact``) and
    a reason, with add, remove, import and export for administrators."""
    return _suppressions(request, person, q=q, exact=exact, reason=reason, cursor=cursor, done=done)


@router.post("/limits/suppressions", response_class=HTMLResponse, response_model=None)
def add_suppression(request: Request, person: PersonDep, _: CsrfDep, address: Annotated[str, Form()] = "",
                    note: Annotated[str, Form()] = "") -> Response:
    """Put an address on the list (``suppression.add_manual``, as ``POST /api/suppressions``)."""
    node = node_of(request)
    p = person.principal
    try:
        with node.begin() as conn:
            require_admin(conn, p.org_id, p.principal_id, _SUPPRESSION_ACT)
            suppression.add_manual(conn, org_id=p.org_id, actor_id=p.principal_id, address=address,
                                   at=node.clock.now(), note=note or None)
    except MailnodeError as err:
        return _suppressions(request, person, refusal=err)
    return _back("/limits/suppressions", "suppression_added")


@router.post("/limits/suppressions/remove", response_class=HTMLResponse, response_model=None)
def remove_suppression(request: Request, person: PersonDep, _: CsrfDep, address: Annotated[str, Form()] = "",
                       reason: Annotated[str, Form()] = "") -> Response:
    """Take an address off the list with a reason (``suppression.remove``, as ``DELETE
    /api/suppressions/{address}``)."""
    node = node_of(request)
    p = person.principal
    try:
        with node.begin() as conn:
            require_admin(conn, p.org_id, p.principal_id, _SUPPRESSION_ACT)
            suppression.remove(conn, org_id=p.org_id, actor_id=p.principal_id, address=address, reason=reason,
                               at=node.clock.now())
    except MailnodeError as err:
        return _suppressions(request, person, refusal=err)
    return _back("/limits/suppressions", "suppression_removed")


@router.get("/limits/suppressions/export.csv", response_model=None)
def export_suppressions(request: Request, person: PersonDep) -> Response:
    """The whole list as a CSV download (``suppression.export_csv``, as ``GET /api/suppressions/export.csv``);
    anyone but an administrator gets the page with the refusal."""
    node = node_of(request)
    p = person.principal
    try:
        with node.read() as conn:
            require_admin(conn, p.org_id, p.principal_id, _SUPPRESSION_ACT)
            text = suppression.export_csv(conn, org_id=p.org_id)
    except MailnodeError:
        return _suppressions(request, person)
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": 'attachment; filename="suppressions.csv"'})


@router.post("/limits/suppressions/import", response_class=HTMLResponse)
async def import_suppressions(request: Request, person: PersonDep, _: CsrfDep,
                              file: Annotated[UploadFile, File()]) -> HTMLResponse:
    """Import an uploaded CSV (``parse_csv`` then ``import_rows``, as ``POST /api/suppressions/import``): all or
    nothing; the page shows each line's outcome, or the refusal naming the bad line (nothing written).

    At most ``budgets.SUPPRESSION_IMPORT_MAX_BYTES`` + 1 bytes are read, so a larger file is refused
    ``E_SUPPRESSION_IMPORT_TOO_LARGE`` without reading it whole."""
    node = node_of(request)
    p = person.principal
    data = await file.read(budgets.SUPPRESSION_IMPORT_MAX_BYTES + 1)
    try:
        with node.read() as conn:
            require_admin(conn, p.org_id, p.principal_id, _SUPPRESSION_ACT)
        rows = parse_csv(data)
        with node.begin() as conn:
            require_admin(conn, p.org_id, p.principal_id, _SUPPRESSION_ACT)
            result = suppression.import_rows(conn, org_id=p.org_id, actor_id=p.principal_id, rows=rows,
                                             at=node.clock.now())
    except MailnodeError as err:
        return _suppressions(request, person, refusal=err)
    return _suppressions(request, person, imported=result)

