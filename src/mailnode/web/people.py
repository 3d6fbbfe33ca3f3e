"""People and access: users, teams and memberships (``/people``), the grant matrix (``/people/access``) and
application principals with their tokens (``/people/applications``); the signed-in person's own page is
``web.people_me``, included here.

Every page reads and every form acts through the functions the API calls (``directory.people``, ``authz``,
``directory.applications``, ``directory.tokens``, ``mail.mailboxes``); a refusal is shown on the page as the
API's four-part error, with the error's status. Forms are for administrators; anyone else reads the
directory and is refused, in words, what only an administrator may do. A token is shown once, in the answer
to the form that minted it (never in a URL, never stored), with ``Cache-Control: no-store``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from mailnode import authz, budgets
from mailnode.directory import applications, people, tokens
from mailnode.errors import MailnodeError
from mailnode.mail.mailboxes import list_mailboxes
from mailnode.node import Node
from mailnode.web import people_me
from mailnode.web.people_matrix import Column, Subject, build_matrix
from mailnode.web.render import page
from mailnode.web.session import CsrfDep, PersonDep, WebPerson

router = APIRouter(include_in_schema=False)
router.include_router(people_me.router)

#: How each relation reads on the pages (the relation's own name is shown beside it). Total over
#: ``authz.RELATIONS`` (a test checks it).
RELATION_WORDS: dict[str, str] = {
    "org.admin": "administers the organisation",
    "mailbox.metadata.read": "reads subjects and senders",
    "mailbox.content.read": "reads the mail",
    "send.propose": "proposes sends",
    "approval.decide": "decides approvals",
}


def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


def collect(fetch: Callable[[str | None], list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], bool]:
    """Every item ``fetch(cursor)`` pages through (``budgets.LIST_LIMIT_MAX`` a page), up to
    ``budgets.WEB_PEOPLE_ROWS_MAX``; and whether more were left unread (the page says so)."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        batch = fetch(cursor)
        items += batch
        # A short page is the last; past the cap, at least one more exists (a full page at exactly the cap
        # asks once more, so exactly WEB_PEOPLE_ROWS_MAX items do not read as "more").
        if len(batch) < budgets.LIST_LIMIT_MAX or len(items) > budgets.WEB_PEOPLE_ROWS_MAX:
            return items[:budgets.WEB_PEOPLE_ROWS_MAX], len(items) > budgets.WEB_PEOPLE_ROWS_MAX
        cursor = str(batch[-1]["id"])


def person_label(user: dict[str, Any]) -> str:
    """How a user is named on the pages: ``Name <email>``, or the address alone (pure)."""
    return f"{user['name']} <{user['email']}>" if user.get("name") else str(user["email"])


def _act(work: Callable[[], Any], then: str, again: Callable[[MailnodeError], Response]) -> Response:
    """Run ``work`` (one service call in its own transaction); 303 to ``then`` when it succeeded, else the
    page again with the refusal (``again``)."""
    try:
        work()
    except MailnodeError as exc:
        return again(exc)
    return RedirectResponse(then, status_code=303)


# --- /people: users, teams and memberships ---------------------------------------------------------------


def _directory(request: Request, person: WebPerson, refusal: MailnodeError | None = None) -> HTMLResponse:
    node = _node(request)
    p = person.principal
    with node.read() as conn:
        users, more_users = collect(lambda c: people.list_users(conn, org_id=p.org_id, actor_id=p.principal_id,
                                                                limit=budgets.LIST_LIMIT_MAX, cursor=c))
        teams, more_teams = collect(lambda c: people.list_teams(conn, org_id=p.org_id, actor_id=p.principal_id,
                                                                limit=budgets.LIST_LIMIT_MAX, cursor=c))
        is_admin = authz.is_admin(conn, p.org_id, p.principal_id)
    names = {u["id"]: person_label(u) for u in users}
    return page(request, "people/directory.html", status_code=refusal.status if refusal else 200, area="people",
                subarea="directory", users=users, teams=teams, names=names, is_admin=is_admin,
                more_users=more_users, more_teams=more_teams, refusal=refusal,
                rows_max=budgets.WEB_PEOPLE_ROWS_MAX)


