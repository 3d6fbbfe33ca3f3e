"""``POST /api/apps`` attacked: names that forge lines or cannot be stored (NUL on PostgreSQL), junk bodies,
non-administrators (spec/transactional.md §6). Every refusal is a stable code and writes no application."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode.schema.directory_contacts import applications
from tests.conftest import bearer

from .conftest import Org


def _apps(org: Org) -> int:
    with org.node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(applications)).scalar_one())


@pytest.mark.parametrize("name", ["two\r\nlines", "nul\x00byte", "tab\tseparated", "escape\x1b[31m", "next\x85line"])
def test_a_name_with_a_control_character_or_line_break_is_refused_and_creates_nothing(
        api: Any, org: Org, name: str) -> None:
    r = api.post("/api/apps", json={"name": name}, headers=bearer(org.installed.token))
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "E_APP_NAME_MALFORMED" and body["why"] and body["fix"]
    assert _apps(org) == 0


@pytest.mark.parametrize(("body", "code"), [
    ({}, "E_REQUEST_INVALID"),
    ({"name": 7}, "E_REQUEST_INVALID"),
    ({"name": "x", "admin": True}, "E_REQUEST_INVALID"),
    ({"name": ""}, "E_APP_NEEDS_A_NAME"),
    ({"name": "   "}, "E_APP_NEEDS_A_NAME"),
])
def test_junk_bodies_are_refused_and_create_nothing(api: Any, org: Org, body: dict[str, Any], code: str) -> None:
    r = api.post("/api/apps", json=body, headers=bearer(org.installed.token))
    assert r.status_code == 422 and r.json()["error"] == code, r.text
    assert _apps(org) == 0


def test_a_principal_that_is_not_an_administrator_may_not_create_an_application(api: Any, org: Org) -> None:
    admin = bearer(org.installed.token)
    r = api.post("/api/apps", json={"name": "pats-app"}, headers=admin)
    assert r.status_code == 201
    # An application's token stands in for any principal without org.admin.
    r = api.post("/api/apps", json={"name": "by-an-app"}, headers=bearer(r.json()["token"]))
    assert r.status_code == 403 and r.json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    assert _apps(org) == 1
