"""The foundation through the HTTP API: people, teams, grants through a team, revoke, 401/403/404."""

from __future__ import annotations

from typing import Any


def h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_grant_through_a_team_takes_effect_and_revoke_removes_it(api: Any, installed: Any) -> None:
    admin = h(installed.token)
    bob = api.post("/api/users", json={"email": "bob@example.test", "name": "Bob"}, headers=admin)
    assert bob.status_code == 201, bob.text
    bob_id = bob.json()["user"]["id"]
    # An administrator may mint a token for Bob only locally; Bob mints his own after we give him one here.
    from mailnode.directory.tokens import create_token

    node = api.app.state.node
    with node.begin() as conn:
        _, bob_token = create_token(conn, org_id=installed.org_id, principal_id=bob_id, at=node.clock.now(),
                                    actor_id=installed.user_id, label="test")
    team = api.post("/api/teams", json={"name": "support"}, headers=admin).json()["team"]
    r = api.post(f"/api/teams/{team['id']}/members", json={"user_id": bob_id}, headers=admin)
    assert r.status_code == 200 and r.json()["team"]["members"] == [bob_id]

    # Before the grant Bob cannot see the mailbox: absent and not-yours answer alike.
    assert api.get(f"/api/mailboxes/{installed.mailbox_id}", headers=h(bob_token)).status_code == 404
    assert api.get("/api/mailboxes", headers=h(bob_token)).json()["mailboxes"] == []

    g = api.post("/api/access", json={"subject_id": team["id"], "relation": "mailbox.content.read",
                                      "object_id": installed.mailbox_id}, headers=admin)
    assert g.status_code == 201, g.text
    grant_id = g.json()["grant"]["id"]
    seen = api.get(f"/api/mailboxes/{installed.mailbox_id}", headers=h(bob_token))
    assert seen.status_code == 200 and seen.json()["mailbox"]["addresses"] == ["support@example.test"]
    assert [m["id"] for m in api.get("/api/mailboxes", headers=h(bob_token)).json()["mailboxes"]] == [
        installed.mailbox_id]

    assert api.delete(f"/api/access/{grant_id}", headers=admin).status_code == 200
    assert api.get(f"/api/mailboxes/{installed.mailbox_id}", headers=h(bob_token)).status_code == 404

    # A non-administrator: 403 on an administrator act, with the code and a fix.
    refused = api.post("/api/mailboxes", json={"name": "Sales", "addresses": ["sales@example.test"]},
                       headers=h(bob_token))
    assert refused.status_code == 403
    assert refused.json()["error"] == "E_NOT_AN_ADMINISTRATOR" and refused.json()["fix"]
    # Removing Bob from the team takes the team's relations away too.
    api.post("/api/access", json={"subject_id": team["id"], "relation": "mailbox.metadata.read",
                                  "object_id": installed.mailbox_id}, headers=admin)
    assert api.get(f"/api/mailboxes/{installed.mailbox_id}", headers=h(bob_token)).status_code == 200
    api.delete(f"/api/teams/{team['id']}/members/{bob_id}", headers=admin)
    assert api.get(f"/api/mailboxes/{installed.mailbox_id}", headers=h(bob_token)).status_code == 404


def test_missing_wrong_and_revoked_tokens_answer_401(api: Any, installed: Any) -> None:
    assert api.get("/api/mailboxes").json()["error"] == "E_UNAUTHENTICATED"
    assert api.get("/api/mailboxes", headers=h("mn_wrong")).status_code == 401
    assert api.get("/api/mailboxes", headers={"Authorization": installed.token}).status_code == 401
    fresh = api.post("/api/tokens", json={"label": "laptop"}, headers=h(installed.token)).json()["token"]
    assert api.get("/api/mailboxes", headers=h(fresh["token"])).status_code == 200
    assert api.delete(f"/api/tokens/{fresh['id']}", headers=h(installed.token)).status_code == 200
    r = api.get("/api/mailboxes", headers=h(fresh["token"]))
    assert r.status_code == 401 and "revoked" in r.json()["why"]
    assert api.get("/api/health").json()["status"] == "up"


