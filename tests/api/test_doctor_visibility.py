"""``GET /api/doctor`` shows each finding's words and data only as far as the caller's relations reach
(issue 14 item 5): names, severities and the verdict alike for all; emails, Butler names, addresses,
pause reasons and volumes only to whoever the owning routes would show them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mailnode.doctor.findings import NODE, ORGANISATION, Concern, Finding, Item, Severity, listed
from mailnode.doctor.visibility import ALL, Viewer, sees, view
from tests.api.conftest import Cast
from tests.butler.runs.conftest import ack_program

#: Words only an administrator may read in this organisation's report.
SECRETS = ("alex@example.test", "carol@example.test", "acknowledge", "support@example.test", "stolen password")


def _doctor(cast: Cast, headers: dict[str, str]) -> dict[str, Any]:
    r = cast.api.get("/api/doctor", headers=headers)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def _busy(cast: Cast) -> None:
    """A published Butler, a pending domain-pause request with a reason, and people without contact addresses."""
    b = cast.api.post("/api/butlers", json={"name": "acknowledge", "source": json.dumps(ack_program())},
                      headers=cast.admin)
    assert b.status_code == 201, b.text
    p = cast.api.post(f"/api/butlers/{b.json()['butler']['id']}/publish", headers=cast.admin)
    assert p.status_code == 200, p.text
    for email in ("carol@example.test", "dave@example.test"):
        uid, _ = cast.person_token(email)
        g = cast.api.post("/api/access", json={"subject_id": uid, "relation": "org.admin",
                                               "object_id": cast.installed.org_id}, headers=cast.admin)
        assert g.status_code == 201, g.text
    r = cast.api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "stolen password"},
                      headers=cast.admin)
    assert r.status_code == 201, r.text


def test_an_application_and_a_person_without_grants_see_no_one_elses_objects(cast: Cast) -> None:
    _busy(cast)
    admin, person, app = (_doctor(cast, h) for h in (cast.admin, cast.person, cast.app))
    admin_text = json.dumps(admin)
    assert all(s in admin_text for s in SECRETS), admin_text
    for seen, who in ((person, "person"), (app, "application")):
        text = json.dumps(seen)
        assert [s for s in SECRETS if s in text] == [], who
        # The health itself is not a secret: the same findings, severities, outcomes and verdict.
        assert [(f["name"], f["severity"], f["ok"]) for f in seen["findings"]] == \
            [(f["name"], f["severity"], f["ok"]) for f in admin["findings"]], who
        assert seen["verdict"] == admin["verdict"]
    found = {f["name"]: f for f in person["findings"]}
    assert found["database_reachable"]["detail"] == {f["name"]: f for f in admin["findings"]}[
        "database_reachable"]["detail"]
    assert found["domain_pause_pending"]["detail"].startswith("withheld: ")
    assert found["domain_pause_pending"]["data"] == {"withheld": True}
    # Bob sees his own line in the contact-address finding, and nobody else's.
    mine = found["unverified_contact_addresses"]
    assert mine["data"]["without_contact_address"] == [{"user_id": cast.person_id, "email": "bob@example.test"}]
    assert mine["data"]["withheld"] is True and "users" not in mine["data"]


def test_a_person_sees_their_own_line_and_the_breakers_once_granted_a_mailbox(cast: Cast) -> None:
    before = {f["name"]: f for f in _doctor(cast, cast.person)["findings"]}
    assert before["send_breakers"]["data"] == {"withheld": True}
    g = cast.api.post("/api/access", json={"subject_id": cast.person_id, "relation": "send.propose",
                                           "object_id": cast.installed.mailbox_id}, headers=cast.admin)
    assert g.status_code == 201, g.text
    after = {f["name"]: f for f in _doctor(cast, cast.person)["findings"]}
    assert [b["breaker"] for b in after["send_breakers"]["data"]["breakers"]] == [
        "volume", "bounce_rate", "complaint_rate"]
    mine = after["unverified_contact_addresses"]
    assert "bob@example.test" in mine["detail"] and "alex@example.test" not in json.dumps(mine)


B1, B2 = Concern("butler", "btl_1"), Concern("butler", "btl_2")
BOB = Viewer("usr_bob", admin=False, mailboxes=frozenset({"mbx_a"}), any_mailbox=True)
APP = Viewer("app_x", admin=False)


@pytest.mark.parametrize(("viewer", "concern", "seen"), [
    (ALL, ORGANISATION, True), (ALL, Concern("butler", "btl_1"), True),
    (BOB, NODE, True), (APP, NODE, True), (BOB, Concern("domain", "example.test"), True),
    (BOB, ORGANISATION, False), (APP, ORGANISATION, False),
    (BOB, Concern("mailboxes"), True), (APP, Concern("mailboxes"), False),
    (BOB, Concern("mailbox", "mbx_a"), True), (BOB, Concern("mailbox", "mbx_b"), False),
    (BOB, B1, False), (BOB, Concern("user", "usr_bob"), True), (BOB, Concern("user", "usr_alex"), False),
    (APP, Concern("application", "app_x"), True), (APP, Concern("application", "app_y"), False),
    (BOB, Concern("unknown", "x"), False),  # type: ignore[arg-type]
])
def test_who_sees_what(viewer: Viewer, concern: Concern, seen: bool) -> None:
    assert sees(viewer, concern) is seen


def test_a_listed_finding_is_re_said_over_the_items_kept() -> None:
    items = [Item(Concern("user", "usr_bob"), "bob is unverified", {"user_id": "usr_bob"}, "people", "ask bob"),
             Item(Concern("user", "usr_eve"), "eve is unverified", {"user_id": "usr_eve"}, "people", "ask eve")]
    f = listed("people", Severity.DEGRADED, False, items, lead="unverified: ", fix_lead="Verify: ",
               data={"users": 2})
    assert (f.detail, f.fix) == ("unverified: bob is unverified; eve is unverified", "Verify: ask bob, ask eve.")
    assert view(f, ALL) is f
    bob = view(f, BOB)
    assert bob.detail.startswith("unverified: bob is unverified; more items withheld") and "eve" not in bob.detail
    assert (bob.fix, bob.data) == ("Verify: ask bob.", {"people": [{"user_id": "usr_bob"}], "withheld": True})
    app = view(f, APP)
    assert "bob" not in app.detail + app.fix and app.data == {"withheld": True}
    assert (app.name, app.severity, app.ok) == (f.name, f.severity, f.ok)
    whole = Finding("chain", Severity.REFUSE, False, "broken at seq 3", "restore", {"seq": 3})
    assert view(whole, BOB).detail.startswith("withheld: ") and view(whole, BOB).data == {"withheld": True}
