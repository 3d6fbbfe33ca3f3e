"""The People and access pages over HTTP (``web.people``, ``web.people_me``): each page, each form, who may do
what, and every refusal shown as the API's four-part error with its status."""

from __future__ import annotations

import html
import re
from typing import Any

from fastapi.testclient import TestClient

from tests.search.conftest import World
from tests.web.conftest import csrf_of, sign_in


def signed_in(world: World, token: str | None = None) -> Any:
    """The world's client signed in (as the administrator by default); the home page's response."""
    r = sign_in(world.api, token or world.installed.token)
    assert r.status_code == 200, r.text
    return r


def token_of(headers: dict[str, str]) -> str:
    """The plaintext token of an Authorization header."""
    return headers["Authorization"].removeprefix("Bearer ")


def post(world: World, path: str, page_path: str, **data: Any) -> Any:
    """Post ``data`` to ``path`` with the CSRF token of ``page_path``; the final answer (redirects followed)."""
    page = world.api.get(page_path)
    assert page.status_code == 200, page.text
    return world.api.post(path, data={"csrf_token": csrf_of(page.text), **data})


def text(r: Any) -> str:
    """A page's text with its entities decoded."""
    return html.unescape(r.text)


def shown_token(r: Any) -> str:
    """The token a page shows once."""
    found = re.search(r'id="token-once-value"[^>]*value="(mn_[^"]+)"', r.text)
    assert found, r.text
    return found.group(1)


# --- /people -----------------------------------------------------------------------------------------------


def test_the_directory_lists_people_and_teams_and_an_administrator_adds_each(world: World) -> None:
    signed_in(world)
    page = world.api.get("/people")
    assert page.status_code == 200 and "alex@example.test" in page.text
    assert 'aria-current="page">People and teams' in page.text and 'id="add-user"' in page.text
    r = post(world, "/people/users", "/people", email="Nina@Example.test", name="Nina Kowalski")
    assert r.status_code == 200 and r.url.path == "/people"
    assert "Nina Kowalski" in r.text and "Nina@example.test" in r.text
    r = post(world, "/people/teams", "/people", name="support desk")
    assert r.status_code == 200 and "support desk" in r.text
    team_id = re.search(r'id="team-(tm_[^"]+)"', r.text).group(1)  # type: ignore[union-attr]
    nina = re.search(r'id="user-(usr_[^"]+)"><td>Nina', r.text).group(1)  # type: ignore[union-attr]
    r = post(world, f"/people/teams/{team_id}/members", "/people", user_id=nina)
    members = re.search(rf'id="team-{team_id}".*?</article>', r.text, re.DOTALL).group(0)  # type: ignore[union-attr]
    assert "Nina Kowalski &lt;Nina@example.test&gt;" in members
    assert world.api.get("/api/teams", headers=world.admin).json()["teams"][0]["members"] == [nina]
    r = post(world, f"/people/teams/{team_id}/members/{nina}/remove", "/people")
    assert world.api.get("/api/teams", headers=world.admin).json()["teams"][0]["members"] == []


def test_a_second_person_with_the_same_address_is_refused_in_words(world: World) -> None:
    signed_in(world)
    r = post(world, "/people/users", "/people", email="ALEX@example.test")
    assert r.status_code == 409
    assert 'id="refusal-code"><code>E_USER_EXISTS</code>' in r.text and "already exists" in r.text
    assert len(world.api.get("/api/users", headers=world.admin).json()["users"]) == 1


def test_an_empty_team_name_is_refused(world: World) -> None:
    signed_in(world)
    r = post(world, "/people/teams", "/people", name="  ")
    assert r.status_code == 422 and "E_TEAM_NEEDS_A_NAME" in r.text


def test_someone_who_is_not_an_administrator_reads_the_directory_and_may_change_nothing(world: World) -> None:
    _, h = world.person("reader@example.test")
    signed_in(world, token_of(h))
    page = world.api.get("/people")
    assert page.status_code == 200 and "alex@example.test" in page.text and 'id="read-only"' in page.text
    assert 'id="add-user"' not in page.text and 'id="add-team"' not in page.text and "Remove" not in page.text
    r = world.api.post("/people/users", data={"csrf_token": csrf_of(page.text), "email": "x@example.test"})
    assert r.status_code == 403 and "E_NOT_AN_ADMINISTRATOR" in r.text and "alex@example.test" in r.text
    assert [u["email"] for u in world.api.get("/api/users", headers=world.admin).json()["users"]] == [
        "alex@example.test", "reader@example.test"]


