"""Routes for the Butler run record (administrators; spec/butler.md §6.1).

``GET /api/butler-runs?butler_id=&limit=&cursor=`` lists runs newest first: ``{"butler_runs": [...],
"next_cursor"}``; ``GET /api/butler-runs/{id}`` shows one run with its effect rows in walk order:
``{"butler_run": {..., "effect_rows": [...]}}``. Neither ever returns the run's trigger facts (mail
content) nor what an effect bound. Anyone but an administrator gets 404 ``E_NO_SUCH_BUTLER_RUN``.

``GET /api/butler-runs/{id}/inspect``: ``{"inspection": ...}`` (``butler.replay.inspect``): the run, its
program and whether it still checks, the trigger facts (content facts null and listed as redacted
unless the caller may read the mailbox's metadata), the effect rows with each send's state and retry
offer, the replays made of it, whether a re-run is available, and what a record cannot tell.
``POST /api/butler-runs/{id}/replay {"mode": "re-run"}``: 202 ``{"replay": {mode, run_id, replay_of,
version_id}}``; the run starts at once in this process's durable executor. Codes are
``butler.replay``'s; ``E_EXECUTOR_NOT_RUNNING`` (503) when this process runs no executor (nothing is
written then).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import Field

from mailnode import runtime
from mailnode.api.butler_models import ButlerRunAnswer, ButlerRunPage, InspectionAnswer, ReplayAnswer
from mailnode.api.deps import CallerDep, NodeDep, RunPageDep, id_filter, paged
from mailnode.api.models import Strict
from mailnode.api.responses import errors, id_query
from mailnode.butler import record, replay
from mailnode.errors import MailnodeError

router = APIRouter(prefix="/api/butler-runs", tags=["butlers"])


@router.get("", response_model=ButlerRunPage)
def list_(node: NodeDep, caller: CallerDep, page: RunPageDep,
          butler_id: Annotated[str | None, id_query("btl")] = None) -> dict[str, Any]:
    """Runs newest first, optionally of one Butler (a malformed ``butler_id`` is 422 naming it)."""
    butler_id = id_filter(butler_id, "butler_id", "btl")
    with node.read() as conn:
        items = record.list_runs(conn, org_id=caller.org_id, principal_id=caller.principal_id, limit=page.limit,
                                 cursor=page.cursor, butler_id=butler_id)
    return paged("butler_runs", items, page)


@router.get("/{run_id}", response_model=ButlerRunAnswer)
def get(run_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One run and its effect rows."""
    with node.read() as conn:
        return {"butler_run": record.get_run(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                             run_id=run_id)}


@router.get("/{run_id}/inspect", response_model=InspectionAnswer, response_model_exclude_unset=True)
def inspect(run_id: str, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The inspection of one run (administrators); writes nothing but the ``supervised.opened`` a supervised
    grant owes before it opens the run's content facts (so it runs in a write transaction)."""
    with node.begin() as conn:
        return {"inspection": replay.inspect(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                             run_id=run_id, pot=node.settings.butler_run_pot,
                                             at=node.clock.now())}


class ReplayIn(Strict):
    """``{"mode": "re-run"}``; the send-scoped modes live on ``POST /api/sends/{id}/retry``."""

    #: The modes are documented, and ``replay.check_mode`` refuses another with its own code
    #: (``E_BUTLER_REPLAY_MODE_UNKNOWN``, naming the route of the send-scoped modes).
    mode: str = Field(json_schema_extra={"enum": list(replay.RUN_MODES)})


@router.post("/{run_id}/replay", status_code=202, response_model=ReplayAnswer, responses=errors(409, 503))
def replay_run(run_id: str, body: ReplayIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Re-run a run over its recorded facts with every judgement re-asked, and start it."""
    replay.check_mode(body.mode)
    with node.begin() as conn:
        # The run is found (404) and may be re-run (409) before the executor is asked for; without one the
        # transaction rolls back and nothing is opened.
        opened = replay.open_rerun(conn, org_id=caller.org_id, principal_id=caller.principal_id, run_id=run_id,
                                   at=node.clock.now(), pot=node.settings.butler_run_pot)
        if not runtime.is_launched():
            raise MailnodeError(code="E_EXECUTOR_NOT_RUNNING", what="This process runs no durable executor.",
                                why="A re-run is a Butler run, and runs execute in the durable executor.",
                                fix="Ask the node started with mailnode serve.", status=503)
    replay.start(node, opened["run_id"])
    return {"replay": opened}
