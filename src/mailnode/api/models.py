"""Request bodies shared by the routers: strict pydantic models (unknown fields are refused, and no value is
coerced: ``true`` is not the number 1, ``"10"`` is not 10, ``1`` is not a string; an integer is accepted
where a float is asked)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A request body that refuses unknown fields and coerces nothing (pydantic strict mode): every request
    model of the API derives from it, so a boolean is never read as a number anywhere."""

    model_config = ConfigDict(extra="forbid", strict=True)
