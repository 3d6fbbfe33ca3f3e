"""The web skeleton: a person signs in with a token and sees the home page through ``base.html``."""

from __future__ import annotations

from typing import Any

from tests.web.conftest import sign_in


def test_a_page_without_a_session_is_sent_to_sign_in(web: Any) -> None:
    r = web.get("/", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/signin?next=/"


def test_a_person_signed_in_with_a_token_sees_the_home_page(web: Any, installed: Any) -> None:
    r = sign_in(web, installed.token)
    assert r.status_code == 200
    assert r.url.path == "/"
    assert 'id="home-placeholder"' in r.text
    assert '<main id="main"' in r.text
    assert "/static/app.css" in r.text and "/static/app.js" in r.text


def test_the_static_files_are_served(web: Any) -> None:
    assert "mailnode.keys" in web.get("/static/app.js").text
    assert web.get("/static/app.css").status_code == 200


def test_the_api_keeps_its_json_errors(web: Any) -> None:
    r = web.get("/api/no-such-route")
    assert r.status_code == 404
    assert r.json()["error"] == "E_NO_SUCH_ROUTE"
    assert "content-security-policy" not in r.headers


def test_a_page_carries_the_security_headers(web: Any) -> None:
    r = web.get("/signin")
    assert r.headers["content-security-policy"].startswith("default-src 'self'; script-src 'self';")
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["x-content-type-options"] == "nosniff"


def test_an_unknown_page_is_a_page_with_the_refusal_in_words(web: Any) -> None:
    r = web.get("/no-such-page")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    assert "E_NO_SUCH_PAGE" in r.text and "x-frame-options" in r.headers


def test_the_metrics_route_keeps_its_json_refusal(web: Any) -> None:
    r = web.get("/metrics")
    assert r.status_code == 401
    assert r.json()["error"] == "E_UNAUTHENTICATED"
    assert "content-security-policy" not in r.headers


def test_an_unexpected_failure_on_a_page_is_a_page_naming_only_an_error_id(web: Any, installed: Any,
                                                                            monkeypatch: Any) -> None:
    from mailnode.web import home

    sign_in(web, installed.token)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("SELECT secret FROM somewhere")

    monkeypatch.setattr(home, "page", broken)
    r = web.get("/")
    assert r.status_code == 500 and r.headers["content-type"].startswith("text/html")
    assert "E_INTERNAL" in r.text and "error id err_" in r.text
    assert "SELECT secret" not in r.text
