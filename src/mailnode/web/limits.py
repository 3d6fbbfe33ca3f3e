"""Limits and health: breakers, the provider breaker, the limits, doctor and the audit chain's verdict (issue 21).

- ``GET /limits``: the rate breakers' readings against their limits (``governance.breakers.evaluate``, as
  ``GET /api/breakers``), the provider breaker (``provider_io.status_of``, as ``GET /api/provider-status``),
  the breaker limits (``governance.limits.read``, as ``GET /api/breaker-limits``) with a form for
  administrators, doctor's findings as the caller may see them (``doctor.checks.run_checks``, as
  ``GET /api/doctor``, but without ``audit_chain_intact``), and the audit chain's length with the last recorded
  verdict (``audit.chain_length``, ``audit.last_verification``). The page never walks the audit chain.
- ``POST /limits/breaker-limits``: change the limits (``governance.limits.change``, as
  ``PATCH /api/breaker-limits``); a refusal is shown beside the form with its code, nothing written.
- ``POST /limits/audit/verify``: walk the chain now (``audit.verify``, then ``audit.record_verification``, as
  ``POST /api/audit/verify``) and show the verdict.

Each section a caller may not read shows the API's refusal in its place (the breakers: ``E_BREAKERS_NOT_VISIBLE``;
the provider, the limits' sources and the audit chain: ``E_NOT_AN_ADMINISTRATOR``); the rest of the page stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from mailnode import audit, authz
from mailnode.doctor.checks import CHECKS, run_checks
from mailnode.doctor.findings import verdict
from mailnode.doctor.visibility import view, viewer_of
from mailnode.errors import MailnodeError
from mailnode.governance import breakers, limits, provider_io
from mailnode.node import Node
from mailnode.web.limits_view import (
    breaker_row,
    class_ceilings,
    fix_page,
    instant_words,
    provider_state_words,
    quota_words,
)
from mailnode.web.render import page
from mailnode.web.session import CsrfDep, PersonDep, WebPerson

router = APIRouter(include_in_schema=False)

#: The doctor check the page leaves out: it walks the whole audit chain (270 ms at 10,000 entries). The page
#: shows the chain's length and the last recorded verdict instead, and walks it only on ``POST``.
CHAIN_WALK = "audit_chain_intact"
#: Every other doctor check, in report order.
PAGE_CHECKS = [name for name in CHECKS if name != CHAIN_WALK]

_INTEGER = re.compile(r"^[+-]?\d{1,12}$")


@dataclass(frozen=True)
class Section:
    """One section's content, or the refusal its reader gets in its place."""

    content: Any = None
    refusal: MailnodeError | None = None


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def _section(read: Any) -> Section:
    """``read()`` as a section; a ``MailnodeError`` becomes the section's refusal (shown, never dropped)."""
    try:
        return Section(content=read())
    except MailnodeError as err:
        return Section(refusal=err)


def form_changes(form: dict[str, str]) -> dict[str, object]:
    """The limits form's fields as the changes ``governance.limits.change`` takes (pure).

    A limit's field left empty is unchanged; ``reset_<name>`` ticked resets it to its default (None); a
    whole number is sent as an integer; anything else is sent as typed, so the service refuses it with
    ``E_BREAKER_LIMIT_NOT_INTEGER`` (never a second validation here). Fields that are not limits are ignored
    (``csrf_token``)."""
    changes: dict[str, object] = {}
    for name in limits.SPECS:
        if form.get(f"reset_{name}"):
            changes[name] = None
            continue
        raw = (form.get(name) or "").strip()
        if not raw:
            continue
        changes[name] = int(raw) if _INTEGER.match(raw) else raw
    return changes