def test_a_form_without_the_csrf_token_is_refused_and_writes_nothing(world: World) -> None:
    signed_in(world)
    r = world.api.post("/people/users", data={"email": "x@example.test"})
    assert r.status_code == 403 and "E_CSRF_INVALID" in r.text
    assert len(world.api.get("/api/users", headers=world.admin).json()["users"]) == 1


def test_the_pages_need_a_session(world: World) -> None:
    for path in ("/people", "/people/access", "/people/applications", "/people/me"):
        r = world.api.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/signin?next={path}"


# --- /people/access ----------------------------------------------------------------------------------------


def test_a_grant_given_in_the_matrix_shows_the_mailbox_on_the_grantees_next_page(world: World) -> None:
    mbx = world.installed.mailbox_id
    uid, h = world.person("olga@example.test")
    signed_in(world)
    matrix = world.api.get("/people/access")
    assert matrix.status_code == 200
    assert f'id="cell-{uid}-{mbx}"' in matrix.text and f'id="admin-{world.installed.user_id}"' in matrix.text
    r = post(world, "/people/access/grant", "/people/access", subject_id=uid, relation="mailbox.content.read",
             object_id=mbx)
    assert r.status_code == 200 and r.url.path == "/people/access"
    cell = re.search(rf'id="cell-{uid}-{mbx}".*?</td>', r.text, re.DOTALL).group(0)  # type: ignore[union-attr]
    assert "<code>mailbox.content.read</code>" in cell and "directly" in cell and "Revoke" in cell
    # The grantee, in their own browser, sees the mailbox on their next page.
    olga = TestClient(world.api.app)
    home = sign_in(olga, token_of(h))
    assert home.status_code == 200 and 'id="no-mailbox"' not in home.text
    assert '<h1 id="mailbox-name">Support</h1>' in home.text
    # Revoking it in the matrix takes it away on their next page.
    grant_id = re.search(r'action="/people/access/(rt_[^"]+)/revoke"', cell).group(1)  # type: ignore[union-attr]
    r = post(world, f"/people/access/{grant_id}/revoke", "/people/access")
    assert r.status_code == 200 and "mailbox.content.read" not in re.search(
        rf'id="cell-{uid}-{mbx}".*?</td>', r.text, re.DOTALL).group(0).split("<form")[0]  # type: ignore[union-attr]
    assert 'id="no-mailbox"' in olga.get("/").text


def test_a_grant_through_a_team_is_shown_on_the_members_row_with_the_team(world: World) -> None:
    mbx = world.installed.mailbox_id
    uid, _ = world.person("pia@example.test")
    team = world.api.post("/api/teams", json={"name": "night shift"}, headers=world.admin).json()["team"]["id"]
    world.api.post(f"/api/teams/{team}/members", json={"user_id": uid}, headers=world.admin)
    world.api.post("/api/access", json={"subject_id": team, "relation": "send.propose", "object_id": mbx},
                   headers=world.admin)
    signed_in(world)
    page = world.api.get("/people/access")
    member = re.search(rf'id="cell-{uid}-{mbx}".*?</td>', page.text, re.DOTALL).group(0)  # type: ignore[union-attr]
    assert "<code>send.propose</code>" in member and "through the team night shift" in member
    assert "/revoke" not in member  # revoked on the team's row
    on_team = re.search(rf'id="cell-{team}-{mbx}".*?</td>', page.text, re.DOTALL).group(0)  # type: ignore[union-attr]
    assert "<code>send.propose</code>" in on_team and "directly" in on_team and "/revoke" in on_team


