"""What the OpenAPI document says about answers: the error body, each route's error statuses, the bearer
scheme and id patterns, declared once here and applied by the routers and by ``document``.

A route declares its success model (``response_model=``, or ``responses=`` content for text, CSV or bytes)
and the error statuses only it can answer (``responses=errors(403, 404)``). ``document`` adds the statuses
every route can answer because of what sits in front of all of them, so no route repeats them:

- 422 ``E_REQUEST_INVALID`` (every route refuses an undeclared query parameter: ``deps.refuse_unknown_query``);
- 500 ``E_INTERNAL`` (``api.errors``);
- 400 ``E_REQUEST_MALFORMED`` and 413 ``E_REQUEST_TOO_LARGE`` on a route that takes a body
  (``api.errors``, ``api.body_limit``);
- 404 ``E_NO_SUCH_...`` on a route with a path parameter (the object it names is absent or undisclosed:
  ``errors.not_found``);
- 401 ``E_UNAUTHENTICATED`` on a route that needs a bearer token (it depends on ``deps.get_caller``, which
  carries ``bearer``, so the document marks it with the ``bearer`` security scheme).

Every error status is the node's own body (``ErrorBody``, ``MailnodeError.to_json``), never the
framework's ``HTTPValidationError``, which ``document`` removes (``api.errors`` renders validation failures
in the node's shape).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query
from fastapi.openapi.utils import get_openapi
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from mailnode.ids import id_pattern

#: The pattern of an ``E_`` code (``MailnodeError.code``).
ERROR_CODE_PATTERN = "^E_[A-Z0-9_]+$"


class ErrorBody(BaseModel):
    """Every refusal and failure the API answers (``MailnodeError.to_json``): the stable code, what
    happened, why, the fix (a route or command) and the offending values."""

    model_config = ConfigDict(extra="forbid")

    error: str = Field(pattern=ERROR_CODE_PATTERN, description="stable code, e.g. E_NO_SUCH_MAIL")
    message: str = Field(description="what happened, one sentence")
    why: str = Field(description="why it was refused or failed")
    fix: str = Field(description="the route or command that changes the outcome")
    detail: dict[str, Any] = Field(description="the offending values; its keys depend on the code")


#: What each error status means on this node (RFC 9110 §15 names; the node's codes in the words).
STATUS_WORDS: dict[int, str] = {
    400: "The body is not JSON (E_REQUEST_MALFORMED).",
    401: "No valid bearer token (E_UNAUTHENTICATED).",
    403: "The caller is known but may not do this (for example E_NOT_AN_ADMINISTRATOR).",
    404: "No such object, or the caller may not know it exists (E_NO_SUCH_...).",
    409: "The request conflicts with the current state; nothing was written.",
    410: "Retention deleted the content this needs (E_CONTENT_DELETED).",
    413: "The body is larger than the node accepts (E_REQUEST_TOO_LARGE).",
    422: "The request is well formed JSON but invalid (E_REQUEST_INVALID, E_ID_MALFORMED, ...); "
         "nothing was written.",
    429: "Too many requests.",
    500: "The node failed unexpectedly (E_INTERNAL, with an error id for the node's log).",
    503: "The node could not do it now (for example E_SEND_UNAVAILABLE).",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entries for error ``statuses``, each answering ``ErrorBody`` with the status's
    words; a status not in ``STATUS_WORDS`` is a programming error (``KeyError``)."""
    return {s: {"model": ErrorBody, "description": STATUS_WORDS[s]} for s in statuses}


def text_response(media_type: str, description: str) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry of a 200 answered as text (``text/plain``, ``text/csv``), not JSON."""
    return {200: {"description": description, "content": {media_type: {"schema": {"type": "string"}}}}}


def bytes_response(description: str, *media_types: str) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry of a 200 answered as bytes under one of ``media_types`` (an attachment, a raw
    message), not JSON."""
    binary = {"schema": {"type": "string", "format": "binary"}}
    return {200: {"description": description, "content": {t: binary for t in media_types}}}


