"""``GET /api/breakers`` answers administrators and the people of some mailbox, as docs/operations.md says
(issue 14 item 5): an application or a person with no relation gets 403 ``E_BREAKERS_NOT_VISIBLE``."""

from __future__ import annotations

from tests.api.conftest import Cast


def test_breakers_answer_administrators_and_mailbox_people_only(cast: Cast) -> None:
    assert cast.api.get("/api/breakers", headers=cast.admin).status_code == 200
    for who in (cast.person, cast.app):
        r = cast.api.get("/api/breakers", headers=who)
        assert r.status_code == 403, r.text
        body = r.json()
        assert body["error"] == "E_BREAKERS_NOT_VISIBLE" and body["why"] and "POST /api/access" in body["fix"]
    g = cast.api.post("/api/access", json={"subject_id": cast.person_id, "relation": "mailbox.metadata.read",
                                           "object_id": cast.installed.mailbox_id}, headers=cast.admin)
    assert g.status_code == 201, g.text
    seen = cast.api.get("/api/breakers", headers=cast.person)
    assert seen.status_code == 200 and [b["breaker"] for b in seen.json()["breakers"]] == [
        "volume", "bounce_rate", "complaint_rate"]
