"""Routes for people, teams, domains, access grants and tokens (``/api/users``, ``/api/teams`` ...)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode import authz
from mailnode.api.deps import CallerDep, GrantPageDep, NodeDep, TeamPageDep, UserPageDep, id_filter, paged
from mailnode.api.directory_models import (
    DomainAnswer,
    DomainList,
    GrantAnswer,
    GrantPage,
    TeamAnswer,
    TeamPage,
    UserAnswer,
    UserPage,
)
from mailnode.api.models import Strict
from mailnode.api.principal_models import GrantRevoked, MeAnswer, MintedTokenAnswer, TokenList, TokenRevoked
from mailnode.api.responses import GrantId, TeamId, TokenId, UserId, errors
from mailnode.codes import verification_io
from mailnode.directory import domains, people, tokens

router = APIRouter(prefix="/api", tags=["directory"])


class UserIn(Strict):
    """Body of POST /api/users."""

    email: str
    name: str = ""


class TeamIn(Strict):
    """Body of POST /api/teams."""

    name: str


class MemberIn(Strict):
    """Body of POST /api/teams/{id}/members."""

    user_id: str


class DomainIn(Strict):
    """Body of POST /api/domains."""

    domain: str


class GrantIn(Strict):
    """Body of POST /api/access."""

    subject_id: str
    relation: str
    object_id: str


class TokenIn(Strict):
    """Body of POST /api/tokens."""

    label: str


@router.get("/me", response_model=MeAnswer)
def me(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Who the token belongs to, whether they administer the organisation, and their contact address
    (``contact_email``, ``contact_email_verified``: notices go there; unverified may reach nobody)."""
    with node.read() as conn:
        return {"me": {"id": caller.principal_id, "org_id": caller.org_id,
                       "is_admin": authz.is_admin(conn, caller.org_id, caller.principal_id),
                       **verification_io.contact_json(conn, caller.principal_id)}}


@router.post("/users", status_code=201, response_model=UserAnswer, responses=errors(403, 409))
def create_user(body: UserIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Create a user (administrators)."""
    with node.begin() as conn:
        return {"user": people.create_user(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                           at=node.clock.now(), email=body.email, name=body.name)}


@router.get("/users", response_model=UserPage, responses=errors(403))
def list_users(node: NodeDep, caller: CallerDep, page: UserPageDep) -> dict[str, Any]:
    """The organisation's users."""
    with node.read() as conn:
        return paged("users", people.list_users(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                                limit=page.limit, cursor=page.cursor), page)


@router.post("/teams", status_code=201, response_model=TeamAnswer, responses=errors(403, 409))
def create_team(body: TeamIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Create a team (administrators)."""
    with node.begin() as conn:
        return {"team": people.create_team(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                           at=node.clock.now(), name=body.name)}


@router.get("/teams", response_model=TeamPage, responses=errors(403))
def list_teams(node: NodeDep, caller: CallerDep, page: TeamPageDep) -> dict[str, Any]:
    """The organisation's teams with their members."""
    with node.read() as conn:
        return paged("teams", people.list_teams(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                                limit=page.limit, cursor=page.cursor), page)


@router.post("/teams/{team_id}/members", response_model=TeamAnswer, responses=errors(403))
def add_member(team_id: TeamId, body: MemberIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Add a person to a team (administrators)."""
    with node.begin() as conn:
        return {"team": people.add_member(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                          at=node.clock.now(), team_id=team_id, user_id=body.user_id)}


@router.delete("/teams/{team_id}/members/{user_id}", response_model=TeamAnswer, responses=errors(403))
def remove_member(team_id: TeamId, user_id: UserId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Remove a person from a team (administrators)."""
    with node.begin() as conn:
        return {"team": people.remove_member(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                             at=node.clock.now(), team_id=team_id, user_id=user_id)}


@router.post("/domains", status_code=201, response_model=DomainAnswer, responses=errors(403, 409))
def add_domain(body: DomainIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Add a domain to the organisation (administrators)."""
    with node.begin() as conn:
        return {"domain": domains.add_domain(conn, org_id=caller.org_id, actor_id=caller.principal_id,
                                             at=node.clock.now(), domain=body.domain)}


@router.get("/domains", response_model=DomainList)
def list_domains(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The organisation's domains."""
    with node.read() as conn:
        return {"domains": domains.list_domains(conn, caller.org_id), "next_cursor": None}


@router.post("/access", status_code=201, response_model=GrantAnswer, responses=errors(403))
def grant(body: GrantIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Grant a relation (administrators; idempotent)."""
    with node.begin() as conn:
        g = authz.grant(conn, org_id=caller.org_id, actor_id=caller.principal_id, at=node.clock.now(),
                        subject_id=body.subject_id, relation=body.relation, object_id=body.object_id)
        return {"grant": g.to_json()}


@router.delete("/access/{grant_id}", response_model=GrantRevoked, responses=errors(403))
def revoke(grant_id: GrantId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Revoke a grant (administrators)."""
    with node.begin() as conn:
        authz.revoke(conn, org_id=caller.org_id, actor_id=caller.principal_id, at=node.clock.now(),
                     grant_id=grant_id)
        return {"revoked": grant_id}


@router.get("/access", response_model=GrantPage, responses=errors(403))
def list_access(node: NodeDep, caller: CallerDep, page: GrantPageDep, subject_id: str | None = None,
                object_id: str | None = None) -> dict[str, Any]:
    """Grants (administrators); ``subject_id`` and ``object_id`` filter (a malformed one is 422 naming it)."""
    subject_id = id_filter(subject_id, "subject_id", "usr", "tm", "btl", "app")
    object_id = id_filter(object_id, "object_id", "mbx", "org")
    with node.read() as conn:
        grants = authz.list_grants(conn, org_id=caller.org_id, actor_id=caller.principal_id, limit=page.limit,
                                   cursor=page.cursor, subject_id=subject_id, object_id=object_id)
        return paged("grants", [g.to_json() for g in grants], page)


@router.post("/tokens", status_code=201, response_model=MintedTokenAnswer, responses=errors(403))
def create_token(body: TokenIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """A new token for the caller, revoked with the caller's token; the plaintext is in this answer only.
    An application's token answers 403 ``E_APPLICATION_CANNOT_MINT`` (``tokens.mint_own_token``)."""
    with node.begin() as conn:
        return {"token": tokens.mint_own_token(conn, caller, at=node.clock.now(), label=body.label)}


@router.get("/tokens", response_model=TokenList)
def list_tokens(node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """The caller's tokens (never their plaintext)."""
    with node.read() as conn:
        return {"tokens": tokens.list_tokens(conn, org_id=caller.org_id, principal_id=caller.principal_id),
                "next_cursor": None}


@router.delete("/tokens/{token_id}", response_model=TokenRevoked, responses=errors(403))
def revoke_token(token_id: TokenId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Revoke a token and every token minted from it (your own, or any as an administrator);
    ``{"revoked": id, "also_revoked": [ids of the tokens minted from it, at any depth]}``."""
    with node.begin() as conn:
        ids = tokens.revoke_token(conn, org_id=caller.org_id, actor_id=caller.principal_id, at=node.clock.now(),
                                  token_id=token_id)
        return {"revoked": token_id, "also_revoked": [i for i in ids if i != token_id]}



