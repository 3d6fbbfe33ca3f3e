"""``POST /api/apps {name}``: an application principal and its token, shown once (administrators)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.models import Strict
from mailnode.notify.apps import create_application

router = APIRouter(prefix="/api/apps", tags=["apps"])


class AppIn(Strict):
    """Body of POST /api/apps."""

    name: str


@router.post("", status_code=201)
def create_app_principal(body: AppIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Create an application; the token in the answer is never shown again."""
    with node.begin() as conn:
        return create_application(conn, org_id=caller.org_id, actor_id=caller.principal_id, at=node.clock.now(),
                                  name=body.name)