#: The bearer scheme of ``Authorization: Bearer mn_...`` (``directory.tokens``). ``auto_error=False``: the
#: refusal stays ``authenticate``'s 401 ``E_UNAUTHENTICATED``; this object only states the scheme.
bearer = HTTPBearer(auto_error=False, scheme_name="bearer", bearerFormat="mn_ token",
                    description="An API token (mn_...) of a person or an application: POST /api/tokens, "
                                "POST /api/apps/{app_id}/tokens, or mailnode token create.")


def id_path(prefix: str) -> Any:
    """A path parameter holding a ``prefix`` id, its pattern stated in the document (``ids.id_pattern``).

    The pattern is documented, not enforced by the framework: the route's own ``parse_id`` answers a
    malformed id with ``E_ID_MALFORMED`` (422, naming the field), which a framework refusal would replace.
    """
    return Path(json_schema_extra={"pattern": id_pattern(prefix)})


#: Path parameters holding an id of one kind, each with its pattern in the document (``id_path``).
AppId = Annotated[str, id_path("app")]
ApprovalId = Annotated[str, id_path("apr")]
ButlerId = Annotated[str, id_path("btl")]
CaseId = Annotated[str, id_path("cas")]
ConversationId = Annotated[str, id_path("cnv")]
DraftId = Annotated[str, id_path("dft")]
GrantId = Annotated[str, id_path("rt")]
HoldId = Annotated[str, id_path("hld")]
MailboxId = Annotated[str, id_path("mbx")]
MessageId = Annotated[str, id_path("msg")]
PolicyId = Annotated[str, id_path("pol")]
ReceiptId = Annotated[str, id_path("rcpt")]
SendId = Annotated[str, id_path("snd")]
TeamId = Annotated[str, id_path("tm")]
TokenId = Annotated[str, id_path("tok")]
UserId = Annotated[str, id_path("usr")]
DomainPauseId = Annotated[str, id_path("dpz")]
ButlerPauseId = Annotated[str, id_path("bpz")]
WebhookEndpointId = Annotated[str, id_path("whe")]
WebhookDeliveryId = Annotated[str, id_path("whd")]


def id_query(prefix: str, alias: str | None = None) -> Any:
    """A query parameter holding a ``prefix`` id, documented with its pattern (see ``id_path``)."""
    return Query(alias=alias, json_schema_extra={"pattern": id_pattern(prefix)})


def id_field(prefix: str, **kwargs: Any) -> Any:
    """A response model field holding a ``prefix`` id, with its pattern in the document."""
    return Field(pattern=id_pattern(prefix), **kwargs)


_COMMON_ALWAYS = (422, 500)
_COMMON_BODY = (400, 413)
_AUTH = 401
_ABSENT = 404
_FRAMEWORK_SCHEMAS = ("HTTPValidationError", "ValidationError")
_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options", "trace"})


def _error_entry(status: int) -> dict[str, Any]:
    return {"description": STATUS_WORDS[status],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}


def complete(doc: dict[str, Any]) -> dict[str, Any]:
    """Add to every operation of ``doc`` the error statuses every route can answer (see the module) and drop
    the framework's validation error schemas; changes ``doc`` in place and returns it. Pure over ``doc``."""
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("ErrorBody", ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}"))
    for name in _FRAMEWORK_SCHEMAS:
        schemas.pop(name, None)
    for ops in doc.get("paths", {}).values():
        for method, op in ops.items():
            if method not in _HTTP_METHODS:
                continue
            responses = op.setdefault("responses", {})
            statuses = list(_COMMON_ALWAYS)
            if "requestBody" in op:
                statuses += _COMMON_BODY
            if any(p.get("in") == "path" for p in op.get("parameters", [])):
                statuses.append(_ABSENT)
            if op.get("security"):
                statuses.append(_AUTH)
            for status in statuses:
                # The framework's 422 (HTTPValidationError) is replaced: the node answers its own body.
                if str(status) not in responses or "HTTPValidationError" in str(responses[str(status)]):
                    responses[str(status)] = _error_entry(status)
    return doc


def install(app: FastAPI) -> None:
    """Make ``app.openapi`` build the document once, ``complete``d."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, routes=app.routes,
                              description=app.description)
            app.openapi_schema = complete(doc)
        return app.openapi_schema

    setter: Callable[[], dict[str, Any]] = openapi
    app.openapi = setter  # type: ignore[method-assign]
