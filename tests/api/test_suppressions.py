"""``/api/suppressions``: an administrator adds, reads, lists (newest first, cursor paged), searches, removes (with
an audited reason), exports and imports the list; an import with one bad line writes nothing; anyone else is
refused with ``E_NOT_AN_ADMINISTRATOR``."""

from __future__ import annotations

from typing import Any

import pytest

from mailnode.authz import grant_unchecked
from mailnode.directory.people import create_user
from mailnode.directory.tokens import create_token
from mailnode.ids import new_id
from mailnode.schema.directory import organisations

from .conftest import Cast, h


def _second_admin(cast: Cast) -> dict[str, str]:
    """The administrator of another organisation on the same node."""
    node = cast.api.app.state.node
    now = node.clock.now()
    with node.begin() as conn:
        org_id = new_id("org")
        conn.execute(organisations.insert().values(id=org_id, name="Elsewhere", created_at=now))
        user = create_user(conn, org_id=org_id, actor_id=None, at=now, email="eve@elsewhere.test", name="")
        grant_unchecked(conn, org_id=org_id, at=now, subject_id=user["id"], relation="org.admin", object_id=org_id,
                        actor_id=None)
        _, token = create_token(conn, org_id=org_id, principal_id=user["id"], at=now, actor_id=None, label="t")
    return h(token)


def _add(cast: Cast, address: str, note: str | None = None) -> dict[str, Any]:
    r = cast.api.post("/api/suppressions", json={"address": address, "note": note}, headers=cast.admin)
    assert r.status_code == 201, r.text
    return dict(r.json()["suppression"])


def _addresses(cast: Cast, headers: dict[str, str] | None = None, **params: Any) -> list[str]:
    r = cast.api.get("/api/suppressions", params=params, headers=headers or cast.admin)
    assert r.status_code == 200, r.text
    return [s["address"] for s in r.json()["suppressions"]]


def test_an_administrator_adds_lists_searches_and_removes_with_an_audited_reason(cast: Cast) -> None:
    first = _add(cast, "Ann@Remote.TEST", note="asked by phone")
    assert first["address"] == "ann@remote.test" and first["reason"] == "manual"
    assert first["added_by"] == cast.installed.user_id and first["note"] == "asked by phone"
    assert _add(cast, "ann@remote.test")["id"] == first["id"]  # already listed: the first row stands
    for name in ("bob", "carol", "dave"):
        cast.api.app.state.node.clock.advance(1)
        _add(cast, f"{name}@remote.test")
    assert _addresses(cast) == ["dave@remote.test", "carol@remote.test", "bob@remote.test", "ann@remote.test"]
    page = cast.api.get("/api/suppressions", params={"limit": 2}, headers=cast.admin).json()
    assert [s["address"] for s in page["suppressions"]] == ["dave@remote.test", "carol@remote.test"]
    assert _addresses(cast, limit=2, cursor=page["next_cursor"]) == ["bob@remote.test", "ann@remote.test"]
    assert _addresses(cast, q="AR") == ["carol@remote.test"]
    assert _addresses(cast, q="ar", exact=True) == []
    assert _addresses(cast, q="Bob@remote.test", exact=True) == ["bob@remote.test"]
    assert _addresses(cast, reason="manual", q="ann") == ["ann@remote.test"]
    assert _addresses(cast, reason="complaint") == []
    assert cast.api.get("/api/suppressions", params={"reason": "bounced"}, headers=cast.admin).status_code == 422

    got = cast.api.get("/api/suppressions/ANN@remote.test", headers=cast.admin)
    assert got.status_code == 200 and got.json()["suppression"]["id"] == first["id"]
    no_reason = cast.api.delete("/api/suppressions/ann@remote.test", headers=cast.admin)
    assert no_reason.status_code == 422 and no_reason.json()["error"] == "E_SUPPRESSION_REMOVAL_REASON_MISSING"
    removed = cast.api.delete("/api/suppressions/ann@remote.test", params={"reason": "mailbox fixed"},
                              headers=cast.admin)
    assert removed.status_code == 200, removed.text
    gone = cast.api.get("/api/suppressions/ann@remote.test", headers=cast.admin)
    assert gone.status_code == 404 and gone.json()["error"] == "E_NO_SUCH_SUPPRESSION"
    assert cast.api.delete("/api/suppressions/ann@remote.test", params={"reason": "again"},
                           headers=cast.admin).status_code == 404
    entries = cast.api.get("/api/audit", params={"action": "suppression.removed"}, headers=cast.admin).json()
    assert [(e["subject"], e["actor_id"]) for e in entries["entries"]] == [(first["id"], cast.installed.user_id)]
    assert "mailbox fixed" in entries["entries"][0]["detail"]
    added = cast.api.get("/api/audit", params={"action": "suppression.added"}, headers=cast.admin).json()["entries"]
    assert len(added) == 4