@router.get("/people", response_class=HTMLResponse)
def directory(request: Request, person: PersonDep) -> HTMLResponse:
    """The organisation's people and teams with their members; the forms to add a person, a team and a
    membership for administrators (``GET /api/users``, ``GET /api/teams``)."""
    return _directory(request, person)


@router.post("/people/users")
def add_user(request: Request, person: PersonDep, _csrf: CsrfDep, email: Annotated[str, Form()] = "",
             name: Annotated[str, Form()] = "") -> Response:
    """Add a person (``people.create_user``, as ``POST /api/users``)."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            people.create_user(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(), email=email,
                               name=name.strip())
    return _act(work, "/people", lambda exc: _directory(request, person, exc))


@router.post("/people/teams")
def add_team(request: Request, person: PersonDep, _csrf: CsrfDep, name: Annotated[str, Form()] = "") -> Response:
    """Add a team (``people.create_team``, as ``POST /api/teams``)."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            people.create_team(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(), name=name)
    return _act(work, "/people", lambda exc: _directory(request, person, exc))


@router.post("/people/teams/{team_id}/members")
def add_member(team_id: str, request: Request, person: PersonDep, _csrf: CsrfDep,
               user_id: Annotated[str, Form()] = "") -> Response:
    """Add a person to a team (``people.add_member``, as ``POST /api/teams/{id}/members``)."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            people.add_member(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(), team_id=team_id,
                              user_id=user_id)
    return _act(work, "/people", lambda exc: _directory(request, person, exc))


@router.post("/people/teams/{team_id}/members/{user_id}/remove")
def remove_member(team_id: str, user_id: str, request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """Remove a person from a team (``people.remove_member``, as ``DELETE /api/teams/{id}/members/{user}``)."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            people.remove_member(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(),
                                 team_id=team_id, user_id=user_id)
    return _act(work, "/people", lambda exc: _directory(request, person, exc))


# --- /people/access: the grant matrix ---------------------------------------------------------------------


def _access(request: Request, person: WebPerson, refusal: MailnodeError | None = None) -> HTMLResponse:
    node = _node(request)
    p = person.principal
    with node.read() as conn:
        # The administrator check comes first (``authz.list_grants``), so nobody else reads the directory here.
        grants = []
        cursor: str | None = None
        while True:
            batch = authz.list_grants(conn, org_id=p.org_id, actor_id=p.principal_id, limit=budgets.LIST_LIMIT_MAX,
                                      cursor=cursor)
            grants += batch
            if len(batch) < budgets.LIST_LIMIT_MAX:
                break
            cursor = batch[-1].id
        users, more_users = collect(lambda c: people.list_users(conn, org_id=p.org_id, actor_id=p.principal_id,
                                                                limit=budgets.LIST_LIMIT_MAX, cursor=c))
        teams, more_teams = collect(lambda c: people.list_teams(conn, org_id=p.org_id, actor_id=p.principal_id,
                                                                limit=budgets.LIST_LIMIT_MAX, cursor=c))
        boxes, more_boxes = collect(lambda c: list_mailboxes(conn, org_id=p.org_id, principal_id=p.principal_id,
                                                             limit=budgets.LIST_LIMIT_MAX, cursor=c))
        apps = applications.list_applications(conn, org_id=p.org_id, actor_id=p.principal_id)
    subjects = ([Subject(u["id"], "person", person_label(u)) for u in users]
                + [Subject(t["id"], "team", t["name"]) for t in teams]
                + [Subject(a["id"], "application", a["name"]) for a in apps])
    columns = [Column(p.org_id, "organisation", "The organisation")]
    columns += [Column(b["id"], "mailbox", b["name"]) for b in boxes]
    matrix = build_matrix(subjects, columns, grants, {t["id"]: t["members"] for t in teams})
    addresses = {b["id"]: b["addresses"] for b in boxes}
    return page(request, "people/access.html", status_code=refusal.status if refusal else 200, area="people",
                subarea="access", matrix=matrix, addresses=addresses, words=RELATION_WORDS, refusal=refusal,
                truncated=more_users or more_teams or more_boxes, rows_max=budgets.WEB_PEOPLE_ROWS_MAX,
                me=p.principal_id)


