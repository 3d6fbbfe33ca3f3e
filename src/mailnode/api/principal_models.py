"""The answers about principals and their tokens, as the OpenAPI document states them: ``GET /api/me``,
the contact address routes (``api.me``), ``/api/tokens`` (``api.directory``) and ``/api/apps``
(``api.apps``). Each model mirrors the service that builds the answer (named on the class) field for field,
and forbids other fields, so a field added there and not here fails loudly (500 in tests), never vanishes.

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


class Me(_Answer):
    """The caller (``GET /api/me``): its id, organisation, whether it administers it, its contact address."""

    id: str = Field(description="a user id (usr_) or an application id (app_)")
    org_id: str = id_field("org")
    is_admin: bool
    contact_email: str | None
    contact_email_verified: bool


class MeAnswer(_Answer):
    """``{"me": Me}``."""

    me: Me


class ContactEmailSent(_Answer):
    """A contact address set and a code sent to it (``verification_io.request_code``)."""

    address: str
    verified: bool
    code_sent: bool
    expires_at: str | None = Field(json_schema_extra=_INSTANT)


class ContactEmailSentAnswer(_Answer):
    """``{"contact_email": ContactEmailSent}``: ``POST /api/me/contact-email``."""

    contact_email: ContactEmailSent


class ContactEmail(_Answer):
    """The contact address after a code was checked (``verification_io.verify_code``)."""

    address: str | None
    verified: bool


class ContactEmailAnswer(_Answer):
    """``{"contact_email": ContactEmail}``: ``POST /api/me/contact-email/verify``."""

    contact_email: ContactEmail


class MintedToken(_Answer):
    """A token just minted for the caller (``tokens.mint_own_token``); ``token`` is shown only here."""

    id: str = id_field("tok")
    token: str = Field(description="the bearer token (mn_...), shown in this answer only")
    label: str
    parent_token_id: str | None = id_field("tok")


class MintedTokenAnswer(_Answer):
    """``{"token": MintedToken}``: ``POST /api/tokens``."""

    token: MintedToken


class TokenListed(_Answer):
    """One of the caller's tokens, never its plaintext (``tokens.list_tokens``)."""

    id: str = id_field("tok")
    label: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    revoked_at: str | None = Field(json_schema_extra=_INSTANT)
    parent_token_id: str | None = id_field("tok")


class TokenList(_Answer):
    """``GET /api/tokens``: every token of the caller (one page: ``next_cursor`` is always null)."""

    tokens: list[TokenListed]
    next_cursor: None


class TokenRevoked(_Answer):
    """``DELETE /api/tokens/{token_id}``: the token revoked and those minted from it, at any depth."""

    revoked: str = id_field("tok")
    also_revoked: list[str]


class GrantRevoked(_Answer):
    """``DELETE /api/access/{grant_id}``: the grant revoked."""

    revoked: str = id_field("rt")


class Application(_Answer):
    """An application just created (``applications.create_application``)."""

    id: str = id_field("app")
    name: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    token_id: str = id_field("tok")


class ApplicationCreated(_Answer):
    """``POST /api/apps``: the application and its first token, shown in this answer only."""

    application: Application
    token: str = Field(description="the application's bearer token (mn_...), shown in this answer only")


class AppToken(_Answer):
    """One token of an application, never its plaintext."""

    id: str = id_field("tok")
    label: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    revoked_at: str | None = Field(json_schema_extra=_INSTANT)


class ApplicationListed(_Answer):
    """One application in ``GET /api/apps`` (``applications.list_applications``)."""

    id: str = id_field("app")
    name: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    created_by: str | None
    tokens: list[AppToken]


class ApplicationList(_Answer):
    """``GET /api/apps``: every application of the organisation, by name."""

    applications: list[ApplicationListed]


class ApplicationRef(_Answer):
    """An application named by id and name."""

    id: str = id_field("app")
    name: str


class ApplicationTokenMinted(_Answer):
    """``POST /api/apps/{app_id}/tokens``: a new token of the application, shown in this answer only."""

    application: ApplicationRef
    token_id: str = id_field("tok")
    token: str = Field(description="the application's bearer token (mn_...), shown in this answer only")