def _limits_page(request: Request, person: WebPerson, status_code: int = 200, **extra: Any) -> HTMLResponse:
    node = _node(request)
    principal = person.principal
    org_id, actor_id = principal.org_id, principal.principal_id
    now = node.clock.now()
    signals = breakers.delivery_signals_of(node.settings.transport)
    with node.read() as conn:
        admin = authz.is_admin(conn, org_id, actor_id)

        def read_breakers() -> list[Any]:
            authz.require_breakers_visible(conn, org_id, actor_id)
            state = breakers.evaluate(conn, org_id=org_id, now=now, delivery_signals=signals)
            return [breaker_row(r, now) for r in state.readings]

        breaker_section = _section(read_breakers)
        provider_section = _section(lambda: provider_io.status_of(conn, org_id=org_id, actor_id=actor_id,
                                                                   settings=node.settings, now=now))
        limits_section = _section(lambda: limits.read(conn, org_id=org_id, actor_id=actor_id))

        def read_audit() -> dict[str, Any]:
            authz.require_admin(conn, org_id, actor_id, "read the audit trail")
            return {"length": audit.chain_length(conn, org_id), "last": audit.last_verification(conn, org_id)}

        audit_section = _section(read_audit)
        viewer = viewer_of(conn, org_id, actor_id)
    context: dict[str, Any] = {"limits_changed": False, "limits_refusal": None, "limits_typed": {},
                               "audit_refusal": None, "verification": None, **extra}
    findings = [view(f, viewer) for f in run_checks(node, org_id, PAGE_CHECKS)]
    providers = [{**p, "state_words": provider_state_words(p["state"]), "quota_words": quota_words(p),
                  "classes": class_ceilings(p)} for p in provider_section.content or []]
    return page(request, "limits/limits.html", status_code=status_code, area="limits", subarea="overview",
                admin=admin, breakers=breaker_section, provider=provider_section, providers=providers,
                limits=limits_section, audit_chain=audit_section, findings=findings,
                doctor_verdict=verdict(findings), fix_page=fix_page, instant_words=instant_words,
                chain_walk=CHAIN_WALK, **context)


@router.get("/limits", response_class=HTMLResponse)
def limits_page(request: Request, person: PersonDep, changed: str | None = None) -> HTMLResponse:
    """Breakers, the provider breaker, the limits, doctor and the audit chain, each as far as the person may see."""
    return _limits_page(request, person, limits_changed=changed == "1")


@router.post("/limits/breaker-limits", response_class=HTMLResponse, response_model=None)
async def change_limits(request: Request, person: PersonDep, _csrf: CsrfDep) -> HTMLResponse | RedirectResponse:
    """Set or reset breaker limits (administrators; ``governance.limits.change``); then back to ``/limits``.

    A refusal (``E_NOT_AN_ADMINISTRATOR`` 403, ``E_BREAKER_LIMIT_NOT_INTEGER`` or ``E_BREAKER_LIMIT_OUT_OF_RANGE``
    422) re-renders the page with its status and the refusal beside the form; nothing is written."""
    form = {k: str(v) for k, v in (await request.form()).items()}
    changes = form_changes(form)
    node = _node(request)
    principal = person.principal
    try:
        with node.begin() as conn:
            limits.change(conn, org_id=principal.org_id, actor_id=principal.principal_id, changes=changes,
                          now=node.clock.now())
    except MailnodeError as err:
        return _limits_page(request, person, status_code=err.status, limits_refusal=err, limits_typed=form)
    return RedirectResponse("/limits?changed=1#limits", status_code=303)


@router.post("/limits/audit/verify", response_class=HTMLResponse)
def verify_audit(request: Request, person: PersonDep, _csrf: CsrfDep) -> HTMLResponse:
    """Walk the audit chain now and record the verdict (administrators; ``audit.verify``, then
    ``audit.record_verification``), then show the page with it. ``E_NOT_AN_ADMINISTRATOR`` (403) is shown in
    the audit section; nothing is recorded."""
    node = _node(request)
    principal = person.principal
    try:
        with node.read() as conn:
            authz.require_admin(conn, principal.org_id, principal.principal_id, "verify the audit trail")
            result = audit.verify(conn, principal.org_id)
        with node.begin() as conn:
            audit.record_verification(conn, principal.org_id, result, actor_id=principal.principal_id,
                                      now=node.clock.now())
    except MailnodeError as err:
        return _limits_page(request, person, status_code=err.status, audit_refusal=err)
    return _limits_page(request, person, verification=result)