@router.get("/people/access", response_class=HTMLResponse)
def access(request: Request, person: PersonDep) -> HTMLResponse:
    """The grant matrix (administrators; ``GET /api/access``): who holds which relation on the organisation
    and each mailbox, directly or through a team, with grant and revoke in each cell."""
    return _access(request, person)


@router.post("/people/access/grant")
def grant(request: Request, person: PersonDep, _csrf: CsrfDep, subject_id: Annotated[str, Form()] = "",
          relation: Annotated[str, Form()] = "", object_id: Annotated[str, Form()] = "") -> Response:
    """Grant a relation (``authz.grant``, as ``POST /api/access``); back to the matrix."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            authz.grant(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(), subject_id=subject_id,
                        relation=relation, object_id=object_id)
    return _act(work, "/people/access", lambda exc: _access(request, person, exc))


@router.post("/people/access/{grant_id}/revoke")
def revoke(grant_id: str, request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """Revoke a grant (``authz.revoke``, as ``DELETE /api/access/{id}``); back to the matrix."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            authz.revoke(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(), grant_id=grant_id)
    return _act(work, "/people/access", lambda exc: _access(request, person, exc))


# --- /people/applications: application principals and their tokens -------------------------------------


def _applications(request: Request, person: WebPerson, refusal: MailnodeError | None = None,
                  minted: dict[str, str] | None = None) -> HTMLResponse:
    node = _node(request)
    p = person.principal
    with node.read() as conn:
        apps = applications.list_applications(conn, org_id=p.org_id, actor_id=p.principal_id)
    response = page(request, "people/applications.html", status_code=refusal.status if refusal else 200,
                    area="people", subarea="applications", apps=apps, refusal=refusal, minted=minted)
    if minted is not None:
        response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/people/applications", response_class=HTMLResponse)
def applications_page(request: Request, person: PersonDep) -> HTMLResponse:
    """Application principals with their tokens' labels and states, never a token (administrators;
    ``GET /api/apps``); create one, mint a replacement token, revoke a token."""
    return _applications(request, person)


@router.post("/people/applications", response_class=HTMLResponse)
def create_application(request: Request, person: PersonDep, _csrf: CsrfDep,
                       name: Annotated[str, Form()] = "") -> HTMLResponse:
    """Create an application (``applications.create_application``, as ``POST /api/apps``); the answer shows
    its first token, once."""
    node, p = _node(request), person.principal
    try:
        with node.begin() as conn:
            made = applications.create_application(conn, org_id=p.org_id, actor_id=p.principal_id,
                                                   at=node.clock.now(), name=name)
    except MailnodeError as exc:
        return _applications(request, person, exc)
    return _applications(request, person, minted={"for": made["application"]["name"], "token": made["token"],
                                                  "token_id": made["application"]["token_id"]})


@router.post("/people/applications/{app_id}/tokens", response_class=HTMLResponse)
def mint_application_token(app_id: str, request: Request, person: PersonDep, _csrf: CsrfDep) -> HTMLResponse:
    """A new token for an application (``applications.mint_application_token``, as
    ``POST /api/apps/{id}/tokens``), shown once; the old ones stay valid until revoked."""
    node, p = _node(request), person.principal
    try:
        with node.begin() as conn:
            made = applications.mint_application_token(conn, org_id=p.org_id, actor_id=p.principal_id,
                                                       at=node.clock.now(), ref=app_id)
    except MailnodeError as exc:
        return _applications(request, person, exc)
    return _applications(request, person, minted={"for": made["application"]["name"], "token": made["token"],
                                                  "token_id": made["token_id"]})


@router.post("/people/applications/tokens/{token_id}/revoke")
def revoke_application_token(token_id: str, request: Request, person: PersonDep, _csrf: CsrfDep) -> Response:
    """Revoke an application's token and those minted from it (``tokens.revoke_token``, as
    ``DELETE /api/tokens/{id}``)."""
    node, p = _node(request), person.principal

    def work() -> None:
        with node.begin() as conn:
            tokens.revoke_token(conn, org_id=p.org_id, actor_id=p.principal_id, at=node.clock.now(),
                                token_id=token_id)
    return _act(work, "/people/applications", lambda exc: _applications(request, person, exc))
