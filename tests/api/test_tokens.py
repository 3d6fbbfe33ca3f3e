"""``POST /api/tokens`` mints nothing that outlives its parent, never for an application, and only under a
label that is one printable line (issue 14 item 5)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update

from mailnode import budgets
from mailnode.schema.directory import api_tokens
from tests.api.conftest import Cast, h


def _mint(cast: Cast, headers: dict[str, str], label: Any = "laptop") -> Any:
    return cast.api.post("/api/tokens", json={"label": label}, headers=headers)


def test_revoking_a_token_revokes_what_it_minted_at_any_depth(cast: Cast) -> None:
    child = _mint(cast, cast.person)
    assert child.status_code == 201, child.text
    grandchild = _mint(cast, h(child.json()["token"]["token"]), "phone")
    assert grandchild.status_code == 201, grandchild.text
    assert grandchild.json()["token"]["parent_token_id"] == child.json()["token"]["id"]
    for t in (child, grandchild):
        assert cast.api.get("/api/me", headers=h(t.json()["token"]["token"])).status_code == 200
    # Bob's own token (minted for him by the installer) is the root: revoking it revokes both.
    mine = [t for t in cast.api.get("/api/tokens", headers=cast.person).json()["tokens"]
            if t["parent_token_id"] is None]
    r = cast.api.delete(f"/api/tokens/{mine[0]['id']}", headers=cast.admin)
    assert r.status_code == 200, r.text
    assert r.json()["also_revoked"] == [child.json()["token"]["id"], grandchild.json()["token"]["id"]]
    for t in (child, grandchild):
        refused = cast.api.get("/api/me", headers=h(t.json()["token"]["token"]))
        assert refused.status_code == 401 and "revoked" in refused.json()["why"]


def test_a_token_whose_parent_is_revoked_does_not_authenticate(cast: Cast) -> None:
    """A child minted while its parent was being revoked (the race the cascade cannot see) is refused too."""
    child = _mint(cast, cast.person).json()["token"]
    node = cast.api.app.state.node
    with node.begin() as conn:
        conn.execute(update(api_tokens).where(api_tokens.c.id == child["parent_token_id"])
                     .values(revoked_at=node.clock.now()))
    refused = cast.api.get("/api/me", headers=h(child["token"]))
    assert refused.status_code == 401 and "minted with was revoked" in refused.json()["why"]


def test_an_application_cannot_mint_its_own_tokens(cast: Cast) -> None:
    before = cast.api.get("/api/apps", headers=cast.admin).json()
    r = _mint(cast, cast.app)
    assert r.status_code == 403, r.text
    body = r.json()
    assert body["error"] == "E_APPLICATION_CANNOT_MINT" and body["why"] and "POST /api/apps/" in body["fix"]
    assert cast.api.get("/api/apps", headers=cast.admin).json() == before
    # The administrator's way still works.
    assert cast.api.post(f"/api/apps/{cast.app_id}/tokens", headers=cast.admin).status_code == 201


@pytest.mark.parametrize(("label", "code"), [
    ("", "E_TOKEN_NEEDS_A_LABEL"),
    ("   \t ", "E_TOKEN_NEEDS_A_LABEL"),
    (None, "E_REQUEST_INVALID"),
    (7, "E_REQUEST_INVALID"),
    ("x" * 100_000, "E_BUDGET_EXCEEDED"),
    ("x" * (budgets.TOKEN_LABEL_MAX_CHARS + 1), "E_BUDGET_EXCEEDED"),
    ("lap\ntop", "E_TOKEN_LABEL_MALFORMED"),
    ("lap\u2028top", "E_TOKEN_LABEL_MALFORMED"),
    ("lap\x00top", "E_TOKEN_LABEL_MALFORMED"),
    ("lap\u202etop", "E_TOKEN_LABEL_MALFORMED"),
])
def test_a_bad_label_is_refused_and_mints_nothing(cast: Cast, label: Any, code: str) -> None:
    before = cast.api.get("/api/tokens", headers=cast.person).json()["tokens"]
    r = _mint(cast, cast.person, label)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == code and r.json()["fix"]
    assert cast.api.get("/api/tokens", headers=cast.person).json()["tokens"] == before


def test_a_label_at_the_limit_is_kept_trimmed(cast: Cast) -> None:
    label = "x" * budgets.TOKEN_LABEL_MAX_CHARS
    r = _mint(cast, cast.person, f"  {label} ")
    assert r.status_code == 201 and r.json()["token"]["label"] == label
