"""``mailnode app create`` on a real node's data directory (Typer's ``CliRunner``), then the application's
token against the API (spec/transactional.md §6): printed once and never again, holding nothing until it is
granted ``send.propose``, and then sending through the local Resend server. Administrators only over HTTP;
a bad name is refused with nothing written."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from mailnode import budgets
from mailnode.cli import app as cli_app
from mailnode.config import Settings
from mailnode.directory.applications import check_app_name
from tests.conftest import bearer
from tests.governance.conftest import World
from tests.support.resend_emulator import ResendEmulator

runner = CliRunner()
TOKEN = re.compile(r"mn_[A-Za-z0-9_-]{20,}")


def _cli(settings: Settings, *args: str) -> Any:
    return runner.invoke(cli_app, [*args, "--data-dir", str(settings.data_dir)],
                         env={"MAILNODE_DATABASE_URL": settings.database_url})


def _mail(installed: Any, mail_class: str, key: str) -> dict[str, Any]:
    return {"mailbox_id": installed.mailbox_id, "class": mail_class, "to": ["researcher@remote.test"],
            "subject": "Your upload stopped", "text": "Run 7 stopped arriving.", "idempotency_key": key}


def _written(api: Any, installed: Any) -> tuple[list[Any], list[Any]]:
    """What an administrator can see of applications: the listing and the app.created audit entries."""
    h = bearer(installed.token)
    apps = api.get("/api/apps", headers=h)
    assert apps.status_code == 200, apps.text
    audit = api.get("/api/audit", params={"action": "app.created"}, headers=h)
    assert audit.status_code == 200, audit.text
    return apps.json()["applications"], audit.json()["entries"]


def test_app_create_prints_the_token_once_and_it_sends_only_once_granted(
        api: Any, installed: Any, settings: Settings, emulator: ResendEmulator) -> None:
    made = _cli(settings, "app", "create", "research-pipeline")
    assert made.exit_code == 0, made.stderr
    [token] = TOKEN.findall(made.stdout)
    assert "shown once" in made.stdout
    app_id = re.search(r"\((app_[0-9A-Za-z]+)\)", made.stdout).group(1)  # type: ignore[union-attr]
    app_h, admin_h = bearer(token), bearer(installed.token)

    # The token works, and it is the application's.
    me = api.get("/api/me", headers=app_h)
    assert me.status_code == 200 and me.json()["me"]["id"] == app_id and me.json()["me"]["is_admin"] is False

    # Never shown again: not in the API's listing, the CLI's listing, the audit trail, nor a second create.
    listed = api.get("/api/apps", headers=admin_h)
    assert listed.status_code == 200, listed.text
    [entry] = listed.json()["applications"]
    assert (entry["id"], entry["name"]) == (app_id, "research-pipeline") and len(entry["tokens"]) == 1
    assert token not in listed.text
    cli_listed = _cli(settings, "app", "list", "--json")
    assert cli_listed.exit_code == 0 and app_id in cli_listed.stdout and token not in cli_listed.stdout
    audit = api.get("/api/audit", headers=admin_h)
    assert audit.status_code == 200 and token not in audit.text
    again = _cli(settings, "app", "create", "research-pipeline")
    assert again.exit_code == 1 and "E_APP_EXISTS" in again.stderr
    assert not TOKEN.search(again.stdout + again.stderr)
    assert f"POST /api/apps/{app_id}/tokens" in again.stderr

    # It holds nothing until granted: no grant, and the mail API refuses it.
    grants = api.get("/api/access", params={"subject_id": app_id}, headers=admin_h)
    assert grants.status_code == 200 and grants.json()["grants"] == []
    refused = api.post("/api/mail", json=_mail(installed, "deferrable", "k-before"), headers=app_h)
    assert refused.status_code == 404 and refused.json()["error"] == "E_MAY_NOT_SEND_AS_MAILBOX"
    assert api.get("/api/apps", headers=app_h).status_code == 403
    assert emulator.sends() == []

    granted = _cli(settings, "access", "grant", "--subject", app_id, "--relation", "send.propose",
                   "--mailbox", "support@example.test")
    assert granted.exit_code == 0, granted.stderr
    realtime = api.post("/api/mail", json=_mail(installed, "realtime", "k-now"), headers=app_h)
    assert realtime.status_code == 200, realtime.text
    assert realtime.json()["mail"]["state"] == "handed_over" and len(emulator.sends()) == 1
    deferrable = api.post("/api/mail", json=_mail(installed, "deferrable", "k-later"), headers=app_h)
    assert deferrable.status_code == 202 and deferrable.json()["mail"]["state"] == "held"


def test_access_is_granted_only_to_an_application_or_butler_that_exists(api: Any, installed: Any) -> None:
    admin = bearer(installed.token)
    for ghost in ("app_01JAAAAAAAAAAAAAAAAAAAAAAA", "btl_01JAAAAAAAAAAAAAAAAAAAAAAA"):
        r = api.post("/api/access", json={"subject_id": ghost, "relation": "send.propose",
                                          "object_id": installed.mailbox_id}, headers=admin)
        assert r.status_code == 404 and r.json()["error"] == "E_NO_SUCH_SUBJECT", r.text
    app_id = api.post("/api/apps", json={"name": "real"}, headers=admin).json()["application"]["id"]
    r = api.post("/api/access", json={"subject_id": app_id, "relation": "send.propose",
                                      "object_id": installed.mailbox_id}, headers=admin)
    assert r.status_code in (200, 201), r.text


def test_a_lost_application_token_is_replaced_not_recovered(api: Any, installed: Any, settings: Settings) -> None:
    first = json.loads(_cli(settings, "app", "create", "pipeline", "--json").stdout)
    replaced = _cli(settings, "app", "token", "pipeline", "--json")
    assert replaced.exit_code == 0, replaced.stderr
    second = json.loads(replaced.stdout)
    assert second["app_id"] == first["app_id"] and second["token"] != first["token"]
    me = api.get("/api/me", headers=bearer(second["token"]))
    assert me.status_code == 200 and me.json()["me"]["id"] == first["app_id"]
    # Over HTTP, by an administrator; the old token stays until revoked.
    h = bearer(installed.token)
    third = api.post(f"/api/apps/{first['app_id']}/tokens", headers=h)
    assert third.status_code == 201, third.text
    old = api.get("/api/apps", headers=h).json()["applications"][0]["tokens"][0]["id"]
    assert api.delete(f"/api/tokens/{old}", headers=h).status_code == 200
    assert api.get("/api/me", headers=bearer(first["token"])).json()["error"] == "E_UNAUTHENTICATED"
    assert api.get("/api/me", headers=bearer(third.json()["token"])).status_code == 200
    missing = api.post("/api/apps/app_01NOSUCHAPP/tokens", headers=h)
    assert missing.status_code == 404 and missing.json()["error"] == "E_NO_SUCH_APP"


def test_a_person_who_is_not_an_administrator_is_refused(api: Any, installed: Any, settings: Settings) -> None:
    h = bearer(installed.token)
    assert api.post("/api/users", json={"email": "sam@example.test"}, headers=h).status_code == 201
    minted = _cli(settings, "token", "create", "--user", "sam@example.test", "--json")
    assert minted.exit_code == 0, minted.stderr
    sam = bearer(json.loads(minted.stdout)["token"])
    for method, path, body in (("POST", "/api/apps", {"name": "sneaky"}), ("GET", "/api/apps", None)):
        r = api.request(method, path, json=body, headers=sam)
        assert r.status_code == 403 and r.json()["error"] == "E_NOT_AN_ADMINISTRATOR", r.text
        assert "POST /api/access" in r.json()["fix"]
    made = _cli(settings, "app", "create", "real", "--json")
    app_id = json.loads(made.stdout)["app_id"]
    r = api.post(f"/api/apps/{app_id}/tokens", headers=sam)
    assert r.status_code == 403 and r.json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    assert api.post("/api/apps", json={"name": "x"}).json()["error"] == "E_UNAUTHENTICATED"
    apps, entries = _written(api, installed)
    assert [a["name"] for a in apps] == ["real"] and len(entries) == 1


@pytest.mark.parametrize(("name", "code", "says"), [
    ("   ", "E_APP_NEEDS_A_NAME", "needs a name"),
    ("pipe\nline", "E_APP_NAME_MALFORMED", "U+000A"),
    ("tab\there", "E_APP_NAME_MALFORMED", "U+0009"),
    ("nul\x00", "E_APP_NAME_MALFORMED", "U+0000"),
    ("line\u2028separator", "E_APP_NAME_MALFORMED", "U+2028"),
    ("para\u2029separator", "E_APP_NAME_MALFORMED", "U+2029"),
    ("right\u202eto-left", "E_APP_NAME_MALFORMED", "U+202E"),
    ("x" * (budgets.APP_NAME_MAX_CHARS + 1), "E_BUDGET_EXCEEDED", "APP_NAME_MAX_CHARS"),
])
def test_a_bad_name_is_refused_with_a_clear_error_and_nothing_written(
        api: Any, installed: Any, settings: Settings, name: str, code: str, says: str) -> None:
    r = _cli(settings, "app", "create", name)
    assert r.exit_code == 1 and code in r.stderr and says in r.stderr, r.stderr
    assert "fix" in r.stderr.lower() and not TOKEN.search(r.stdout + r.stderr)
    over_http = api.post("/api/apps", json={"name": name}, headers=bearer(installed.token))
    assert over_http.status_code == 422 and over_http.json()["error"] == code
    assert _written(api, installed) == ([], [])
    tokens = api.get("/api/audit", params={"action": "token.created"}, headers=bearer(installed.token))
    assert len(tokens.json()["entries"]) == 1, "only init's token"


@pytest.mark.parametrize(("name", "expected"), [
    ("research-pipeline", "research-pipeline"),
    ("  padded  ", "padded"),
    ("Ünïcode name", "Ünïcode name"),
    ("x" * budgets.APP_NAME_MAX_CHARS, "x" * budgets.APP_NAME_MAX_CHARS),
])
def test_names_an_application_may_have(name: str, expected: str) -> None:
    assert check_app_name(name) == expected


def _ungranted_app(api: Any, installed: Any) -> dict[str, str]:
    r = api.post("/api/apps", json={"name": "ungranted"}, headers=bearer(installed.token))
    assert r.status_code == 201, r.text
    return bearer(r.json()["token"])


def test_an_ungranted_application_sees_no_mailbox_or_its_mail(api: Any, installed: Any) -> None:
    app_h = _ungranted_app(api, installed)
    for path, noun in (("/api/mailboxes", "mailboxes"), ("/api/cases", "cases"), ("/api/sends", "sends"),
                       ("/api/drafts", "drafts"), ("/api/approvals", "approvals")):
        r = api.get(path, headers=app_h)
        assert r.status_code == 200 and r.json()[noun] == [], (path, r.text)
    r = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages", headers=app_h)
    assert r.status_code == 404 and r.json()["error"] == "E_NO_SUCH_MAILBOX"
    for path in ("/api/audit", "/api/provider-status", "/metrics", "/api/apps"):
        r = api.get(path, headers=app_h)
        assert r.status_code == 403 and r.json()["error"] == "E_NOT_AN_ADMINISTRATOR", (path, r.text)


def test_an_ungranted_application_reads_no_people_or_teams(api: Any, node: Any, installed: Any) -> None:
    admin = bearer(installed.token)
    assert api.post("/api/teams", json={"name": "support"}, headers=admin).status_code == 201
    app_h = _ungranted_app(api, installed)
    users = api.get("/api/users", headers=app_h)
    teams = api.get("/api/teams", headers=app_h)
    assert installed.domain not in users.text and "support" not in teams.text
    assert [r.status_code for r in (users, teams)] == [403, 403]
    assert {r.json()["error"] for r in (users, teams)} == {"E_NOT_A_PERSON"}
    # A person who is not an administrator still reads the directory.
    pat = World(node, installed).person(f"pat@{installed.domain}")
    r = api.get("/api/users", headers=pat.headers)
    assert r.status_code == 200 and f"pat@{installed.domain}" in r.text
    assert api.get("/api/teams", headers=pat.headers).status_code == 200
