"""Signing in and out of the web inbox over HTTP (the ASGI client): tokens, sessions, CSRF, framing, limits."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from mailnode import budgets
from mailnode.directory.tokens import create_token
from tests.conftest import bearer
from tests.web.conftest import csrf_of, sign_in


def _new_client(web: Any) -> TestClient:
    return TestClient(web.app, raise_server_exceptions=False)


def test_the_session_cookie_is_httponly_lax_and_holds_no_token(web: Any, installed: Any) -> None:
    r = sign_in(web, installed.token)
    set_cookie = r.history[0].headers["set-cookie"]
    assert set_cookie.startswith("mailnode_session=")
    assert "HttpOnly" in set_cookie and "SameSite=lax" in set_cookie
    assert "Secure" not in set_cookie
    assert installed.token not in set_cookie


def test_the_session_cookie_is_secure_over_tls(web: Any, installed: Any) -> None:
    tls = TestClient(web.app, base_url="https://testserver", raise_server_exceptions=False)
    r = sign_in(tls, installed.token)
    assert r.status_code == 200 and 'id="home-placeholder"' in r.text
    assert "Secure" in r.history[0].headers["set-cookie"]


def test_a_wrong_token_is_refused_on_the_signin_page_in_words(web: Any) -> None:
    r = sign_in(web, "mn_not-a-token")
    assert r.status_code == 401
    assert "E_UNAUTHENTICATED" in r.text and "The token is not known to this node." in r.text
    assert web.get("/", follow_redirects=False).status_code == 303


def test_an_applications_token_opens_no_session(web: Any, installed: Any) -> None:
    made = web.post("/api/apps", json={"name": "billing"}, headers=bearer(installed.token))
    r = sign_in(web, made.json()["token"])
    assert r.status_code == 403 and "E_SIGNIN_NOT_A_PERSON" in r.text
    assert web.get("/", follow_redirects=False).status_code == 303


def test_a_post_without_the_csrf_token_is_refused(web: Any, installed: Any) -> None:
    sign_in(web, installed.token)
    r = web.post("/signout", follow_redirects=False)
    assert r.status_code == 403
    assert "E_CSRF_INVALID" in r.text and "CSRF token" in r.text
    # The session is still there: the forged sign-out did nothing.
    assert web.get("/").status_code == 200


def test_a_post_with_another_sessions_csrf_token_is_refused(web: Any, installed: Any) -> None:
    other = _new_client(web)
    other_token = csrf_of(sign_in(other, installed.token).text)
    sign_in(web, installed.token)
    r = web.post("/signout", data={"csrf_token": other_token}, follow_redirects=False)
    assert r.status_code == 403 and "E_CSRF_INVALID" in r.text


def test_the_signin_form_itself_needs_its_csrf_token(web: Any, installed: Any) -> None:
    r = web.post("/signin/token", data={"token": installed.token}, follow_redirects=False)
    assert r.status_code == 403 and "E_CSRF_INVALID" in r.text
    assert "mailnode_session" not in r.headers.get("set-cookie", "")


def test_a_page_refuses_to_be_framed_by_anyone(web: Any, installed: Any) -> None:
    for r in (web.get("/signin"), sign_in(web, installed.token)):
        assert r.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def test_a_session_cookie_reused_after_sign_out_is_refused(web: Any, installed: Any) -> None:
    home = sign_in(web, installed.token)
    stolen = web.cookies.get("mailnode_session")
    out = web.post("/signout", data={"csrf_token": csrf_of(home.text)}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/signin?next=/"
    replay = _new_client(web)
    replay.cookies.set("mailnode_session", stolen)
    r = replay.get("/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/signin?next=/"


def test_sign_out_everywhere_ends_the_other_sessions(web: Any, installed: Any) -> None:
    laptop = _new_client(web)
    sign_in(laptop, installed.token)
    home = sign_in(web, installed.token)
    r = web.post("/signout/everywhere", data={"csrf_token": csrf_of(home.text)}, follow_redirects=False)
    assert r.status_code == 303
    assert laptop.get("/", follow_redirects=False).status_code == 303
    assert web.get("/", follow_redirects=False).status_code == 303


def test_sign_out_ends_only_this_session(web: Any, installed: Any) -> None:
    laptop = _new_client(web)
    sign_in(laptop, installed.token)
    home = sign_in(web, installed.token)
    web.post("/signout", data={"csrf_token": csrf_of(home.text)})
    assert laptop.get("/").status_code == 200


def test_revoking_the_token_ends_its_sessions(web: Any, installed: Any) -> None:
    node = web.app.state.node
    with node.begin() as conn:
        tid, token = create_token(conn, org_id=installed.org_id, principal_id=installed.user_id,
                                  at=node.clock.now(), actor_id=None, label="laptop")
    sign_in(web, token)
    assert web.get("/").status_code == 200
    r = web.delete(f"/api/tokens/{tid}", headers=bearer(installed.token))
    assert r.status_code < 300, r.text
    assert web.get("/", follow_redirects=False).status_code == 303


def test_an_idle_session_ends(web: Any, installed: Any, clock: Any) -> None:
    sign_in(web, installed.token)
    clock.advance(budgets.WEB_SESSION_IDLE_SECONDS - 1)
    assert web.get("/").status_code == 200
    clock.advance(budgets.WEB_SESSION_IDLE_SECONDS - 1)
    assert web.get("/").status_code == 200
    clock.advance(budgets.WEB_SESSION_IDLE_SECONDS)
    assert web.get("/", follow_redirects=False).status_code == 303


def test_a_busy_session_still_ends_at_its_absolute_lifetime(web: Any, installed: Any, clock: Any) -> None:
    sign_in(web, installed.token)
    step = budgets.WEB_SESSION_IDLE_SECONDS // 2
    for _ in range(budgets.WEB_SESSION_ABSOLUTE_SECONDS // step - 1):
        clock.advance(step)
        assert web.get("/").status_code == 200
    clock.advance(step)
    assert web.get("/", follow_redirects=False).status_code == 303


def test_signing_in_and_out_is_audited(web: Any, installed: Any) -> None:
    home = sign_in(web, installed.token)
    web.post("/signout", data={"csrf_token": csrf_of(home.text)})
    h = bearer(installed.token)
    (entry_in,) = web.get("/api/audit", params={"action": "web.signed_in"}, headers=h).json()["entries"]
    (entry_out,) = web.get("/api/audit", params={"action": "web.signed_out"}, headers=h).json()["entries"]
    assert entry_in["actor_id"] == installed.user_id and json.loads(entry_in["detail"])["method"] == "token"
    assert entry_out["subject"] == entry_in["subject"]
    assert json.loads(entry_out["detail"]) == {"scope": "this_session"}


def test_too_many_failed_tokens_from_one_client_are_refused_naming_the_limit(web: Any, installed: Any) -> None:
    for _ in range(budgets.WEB_SIGNIN_ATTEMPTS_PER_CLIENT):
        assert sign_in(web, "mn_guess").status_code == 401
    r = sign_in(web, installed.token)
    assert r.status_code == 429
    assert "E_SIGNIN_RATE_LIMITED" in r.text
    assert f"WEB_SIGNIN_ATTEMPTS_PER_CLIENT is {budgets.WEB_SIGNIN_ATTEMPTS_PER_CLIENT}" in r.text
    assert web.get("/", follow_redirects=False).status_code == 303


def test_the_next_page_is_kept_through_sign_in_and_never_leaves_the_node(web: Any, installed: Any) -> None:
    r = web.get("/signin", params={"next": "//evil.test/x"})
    assert 'name="next" value="/"' in r.text
    r = web.post("/signin/token", data={"token": installed.token, "next": "https://evil.test/",
                                        "csrf_token": csrf_of(r.text)}, follow_redirects=False)
    assert r.headers["location"] == "/"


def test_signing_in_again_in_the_same_browser_ends_the_earlier_session(web: Any, installed: Any) -> None:
    sign_in(web, installed.token)
    earlier = web.cookies.get("mailnode_session")
    sign_in(web, installed.token)
    assert web.cookies.get("mailnode_session") != earlier
    replay = _new_client(web)
    replay.cookies.set("mailnode_session", earlier)
    assert replay.get("/", follow_redirects=False).status_code == 303


def test_attempts_leave_the_window(web: Any, installed: Any, clock: Any) -> None:
    for _ in range(budgets.WEB_SIGNIN_ATTEMPTS_PER_CLIENT):
        sign_in(web, "mn_guess")
    assert sign_in(web, installed.token).status_code == 429
    clock.advance(budgets.WEB_SIGNIN_WINDOW_SECONDS)
    assert sign_in(web, installed.token).status_code == 200
