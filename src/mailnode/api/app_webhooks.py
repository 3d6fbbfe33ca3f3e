"""Webhook endpoints and deliveries: how an application (or an administrator, for all application mail) is told
of its mail's events (issue 20, "Events to the application"; ``app_events``). Not the provider webhook
receiver (``api/webhooks.py``, ``POST /api/webhooks/resend``), which takes events in.

- ``POST /api/webhooks/endpoints``: register (201); the answer carries the signing secret, shown only there;
- ``GET /api/webhooks/endpoints``, ``GET|PATCH|DELETE /api/webhooks/endpoints/{id}``;
- ``GET /api/webhooks/endpoints/{id}/deliveries``: newest first, cursor paged, each with its attempts;
- ``POST /api/webhooks/deliveries/{id}/resend``: queue a delivery again now.

Errors: ``E_UNAUTHENTICATED`` (401), ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_SUCH_WEBHOOK_ENDPOINT`` /
``E_NO_SUCH_WEBHOOK_DELIVERY`` (404), ``E_WEBHOOK_ENDPOINT_DISABLED`` (409), ``E_WEBHOOK_URL_MALFORMED`` /
``E_WEBHOOK_EVENT_TYPE_UNKNOWN`` / ``E_WEBHOOK_TAG_FILTER_MALFORMED`` / ``E_BUDGET_EXCEEDED`` /
``E_ID_MALFORMED`` / ``E_REQUEST_INVALID`` (422).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel

from mailnode.api.deps import CallerDep, NodeDep, Page, id_pages, paged
from mailnode.api.models import Strict
from mailnode.api.responses import WebhookDeliveryId, WebhookEndpointId, errors
from mailnode.app_events import endpoints as svc

router = APIRouter(prefix="/api/webhooks", tags=["webhook endpoints"])

#: The answers of a route that reads one endpoint: absent or not the caller's (alike), refused fields.
_SEEN = errors(404)


class EndpointIn(Strict):
    """Body of POST /api/webhooks/endpoints: ``event_types`` omitted means every type; ``tag_filter`` omitted
    or null means every event, else only events of mail carrying one of the tags."""

    url: str
    event_types: list[str] | None = None
    tag_filter: list[str] | None = None
    description: str | None = None


class EndpointPatch(Strict):
    """Body of PATCH /api/webhooks/endpoints/{id}: only the fields given change (``tag_filter: null`` clears
    the filter; ``enabled: true`` enables a disabled endpoint)."""

    url: str | None = None
    event_types: list[str] | None = None
    tag_filter: list[str] | None = None
    description: str | None = None
    enabled: bool | None = None


class EndpointOut(BaseModel):
    """One webhook endpoint (never its secret)."""

    id: str
    url: str
    owner_id: str
    event_types: list[str]
    tag_filter: list[str] | None
    description: str | None
    enabled: bool
    disabled_at: datetime | None
    disabled_reason: str | None
    created_at: datetime


class EndpointCreated(BaseModel):
    """The registered endpoint and its signing secret (``whsec_...``), shown in this answer only."""

    endpoint: EndpointOut
    secret: str


class EndpointAnswer(BaseModel):
    """One endpoint under its noun."""

    endpoint: EndpointOut


class EndpointList(BaseModel):
    """The endpoints the caller may see."""

    endpoints: list[EndpointOut]


class AttemptOut(BaseModel):
    """One delivery attempt: the address connected to (null when refused before connecting), the answer's
    status, the error, the start of the answer and how many of its bytes were read."""

    id: str
    attempted_at: datetime
    address: str | None
    status_code: int | None
    error: str | None
    response_excerpt: str | None
    response_bytes: int | None
    duration_ms: int | None


class DeliveryOut(BaseModel):
    """One event for one endpoint, its state (``pending | delivered | failed | disabled``) and attempts."""

    id: str
    endpoint_id: str
    event_id: str
    event_type: str
    payload: dict[str, Any]
    state: str
    attempts: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None
    attempt_log: list[AttemptOut]


class DeliveryList(BaseModel):
    """A page of deliveries, newest first."""

    deliveries: list[DeliveryOut]
    next_cursor: str | None


class DeliveryAnswer(BaseModel):
    """One delivery under its noun."""

    delivery: DeliveryOut


@router.post("/endpoints", status_code=201, response_model=EndpointCreated,
             responses=errors(403))
def create_endpoint(body: EndpointIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Register an endpoint for the caller (an application: its own mail; an administrator: all of the
    organisation's application mail); the secret is shown only in this answer."""
    with node.begin() as conn:
        return svc.create_endpoint(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                   at=node.clock.now(), url=body.url, event_types=body.event_types,
                                   tag_filter=body.tag_filter, description=body.description)


@router.get("/endpoints", response_model=EndpointList, responses=errors())
def list_endpoints(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The endpoints the caller may see (an administrator: all of the organisation's)."""
    with node.read() as conn:
        return {"endpoints": svc.list_endpoints(conn, org_id=caller.org_id, principal_id=caller.principal_id)}


@router.get("/endpoints/{endpoint_id}", response_model=EndpointAnswer, responses=_SEEN)
def read_endpoint(endpoint_id: WebhookEndpointId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """One endpoint."""
    with node.read() as conn:
        return {"endpoint": svc.read_endpoint(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                              endpoint_id=endpoint_id)}


@router.patch("/endpoints/{endpoint_id}", response_model=EndpointAnswer, responses=_SEEN)
def change_endpoint(endpoint_id: WebhookEndpointId, body: EndpointPatch, node: NodeDep,
                    caller: CallerDep) -> dict[str, Any]:
    """Change an endpoint's URL, event types, tag filter, description, or enable/disable it."""
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    with node.begin() as conn:
        return {"endpoint": svc.change_endpoint(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                                endpoint_id=endpoint_id, at=node.clock.now(), changes=changes)}


@router.delete("/endpoints/{endpoint_id}", status_code=204, response_class=Response,
               responses=_SEEN)
def remove_endpoint(endpoint_id: WebhookEndpointId, node: NodeDep, caller: CallerDep) -> Response:
    """Remove an endpoint with its deliveries and their attempts."""
    with node.begin() as conn:
        svc.remove_endpoint(conn, org_id=caller.org_id, principal_id=caller.principal_id, endpoint_id=endpoint_id,
                            at=node.clock.now())
    return Response(status_code=204)


@router.get("/endpoints/{endpoint_id}/deliveries", response_model=DeliveryList, responses=_SEEN)
def list_deliveries(endpoint_id: WebhookEndpointId, node: NodeDep, caller: CallerDep,
                    page: Annotated[Page, Depends(id_pages("whd"))]) -> dict[str, Any]:
    """An endpoint's deliveries, newest first, each with every attempt; ``next_cursor`` pages on."""
    with node.read() as conn:
        items = svc.list_deliveries(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                    endpoint_id=endpoint_id, limit=page.limit, cursor=page.cursor)
    return paged("deliveries", items, page)


@router.post("/deliveries/{delivery_id}/resend", response_model=DeliveryAnswer,
             responses=errors(404, 409))
def resend_delivery(delivery_id: WebhookDeliveryId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Queue a delivery again now with a fresh retry schedule (same ``event_id``)."""
    with node.begin() as conn:
        return {"delivery": svc.resend_delivery(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                                delivery_id=delivery_id, at=node.clock.now())}
