"""The answers about the organisation's directory, as the OpenAPI document states them: users, teams,
domains, access grants (``api.directory``) and mailboxes (``api.mailboxes``). Each model mirrors the
function that builds the answer (named on the class) field for field and forbids other fields, so a field
added there and not here fails loudly, never vanishes.

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


class User(_Answer):
    """A person (``people.user_json``)."""

    id: str = id_field("usr")
    email: str
    name: str
    created_at: str = Field(json_schema_extra=_INSTANT)


class UserAnswer(_Answer):
    """``{"user": User}``: ``POST /api/users``."""

    user: User


class UserPage(_Answer):
    """``GET /api/users``: one page, and the cursor of the next (null at the end)."""

    users: list[User]
    next_cursor: str | None = id_field("usr")


class Team(_Answer):
    """A team with its members' user ids (``people.team_json``)."""

    id: str = id_field("tm")
    name: str
    members: list[str]
    created_at: str = Field(json_schema_extra=_INSTANT)


class TeamAnswer(_Answer):
    """``{"team": Team}``: creating a team, adding or removing a member."""

    team: Team


class TeamPage(_Answer):
    """``GET /api/teams``: one page, and the cursor of the next (null at the end)."""

    teams: list[Team]
    next_cursor: str | None = id_field("tm")


class Domain(_Answer):
    """A domain of the organisation (``domains.add_domain``, ``domains.list_domains``)."""

    id: str = id_field("dom")
    domain: str
    created_at: str = Field(json_schema_extra=_INSTANT)


class DomainAnswer(_Answer):
    """``{"domain": Domain}``: ``POST /api/domains``."""

    domain: Domain


class DomainList(_Answer):
    """``GET /api/domains``: every domain (one page: ``next_cursor`` is always null)."""

    domains: list[Domain]
    next_cursor: None


class Grant(_Answer):
    """A relation granted (``authz.Grant.to_json``)."""

    id: str = id_field("rt")
    subject_id: str = Field(description="a user, team, Butler or application id")
    relation: str
    object_type: str
    object_id: str = Field(description="a mailbox or organisation id")
    created_at: str = Field(json_schema_extra=_INSTANT)


class GrantAnswer(_Answer):
    """``{"grant": Grant}``: ``POST /api/access``."""

    grant: Grant


class GrantPage(_Answer):
    """``GET /api/access``: one page, and the cursor of the next (null at the end)."""

    grants: list[Grant]
    next_cursor: str | None = id_field("rt")


class Mailbox(_Answer):
    """A mailbox (``mailboxes.mailbox_json``): its addresses oldest first, its hold window in seconds."""

    id: str = id_field("mbx")
    name: str
    addresses: list[str]
    hold_window_seconds: int
    created_at: str = Field(json_schema_extra=_INSTANT)


class MailboxAnswer(_Answer):
    """``{"mailbox": Mailbox}``."""

    mailbox: Mailbox


class MailboxPage(_Answer):
    """``GET /api/mailboxes``: one page, and the cursor of the next (null at the end)."""

    mailboxes: list[Mailbox]
    next_cursor: str | None = id_field("mbx")
