"""``GET /api/provider-status``: each transport's provider breaker and quota reading (administrators).

Operational posture is not for every caller (seed 002 keeps it default-denied): a person whose code could
not be sent reads the vague 503, not why. ``quota_percent`` is null, never 0, without a reading today.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.authz import is_admin
from mailnode.errors import not_an_administrator
from mailnode.governance import provider_io
from mailnode.governance.provider import ProviderStatus

router = APIRouter(prefix="/api", tags=["provider"])


@router.get("/provider-status")
def provider_status(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """``{"providers": [...]}``: every stored transport, and the configured one even before its first answer."""
    now = node.clock.now()
    limits = provider_io.limits_of(node.settings)
    with node.read() as conn:
        if not is_admin(conn, caller.org_id, caller.principal_id):
            raise not_an_administrator("read the provider status")
        rows = provider_io.read_all(conn)
    if node.settings.transport not in {r.transport for r in rows}:
        rows.append(ProviderStatus(transport=node.settings.transport))
    return {"providers": [provider_io.to_json(r, now, limits) for r in rows]}
