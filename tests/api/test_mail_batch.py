"""``POST /api/mail/batch`` against the in-process app (issue 20): up to ``MAIL_BATCH_MAX`` mails, one result
per item in order; a bad item answers its own error in place and the others are sealed; a batch over the
limit, or a body that is not a list, is refused whole; each item replays under its own key."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from mailnode import budgets
from mailnode.schema.outbound import send_manifests
from tests.api.conftest import Cast


def _grant(cast: Cast) -> None:
    r = cast.api.post("/api/access", json={"subject_id": cast.app_id, "relation": "send.propose",
                                           "object_id": cast.installed.mailbox_id}, headers=cast.admin)
    assert r.status_code == 201, r.text


def _item(key: str, **overrides: Any) -> dict[str, Any]:
    return {"from": "Support <support@example.test>", "class": "deferrable", "to": ["ann@remote.test"],
            "subject": "Receipt", "text": "Thank you.", "tags": ["receipt"], "idempotency_key": key, **overrides}


def _sealed(cast: Cast) -> int:
    with cast.api.app.state.node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(send_manifests)).scalar_one())


def test_one_bad_item_fails_only_itself_and_answers_in_place(cast: Cast) -> None:
    _grant(cast)
    items = [_item("b-0"), _item("b-1", text=None), _item("b-2"), "not an object",
             _item("b-4", headers={"Bcc": "spy@remote.test"}), _item("b-5", surprise=True)]
    r = cast.api.post("/api/mail/batch", json=items, headers=cast.app)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [(x["index"], x["status"]) for x in results] == [(0, 202), (1, 422), (2, 202), (3, 422), (4, 422),
                                                            (5, 422)]
    assert results[1]["error"]["error"] == "E_MAIL_BODY_MISSING" and results[1]["mail"] is None
    assert results[3]["error"]["error"] == "E_REQUEST_INVALID"
    assert results[4]["error"]["error"] == "E_MAIL_HEADER_NOT_ALLOWED"
    assert results[5]["error"]["error"] == "E_REQUEST_INVALID"
    assert [p["field"] for p in results[5]["error"]["detail"]["problems"]] == ["5.surprise"]
    sealed = [results[0]["mail"]["id"], results[2]["mail"]["id"]]
    assert results[0]["error"] is None and results[0]["mail"]["state"] == "held"
    listed = cast.api.get("/api/mail", params={"tag": "receipt"}, headers=cast.app).json()["mail"]
    assert sorted(m["id"] for m in listed) == sorted(sealed)
    # The same batch again replays each sealed item under its key and refuses the bad ones alike.
    again = cast.api.post("/api/mail/batch", json=items, headers=cast.app).json()["results"]
    assert [x["mail"]["id"] for x in again if x["mail"]] == sealed
    assert [x["status"] for x in again] == [x["status"] for x in results]
    assert _sealed(cast) == 2


def test_a_batch_over_the_limit_or_not_a_list_is_refused_whole(cast: Cast) -> None:
    _grant(cast)
    over = [_item(f"o-{i}") for i in range(budgets.MAIL_BATCH_MAX + 1)]
    r = cast.api.post("/api/mail/batch", json=over, headers=cast.app)
    assert (r.status_code, r.json()["error"]) == (422, "E_MAIL_BATCH_TOO_LARGE"), r.text
    assert r.json()["detail"] == {"limit_name": "MAIL_BATCH_MAX", "limit": budgets.MAIL_BATCH_MAX,
                                  "observed": budgets.MAIL_BATCH_MAX + 1}
    r = cast.api.post("/api/mail/batch", json=_item("single"), headers=cast.app)
    assert (r.status_code, r.json()["error"]) == (422, "E_REQUEST_INVALID"), r.text
    assert _sealed(cast) == 0


def test_a_full_batch_is_sealed_item_by_item(cast: Cast) -> None:
    _grant(cast)
    items = [_item(f"f-{i}", to=[f"n{i}@remote.test"]) for i in range(budgets.MAIL_BATCH_MAX)]
    r = cast.api.post("/api/mail/batch", json=items, headers=cast.app)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["status"] for x in results] == [202] * budgets.MAIL_BATCH_MAX
    assert [x["mail"]["recipients"][0]["address"] for x in results] == [f"n{i}@remote.test" for i in
                                                                         range(budgets.MAIL_BATCH_MAX)]
    assert _sealed(cast) == budgets.MAIL_BATCH_MAX


def test_a_batch_needs_a_caller(cast: Cast) -> None:
    r = cast.api.post("/api/mail/batch", json=[_item("anon")])
    assert r.status_code == 401, r.text