def test_bad_input_gets_a_code_and_a_fix_and_writes_nothing(api: Any, installed: Any) -> None:
    admin = h(installed.token)
    before = api.get("/api/audit", headers=admin).json()["entries"][0]["seq"]
    cases = [
        ("post", "/api/access", {"subject_id": installed.user_id, "relation": "mailbox.own",
                                 "object_id": installed.mailbox_id}, 422, "E_RELATION_UNKNOWN"),
        ("post", "/api/access", {"subject_id": installed.user_id, "relation": "send.propose",
                                 "object_id": "mbx_nope"}, 422, "E_ID_MALFORMED"),
        ("delete", "/api/access/rt_123", None, 422, "E_ID_MALFORMED"),
        ("post", "/api/teams", {"name": ""}, 422, "E_TEAM_NEEDS_A_NAME"),
        ("post", "/api/users", {"email": "alex@example.test"}, 409, "E_USER_EXISTS"),
        ("post", "/api/users", {"email": "x@example.test", "role": "god"}, 422, "E_REQUEST_INVALID"),
        ("post", "/api/mailboxes", {"name": "S", "addresses": ["s@elsewhere.test"]}, 422,
         "E_ADDRESS_NOT_ON_ORG_DOMAIN"),
        ("post", "/api/mailboxes", {"name": "S", "addresses": ["support@example.test"]}, 409, "E_ADDRESS_TAKEN"),
        ("post", "/api/domains", {"domain": "not a domain"}, 422, "E_DOMAIN_MALFORMED"),
        ("patch", f"/api/mailboxes/{installed.mailbox_id}", {"hold_window_seconds": -1}, 422,
         "E_HOLD_WINDOW_OUT_OF_RANGE"),
    ]
    for method, path, body, status, code in cases:
        r = getattr(api, method)(path, headers=admin, **({"json": body} if body is not None else {}))
        assert (r.status_code, r.json()["error"]) == (status, code), (path, body, r.text)
        assert r.json()["fix"], code
    teams = api.get("/api/teams", headers=admin).json()["teams"]
    assert teams == []
    assert api.get("/api/audit", headers=admin).json()["entries"][0]["seq"] == before


def test_domains_are_idna_lowercased_and_mailboxes_update(api: Any, installed: Any) -> None:
    admin = h(installed.token)
    d = api.post("/api/domains", json={"domain": "Bücher.Example"}, headers=admin)
    assert d.json()["domain"]["domain"] == "xn--bcher-kva.example"
    assert [x["domain"] for x in api.get("/api/domains", headers=admin).json()["domains"]] == [
        "example.test", "xn--bcher-kva.example"]
    m = api.post("/api/mailboxes", json={"name": "Books", "addresses": ["Orders@BÜCHER.example"]}, headers=admin)
    assert m.status_code == 201 and m.json()["mailbox"]["addresses"] == ["orders@xn--bcher-kva.example"]
    mid = m.json()["mailbox"]["id"]
    p = api.patch(f"/api/mailboxes/{mid}", json={"hold_window_seconds": 0, "name": "Book orders"}, headers=admin)
    assert p.json()["mailbox"]["hold_window_seconds"] == 0 and p.json()["mailbox"]["name"] == "Book orders"
    p = api.patch(f"/api/mailboxes/{mid}", json={"hold_window_seconds": None}, headers=admin)
    assert p.json()["mailbox"]["hold_window_seconds"] == 15


def test_list_limit_is_clamped_never_refused(api: Any, installed: Any) -> None:
    admin = h(installed.token)
    for i in range(3):
        api.post("/api/users", json={"email": f"u{i}@example.test"}, headers=admin)
    page = api.get("/api/users?limit=0", headers=admin).json()
    assert len(page["users"]) == 1 and page["next_cursor"] == page["users"][0]["id"]
    rest = api.get(f"/api/users?limit=100000&cursor={page['next_cursor']}", headers=admin).json()
    assert len(rest["users"]) == 3 and rest["next_cursor"] is None
