"""Application principals (administrators; spec/transactional.md §6).

- ``POST /api/apps {name}``: an application and its first token, shown in this answer only (201);
- ``GET /api/apps``: every application with its tokens' ids and labels, never a token;
- ``POST /api/apps/{id}/tokens``: a replacement token for a lost one, shown in this answer only (201);
  revoke the old one with ``DELETE /api/tokens/{token_id}``.

Errors: ``E_UNAUTHENTICATED`` (401), ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_SUCH_APP`` (404),
``E_APP_EXISTS`` (409), ``E_APP_NEEDS_A_NAME`` / ``E_APP_NAME_MALFORMED`` / ``E_BUDGET_EXCEEDED`` (422).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.models import Strict
from mailnode.api.principal_models import ApplicationCreated, ApplicationList, ApplicationTokenMinted
from mailnode.api.responses import AppId, errors
from mailnode.directory.applications import create_application, list_applications, mint_application_token

router = APIRouter(prefix="/api/apps", tags=["apps"])


class AppIn(Strict):
    """Body of POST /api/apps."""

    name: str


@router.post("", status_code=201, response_model=ApplicationCreated, responses=errors(403, 409))
def create_app_principal(body: AppIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Create an application; the token in the answer is never shown again."""
    with node.begin() as conn:
        return create_application(conn, org_id=caller.org_id, actor_id=caller.principal_id, at=node.clock.now(),
                                  name=body.name)


@router.get("", response_model=ApplicationList, responses=errors(403))
def list_app_principals(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """``{"applications": [...]}``: every application of the organisation, by name, with its tokens' ids."""
    with node.read() as conn:
        return {"applications": list_applications(conn, org_id=caller.org_id, actor_id=caller.principal_id)}


@router.post("/{app_id}/tokens", status_code=201, response_model=ApplicationTokenMinted, responses=errors(403))
def mint_app_token(app_id: AppId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """A new token for the application (the old ones stay valid until revoked); shown in this answer only."""
    with node.begin() as conn:
        return mint_application_token(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                      at=node.clock.now(), ref=app_id)
