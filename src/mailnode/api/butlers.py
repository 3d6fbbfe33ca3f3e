"""Routes for the Butler lifecycle (administrators only; spec/butler.md §10).

``POST /api/butlers {name, source}`` creates a Butler with its first draft (201);
``PUT /api/butlers/{id}/draft {source}`` replaces the draft; ``POST /api/butlers/{id}/publish`` publishes
it; ``GET /api/butlers`` lists Butlers by name without sources; ``GET /api/butlers/{id}`` shows one with
its draft and live sources and the history of its versions. ``POST /api/butlers/{id}/disable {reason}``
and ``POST /api/butlers/{id}/enable {reason?}`` switch its new runs off and on (``lifecycle.disable``).
``source`` is the program's JSON text as a string, stored exactly as sent (its digest is
``source_sha256``). Writes by a non-administrator answer 403 ``E_NOT_AN_ADMINISTRATOR``; reads answer 404
``E_NO_SUCH_BUTLER``. The codes are ``mailnode.butler.lifecycle``'s.

``POST /api/butlers/{id}/simulate {"run_id"}`` (administrators): the dry run, ``{"simulation": ...}``
(``mailnode.butler.simulate``): the draft, or the live version when there is no draft, walked over the
recorded facts of a real run on a read-only connection; nothing is written.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter

from mailnode.api.butler_models import ButlerAnswer, ButlerPage, ButlerPublished, SimulationAnswer
from mailnode.api.deps import CallerDep, NamePageDep, NodeDep, paged
from mailnode.api.models import Strict
from mailnode.api.responses import ButlerId, errors
from mailnode.butler import lifecycle, simulate

router = APIRouter(prefix="/api/butlers", tags=["butlers"])


class ButlerIn(Strict):
    """``{name, source}``: a name unique in the organisation and the program's JSON text."""

    name: str
    source: str


class ButlerDraftIn(Strict):
    """``{source}``: the program's JSON text."""

    source: str


@router.post("", status_code=201, response_model=ButlerAnswer, responses=errors(403, 409))
def create(body: ButlerIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Create a Butler and its first draft: ``{"butler": {...}}``."""
    with node.begin() as conn:
        return {"butler": lifecycle.create_butler(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                                  at=node.clock.now(), name=body.name, source=body.source,
                                                  pot=node.settings.butler_run_pot)}


@router.put("/{butler_id}/draft", response_model=ButlerAnswer, responses=errors(403, 409))
def save_draft(butler_id: ButlerId, body: ButlerDraftIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Replace the draft (or start one after a publication): ``{"butler": {...}}``."""
    with node.begin() as conn:
        return {"butler": lifecycle.save_draft(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                               at=node.clock.now(), butler_id=butler_id, source=body.source,
                                               pot=node.settings.butler_run_pot)}


@router.post("/{butler_id}/publish", response_model=ButlerPublished, responses=errors(403, 409))
def publish(butler_id: ButlerId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Publish the draft: ``{"butler": {...}, "published": {version_id, version, superseded_version_id}}``."""
    with node.begin() as conn:
        return lifecycle.publish(conn, org_id=caller.org_id, actor_id=caller.principal_id, at=node.clock.now(),
                                 butler_id=butler_id, pot=node.settings.butler_run_pot)


@router.get("", response_model=ButlerPage)
def list_(node: NodeDep, caller: CallerDep, page: NamePageDep) -> dict[str, Any]:
    """The organisation's Butlers by name: ``{"butlers": [...], "next_cursor"}`` (the cursor is a name)."""
    with node.read() as conn:
        items = lifecycle.list_butlers(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                       limit=page.limit, cursor=page.cursor)
        return paged("butlers", items, page, key="name")


@router.get("/{butler_id}", response_model=ButlerAnswer)
def get(butler_id: ButlerId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One Butler with its draft and live sources: ``{"butler": {...}}``."""
    with node.read() as conn:
        return {"butler": lifecycle.get_butler(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                               butler_id=butler_id)}


class DisableIn(Strict):
    """``{"reason"}``: why the Butler stops answering mail (mandatory, not blank)."""

    reason: str = ""


@router.post("/{butler_id}/disable", response_model=ButlerAnswer, responses=errors(403, 409))
def disable(butler_id: ButlerId, body: DisableIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Disable the Butler: no new runs (runs already open finish), grants untouched: ``{"butler": {...}}``."""
    with node.begin() as conn:
        return {"butler": lifecycle.disable(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                            at=node.clock.now(), butler_id=butler_id, reason=body.reason)}


class EnableIn(Strict):
    """``{"reason"}``: why the Butler may answer mail again (optional; the body itself may be omitted)."""

    reason: str = ""


@router.post("/{butler_id}/enable", response_model=ButlerAnswer, responses=errors(403, 409))
def enable(butler_id: ButlerId, node: NodeDep, caller: CallerDep, body: EnableIn | None = None) -> dict[str, Any]:
    """Enable a disabled Butler (deliveries open its runs again), auditing the reason if any: ``{"butler": {...}}``."""
    with node.begin() as conn:
        return {"butler": lifecycle.enable(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                           at=node.clock.now(), butler_id=butler_id,
                                           reason=body.reason if body is not None else "")}


class SimulateIn(Strict):
    """``{"run_id"}``: the run whose recorded facts the dry run walks over."""

    run_id: str


@router.post("/{butler_id}/simulate", response_model=SimulationAnswer, response_model_exclude_unset=True,
             responses=errors(409))
def simulate_(butler_id: ButlerId, body: SimulateIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The dry run of the Butler's draft (or live version) over one run's facts; writes nothing."""
    with node.read() as conn:
        report = asyncio.run(simulate.simulate(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                               butler_id=butler_id, run_id=body.run_id,
                                               pot=node.settings.butler_run_pot))
    return {"simulation": report}