def test_export_then_import_into_another_organisation_gives_the_same_list(cast: Cast) -> None:
    for address in ("a@remote.test", "b@remote.test", "c@remote.test"):
        _add(cast, address, note=f"note, with a comma \"{address}\"")
    exported = cast.api.get("/api/suppressions/export.csv", headers=cast.admin)
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    assert exported.text.splitlines()[0] == "address,reason,created_at,event_id,send_id,recipient_id,added_by,note"
    other = _second_admin(cast)
    done = cast.api.post("/api/suppressions/import", content=exported.content,
                         headers={**other, "Content-Type": "text/csv"})
    assert done.status_code == 200, done.text
    assert done.json() == {"added": 3, "already": 0}

    def rows(headers: dict[str, str]) -> list[tuple[str, str, str | None]]:
        r = cast.api.get("/api/suppressions", headers=headers).json()["suppressions"]
        return sorted((s["address"], s["reason"], s["note"]) for s in r)

    assert rows(other) == rows(cast.admin) and len(rows(other)) == 3
    again = cast.api.post("/api/suppressions/import", content=exported.content, headers=other)
    assert again.json() == {"added": 0, "already": 3}


def test_an_import_with_a_bad_line_writes_nothing(cast: Cast) -> None:
    body = b"address,reason\r\nok1@remote.test,complaint\r\nok2@remote.test,\r\nnot-an-address,manual\r\n"
    r = cast.api.post("/api/suppressions/import", content=body, headers={**cast.admin, "Content-Type": "text/csv"})
    assert r.status_code == 422
    assert r.json()["error"] == "E_SUPPRESSION_IMPORT_BAD_LINE" and r.json()["detail"]["line"] == 4
    assert "Line 4" in r.json()["message"]
    assert _addresses(cast) == []


@pytest.mark.parametrize(("method", "path", "kw"), [
    ("GET", "/api/suppressions", {}),
    ("POST", "/api/suppressions", {"json": {"address": "x@remote.test"}}),
    ("GET", "/api/suppressions/x@remote.test", {}),
    ("DELETE", "/api/suppressions/x@remote.test", {"params": {"reason": "because"}}),
    ("GET", "/api/suppressions/export.csv", {}),
    ("POST", "/api/suppressions/import", {"content": b"address\r\nx@remote.test\r\n"}),
])
def test_anyone_but_an_administrator_is_refused(cast: Cast, method: str, path: str, kw: dict[str, Any]) -> None:
    _add(cast, "x@remote.test")
    for headers in (cast.person, cast.app):
        r = cast.api.request(method, path, headers=headers, **kw)
        assert r.status_code == 403 and r.json()["error"] == "E_NOT_AN_ADMINISTRATOR", r.text
    assert cast.api.request(method, path, **kw).status_code == 401
    assert _addresses(cast) == ["x@remote.test"]


def test_a_malformed_address_is_refused(cast: Cast) -> None:
    r = cast.api.post("/api/suppressions", json={"address": "not an address"}, headers=cast.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_ADDRESS_MALFORMED"
    r = cast.api.post("/api/suppressions", json={"address": "a@remote.test\r\nBcc: x@y.test"}, headers=cast.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_HEADER_INJECTION"