def test_the_matrix_says_where_an_administrator_may_not_read_a_mailbox(world: World) -> None:
    r = world.api.post("/api/mailboxes", json={"name": "Legal", "addresses": ["legal@example.test"]},
                       headers=world.admin)
    legal = r.json()["mailbox"]["id"]
    admin = world.installed.user_id
    signed_in(world)
    page = world.api.get("/people/access")
    assert f'id="noread-{admin}-{legal}"' in page.text and "may not read this mailbox" in page.text
    assert f'id="noread-{admin}-{world.installed.mailbox_id}"' not in page.text  # init let them read Support
    assert 'id="no-mail-note"' in page.text and "legal@example.test" in page.text
    me = world.api.get("/people/me")
    legal_item = re.search(rf'id="box-{legal}".*?</li>', me.text, re.DOTALL).group(0)  # type: ignore[union-attr]
    assert "listed without its contents" in legal_item and "href" not in legal_item
    assert f'href="/mailboxes/{world.installed.mailbox_id}"' in me.text and 'id="admin-note"' in me.text


def test_an_unknown_relation_is_refused_on_the_matrix(world: World) -> None:
    uid, _ = world.person("q@example.test")
    signed_in(world)
    r = post(world, "/people/access/grant", "/people/access", subject_id=uid, relation="mailbox.everything",
             object_id=world.installed.mailbox_id)
    assert r.status_code == 422 and "E_RELATION_UNKNOWN" in r.text and 'id="matrix"' in r.text


def test_the_matrix_is_for_administrators_only(world: World) -> None:
    uid, h = world.person("r@example.test", ("mailbox.content.read", world.installed.mailbox_id))
    signed_in(world, token_of(h))
    page = world.api.get("/people/access")
    assert page.status_code == 403 and "E_NOT_AN_ADMINISTRATOR" in page.text and 'id="matrix"' not in page.text
    form = world.api.get("/people")
    r = world.api.post("/people/access/grant", data={"csrf_token": csrf_of(form.text), "subject_id": uid,
                                                     "relation": "org.admin", "object_id": world.installed.org_id})
    assert r.status_code == 403 and "E_NOT_AN_ADMINISTRATOR" in r.text
    assert world.api.get("/api/me", headers=h).json()["me"]["is_admin"] is False


# --- /people/applications ----------------------------------------------------------------------------------


