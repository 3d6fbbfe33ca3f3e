"""``GET /api/sends``'s search filters (author kind, class, recipient, date range) and ``GET
/api/sends/{id}/raw``: what each answers and how a bad value is refused. The full filter table runs against
the page and the API together in ``tests/web/sends/test_sends_pages.py``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import bearer


def _send(api: Any, installed: Any, subject: str, to: str) -> str:
    r = api.post("/api/sends", json={"mailbox_id": installed.mailbox_id, "to": [to], "subject": subject,
                                     "body": "Hello."}, headers=bearer(installed.token))
    assert r.status_code == 201, r.text
    return str(r.json()["send"]["id"])


def test_filters_narrow_and_each_send_names_its_author_kind_and_class(api: Any, installed: Any) -> None:
    first = _send(api, installed, "First", "ann@remote.test")
    _send(api, installed, "Second", "bob@remote.test")
    h = bearer(installed.token)
    listed = api.get("/api/sends", params={"recipient": "ANN@remote.test", "author_kind": "person",
                                           "class": "correspondence", "after": "2000-01-01"}, headers=h).json()
    assert [(s["id"], s["author_kind"], s["mail_class"]) for s in listed["sends"]] == [
        (first, "person", "correspondence")]
    assert api.get("/api/sends", params={"author_kind": "butler"}, headers=h).json()["sends"] == []
    assert api.get("/api/sends", params={"before": "2000-01-01"}, headers=h).json()["sends"] == []


@pytest.mark.parametrize(("params", "field"), [
    ({"author_kind": "robot"}, "query.author_kind"),
    ({"class": "bulk"}, "query.class"),
    ({"recipient": "not an address"}, "query.recipient"),
    ({"after": "2026-02-02", "before": "2026-02-01"}, "query.before"),
])
def test_a_bad_filter_is_422_naming_the_parameter(api: Any, installed: Any, params: dict[str, str],
                                                  field: str) -> None:
    r = api.get("/api/sends", params=params, headers=bearer(installed.token))
    assert (r.status_code, r.json()["error"]) == (422, "E_REQUEST_INVALID")
    assert field in [p["field"] for p in r.json()["detail"]["problems"]]


def test_the_raw_message_is_the_sealed_bytes_for_body_readers(api: Any, installed: Any) -> None:
    send_id = _send(api, installed, "Raw", "ann@remote.test")
    r = api.get(f"/api/sends/{send_id}/raw", headers=bearer(installed.token))
    assert r.status_code == 200 and r.headers["content-type"].startswith("message/rfc822")
    assert b"Subject: Raw" in r.content and b"Hello." in r.content
    absent = api.get("/api/sends/snd_00000000000000000000000000/raw", headers=bearer(installed.token))
    assert (absent.status_code, absent.json()["error"]) == (404, "E_NO_SUCH_SEND")
