"""Builders for the API tests: principals of every kind over one installed organisation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from mailnode.directory.tokens import create_token


def h(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Cast:
    """The installed organisation seen by an administrator, a person with no grants and an application."""

    api: Any
    installed: Any
    admin: dict[str, str]
    person_id: str
    person: dict[str, str]
    app_id: str
    app: dict[str, str]

    def person_token(self, email: str) -> tuple[str, dict[str, str]]:
        """A new person (created by the administrator) and a header with a token of theirs."""
        r = self.api.post("/api/users", json={"email": email}, headers=self.admin)
        assert r.status_code == 201, r.text
        uid = r.json()["user"]["id"]
        node = self.api.app.state.node
        with node.begin() as conn:
            _, token = create_token(conn, org_id=self.installed.org_id, principal_id=uid, at=node.clock.now(),
                                    actor_id=None, label="test")
        return uid, h(token)


@pytest.fixture
def cast(api: Any, installed: Any) -> Cast:
    """An administrator, Bob (a person with no grants) and the application ``billing``."""
    admin = h(installed.token)
    app = api.post("/api/apps", json={"name": "billing"}, headers=admin)
    assert app.status_code == 201, app.text
    c = Cast(api, installed, admin, "", {}, app.json()["application"]["id"], h(app.json()["token"]))
    c.person_id, c.person = c.person_token("bob@example.test")
    return c