def test_an_application_is_created_with_its_token_shown_once(world: World) -> None:
    signed_in(world)
    r = post(world, "/people/applications", "/people/applications", name="billing")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    assert "shown only this once" in r.text
    token = shown_token(r)
    assert world.api.get("/api/me", headers={"Authorization": f"Bearer {token}"}).json()["me"]["id"].startswith("app_")
    again = world.api.get("/people/applications")
    assert token not in again.text and "billing" in again.text and 'id="token-once"' not in again.text
    app_id = re.search(r'id="app-(app_[^"]+)"', again.text).group(1)  # type: ignore[union-attr]
    second = post(world, f"/people/applications/{app_id}/tokens", "/people/applications")
    token2 = shown_token(second)
    assert token2 != token and second.text.count("valid</td>") == 2
    first_id = re.search(r'id="token-(tok_[^"]+)"', second.text).group(1)  # type: ignore[union-attr]
    r = post(world, f"/people/applications/tokens/{first_id}/revoke", "/people/applications")
    assert r.status_code == 200 and "revoked " in r.text
    assert world.api.get("/api/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    assert world.api.get("/api/me", headers={"Authorization": f"Bearer {token2}"}).status_code == 200


def test_a_taken_application_name_is_refused(world: World) -> None:
    signed_in(world)
    post(world, "/people/applications", "/people/applications", name="billing")
    r = post(world, "/people/applications", "/people/applications", name="billing")
    assert r.status_code == 409 and "E_APP_EXISTS" in r.text and 'id="token-once"' not in r.text


def test_applications_are_for_administrators_only(world: World) -> None:
    _, h = world.person("s@example.test")
    signed_in(world, token_of(h))
    assert "E_NOT_AN_ADMINISTRATOR" in world.api.get("/people/applications").text
    form = world.api.get("/people")
    r = world.api.post("/people/applications", data={"csrf_token": csrf_of(form.text), "name": "mine"})
    assert r.status_code == 403 and "E_NOT_AN_ADMINISTRATOR" in r.text and "mn_" not in r.text


# --- /people/me --------------------------------------------------------------------------------------------


def test_my_token_is_minted_shown_once_and_revoked(world: World) -> None:
    signed_in(world)
    page = world.api.get("/people/me")
    assert page.status_code == 200 and 'id="this-session"' in page.text and "opened this session" in page.text
    r = post(world, "/people/me/tokens", "/people/me", label="laptop")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store" and "shown only this once" in r.text
    token = shown_token(r)
    assert world.api.get("/api/me", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    again = world.api.get("/people/me")
    assert token not in again.text and "laptop" in again.text
    tid = re.search(r'id="token-(tok_[^"]+)"><td><code>[^<]+</code></td>\s*<td>laptop', again.text).group(1)  # type: ignore[union-attr]
    r = post(world, f"/people/me/tokens/{tid}/revoke", "/people/me")
    assert r.status_code == 200 and r.url.path == "/people/me"
    assert world.api.get("/api/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_a_token_without_a_label_is_refused(world: World) -> None:
    signed_in(world)
    r = post(world, "/people/me/tokens", "/people/me", label=" ")
    assert r.status_code == 422 and "E_TOKEN_NEEDS_A_LABEL" in r.text and 'id="token-once"' not in r.text


def test_someone_elses_token_cannot_be_revoked_from_my_page(world: World) -> None:
    _, h = world.person("t@example.test")
    signed_in(world, token_of(h))
    theirs = world.api.get("/api/tokens", headers=world.admin).json()["tokens"][0]["id"]
    r = post(world, f"/people/me/tokens/{theirs}/revoke", "/people/me")
    assert r.status_code == 404 and "E_NO_SUCH_TOKEN" in r.text
    assert world.api.get("/api/me", headers=world.admin).status_code == 200


def test_ending_my_other_sessions_signs_out_the_other_browsers_only(world: World) -> None:
    other = TestClient(world.api.app)
    assert sign_in(other, world.installed.token).status_code == 200
    signed_in(world)
    page = world.api.get("/people/me")
    assert text(page).count("End (signs you out)") == 1 and page.text.count('id="session-wss_') == 2
    r = post(world, "/people/me/sessions/end-others", "/people/me")
    assert r.status_code == 200 and r.text.count('id="session-wss_') == 1 and 'id="end-others"' not in r.text
    assert other.get("/people/me", follow_redirects=False).status_code == 303
    assert world.api.get("/people/me").status_code == 200


def test_one_other_session_is_ended_by_its_button(world: World) -> None:
    other = TestClient(world.api.app)
    sign_in(other, world.installed.token)
    signed_in(world)
    page = world.api.get("/people/me")
    ids = re.findall(r'id="session-(wss_[^"]+)"', page.text)
    theirs = next(i for i in ids if f'id="session-{i}"><td><code>{i}</code> <span' not in page.text)
    r = post(world, f"/people/me/sessions/{theirs}/end", "/people/me")
    assert r.status_code == 200 and theirs not in r.text
    assert other.get("/people/me", follow_redirects=False).status_code == 303
    r = post(world, f"/people/me/sessions/{theirs}/end", "/people/me")
    assert r.status_code == 404 and "E_NO_SUCH_SESSION" in r.text


def test_a_session_opened_with_a_token_ends_when_that_token_is_revoked_from_the_page(world: World) -> None:
    _, h = world.person("u@example.test")
    signed_in(world, token_of(h))
    page = world.api.get("/people/me")
    tid = re.search(r'id="token-(tok_[^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    r = world.api.post(f"/people/me/tokens/{tid}/revoke", data={"csrf_token": csrf_of(page.text)},
                       follow_redirects=False)
    assert r.status_code == 303
    assert world.api.get("/people/me", follow_redirects=False).headers["location"].startswith("/signin")


def test_my_page_without_a_contact_address_says_what_that_costs(world: World) -> None:
    signed_in(world)
    page = text(world.api.get("/people/me"))
    assert "No contact address." in page and "cannot sign in with a mailed code" in page
    assert 'id="verify-form"' not in page


def test_only_sessions_that_still_open_pages_are_listed(world: World) -> None:
    from datetime import timedelta

    from mailnode import budgets
    from mailnode.directory import sessions

    signed_in(world)
    node, org, me = world.node, world.installed.org_id, world.installed.user_id
    now = node.clock.now()
    with node.read() as conn:
        assert len(sessions.list_open(conn, org_id=org, principal_id=me, at=now)) == 1
        idle = now + timedelta(seconds=budgets.WEB_SESSION_IDLE_SECONDS)
        assert sessions.list_open(conn, org_id=org, principal_id=me, at=idle) == []
        assert sessions.list_open(conn, org_id=org, principal_id="usr_someone_else", at=now) == []
