"""The answers about one Butler, as the OpenAPI document states them (``lifecycle.butler_json`` field for
field; closed models: a field the service adds and the model lacks fails loudly, never vanishes).

Instants are strings in ISO 8601 UTC as the node writes them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.responses import id_field

_INSTANT: JsonDict = {"format": "date-time"}


class _Answer(BaseModel):
    """An answer's part: closed (a field the service adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


class ButlerVersionMeta(_Answer):
    """One version of a Butler without its source: ``state`` draft, published or superseded; ``version``
    null for the draft; ``price`` the checker's cost bound."""

    id: str = id_field("btv")
    state: str
    version: int | None
    ast_sha256: str
    source_sha256: str
    price: int
    created_by: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    published_by: str | None
    published_at: str | None = Field(json_schema_extra=_INSTANT)
    superseded_at: str | None = Field(json_schema_extra=_INSTANT)


class ButlerVersion(ButlerVersionMeta):
    """The current draft or live version, with its ``source`` (the program's JSON text)."""

    source: str


class ButlerDisabled(_Answer):
    """When, by whom and why a Butler was disabled."""

    at: str = Field(json_schema_extra=_INSTANT)
    by: str | None
    reason: str | None


class Butler(_Answer):
    """One Butler: its draft and live versions with sources (or null) and every version, draft first."""

    id: str = id_field("btl")
    name: str
    created_by: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    disabled: ButlerDisabled | None
    draft: ButlerVersion | None
    live: ButlerVersion | None
    versions: list[ButlerVersionMeta]


class ButlerAnswer(_Answer):
    """``{"butler": Butler}``."""

    butler: Butler


class Published(_Answer):
    """The version just published and the one it superseded (null for a first publication)."""

    version_id: str = id_field("btv")
    version: int
    superseded_version_id: str | None = id_field("btv")


class ButlerPublished(_Answer):
    """``POST /api/butlers/{butler_id}/publish``: the Butler and what was published."""

    butler: Butler
    published: Published
