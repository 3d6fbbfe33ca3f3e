"""``GET /metrics``: Prometheus exposition text (``metrics``), for a token of an administrator.

Scrapers send ``Authorization: Bearer <token>`` (Prometheus ``authorization`` in ``scrape_config``); the
readings include organisation ids and the provider's posture, so they are not public.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.responses import errors, text_response
from mailnode.authz import is_admin
from mailnode.errors import not_an_administrator
from mailnode.metrics import render

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response,
            responses={**text_response("text/plain", "Prometheus exposition text (version 0.0.4)"), **errors(403)})
def metrics(node: NodeDep, caller: CallerDep) -> Response:
    """The node's metrics at this moment."""
    with node.read() as conn:
        if not is_admin(conn, caller.org_id, caller.principal_id):
            raise not_an_administrator("read the metrics")
    return Response(render(node), media_type=CONTENT_TYPE_LATEST)
