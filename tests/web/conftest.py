"""Fixtures of the web inbox's HTTP-level tests: the ASGI client over a node, and signing in."""

from __future__ import annotations

import re
from typing import Any

import pytest

#: The CSRF token a page carries in ``<meta name="csrf-token" content="...">``.
_META_CSRF = re.compile(r'<meta name="csrf-token" content="([^"]*)">')


def csrf_of(html: str) -> str:
    """The CSRF token of a rendered page."""
    found = _META_CSRF.search(html)
    assert found, "the page carries no csrf-token meta"
    return found.group(1)


def sign_in(client: Any, token: str, next_path: str = "/") -> Any:
    """Sign ``client`` in with ``token`` through the sign-in page; the final response (redirects followed)."""
    form = client.get("/signin")
    assert form.status_code == 200, form.text
    return client.post("/signin/token", data={"token": token, "next": next_path,
                                              "csrf_token": csrf_of(form.text)})


@pytest.fixture
def web(api: Any, installed: Any) -> Any:
    """The ASGI client over an initialised node (not signed in)."""
    return api
