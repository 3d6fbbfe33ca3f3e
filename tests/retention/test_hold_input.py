"""``POST /api/holds`` and ``GET /api/holds`` refuse bad input the way a reader can act on (issue 9
follow-up, an adversarial test): a date-only ``to_date`` covers its whole UTC day, a missing mailbox is
named, a matter reference is one bounded line of printable text, and a non-administrator listing holds is
403 like the other administrator routes. Each refusal writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.ingress import receipts, routing
from mailnode.ingress.materialise import Materialised, materialise_receipt
from mailnode.retention import holds
from mailnode.retention import io as retention_io
from tests.retention.conftest import Retained


def _at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


# --- the window's bounds, as a table ----------------------------------------------------------------


@pytest.mark.parametrize(("value", "field", "expected"), [
    ("2026-01-31", "to_date", _at(2026, 1, 31, 23, 59, 59, 999_999)),
    ("2026-01-31", "from_date", _at(2026, 1, 31)),
    ("20260131", "to_date", _at(2026, 1, 31, 23, 59, 59, 999_999)),
    ("2026-01-31T18:00:00Z", "to_date", _at(2026, 1, 31, 18)),
    ("2026-01-31T10:00:00+02:00", "to_date", _at(2026, 1, 31, 8)),
    ("2026-01-31T10:00:00", "from_date", _at(2026, 1, 31, 10)),
    ("2026-01-31T00:00:00", "to_date", _at(2026, 1, 31)),
    ("9999-12-31", "to_date", _at(9999, 12, 31, 23, 59, 59, 999_999)),
    (None, "to_date", None),
    ("", "from_date", None),
])
def test_a_bound_reads_as_this_utc_instant(value: object, field: str, expected: datetime | None) -> None:
    assert holds.parse_bound(value, field) == expected


@pytest.mark.parametrize("value", ["2026-13-01", "31/01/2026", "m\x00", 20260131, "0001-01-01T00:00+01:00"])
def test_an_unreadable_bound_is_refused_with_the_format_that_covers_a_day(value: object) -> None:
    with pytest.raises(MailnodeError) as refused:
        holds.parse_bound(value, "to_date")
    assert refused.value.code == "E_HOLD_BOUND_UNREADABLE" and refused.value.status == 422
    assert "a date alone covers that whole day" in refused.value.fix


# --- the last day of a hold is covered ---------------------------------------------------------------


def _deliver_at(org: Retained, at: datetime, n: int) -> Materialised:
    """A real delivery received at ``at`` (the frozen clock is set there): a message and an open case."""
    org.node.clock.set(at)  # type: ignore[attr-defined]
    raw = (f"From: ann@remote.test\r\nTo: {org.i.mailbox_address}\r\nSubject: Exhibit {n}\r\n"
           f"Message-ID: <exhibit{n}@remote.test>\r\n\r\nKeep me.\r\n").encode()
    with org.node.read() as conn:
        route = routing.resolve(conn, org.i.mailbox_address)
    assert route is not None
    rid = receipts.accept(org.node, raw, receipts.Envelope(mail_from="ann@remote.test", routes=(route,)))[0]
    return materialise_receipt(org.node, rid)


def test_mail_received_at_235959_on_the_to_date_is_covered(org: Retained, api: Any) -> None:
    last_second = _deliver_at(org, _at(2026, 1, 31, 23, 59, 59), 1)
    next_day = _deliver_at(org, _at(2026, 2, 1, 0, 0, 0), 2)
    for got in (last_second, next_day):
        for step in ("claim", "close"):
            assert api.post(f"/api/cases/{got.case_id}/{step}", headers=org.admin.headers).status_code == 200
    # Well past the 14-day ceiling: only the hold keeps anything.
    org.node.clock.set(_at(2026, 4, 1))  # type: ignore[attr-defined]
    placed = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "from_date": "2026-01-01",
                                          "to_date": "2026-01-31"}, headers=org.admin.headers)
    assert placed.status_code == 201, placed.text
    hold = placed.json()["hold"]
    assert hold["from_date"] == "2026-01-01T00:00:00+00:00"
    assert hold["to_date"] == "2026-01-31T23:59:59.999999+00:00"

    report = retention_io.run_pass(org.node, org.node.clock.now()).sweeps[org.org_id]
    assert report.hold_blocked == (last_second.message_id,)
    assert report.purged == (next_day.message_id,)
    kept = api.get(f"/api/messages/{last_second.message_id}", headers=org.admin.headers).json()["message"]
    assert kept["content_deleted_at"] is None and kept["text_body"]
    assert api.get(f"/api/messages/{last_second.message_id}/raw", headers=org.admin.headers).status_code == 200

    refused = api.delete(f"/api/cases/{last_second.case_id}", headers=org.admin.headers)
    assert refused.status_code == 409 and refused.json()["error"] == "E_LEGAL_HOLD"
    assert refused.json()["detail"]["hold_ids"] == [hold["id"]]
    assert api.delete(f"/api/cases/{next_day.case_id}", headers=org.admin.headers).status_code == 200


# --- a missing mailbox is named ------------------------------------------------------------------------


@pytest.mark.parametrize("body", [{}, {"mailbox_id": None}, {"mailbox_id": "  "}, {"matter_id": "M-1"}])
def test_a_hold_without_a_mailbox_says_the_field_is_required(org: Retained, api: Any, body: dict[str, Any]) -> None:
    r = api.post("/api/holds", json=body, headers=org.admin.headers)
    assert r.status_code == 422, r.text
    got = r.json()
    assert got["error"] == "E_REQUEST_INVALID"
    assert "mailbox_id: Field required" in got["message"]
    assert got["detail"]["problems"] == [{"field": "mailbox_id", "problem": "Field required"}]
    assert "None" not in got["message"]
    _nothing_placed(org, api)


def _nothing_placed(org: Retained, api: Any) -> None:
    assert api.get("/api/holds", headers=org.admin.headers).json()["holds"] == []
    assert org.entries("hold.placed") == []


# --- a matter reference is one bounded line of printable text -----------------------------------------


def test_a_matter_id_of_the_budget_is_placed_and_one_longer_is_refused_naming_the_limit(
        org: Retained, api: Any) -> None:
    too_long = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "matter_id": "M" * 100_000},
                        headers=org.admin.headers)
    assert too_long.status_code == 422, too_long.text
    body = too_long.json()
    assert body["error"] == "E_BUDGET_EXCEEDED"
    assert body["detail"] == {"limit_name": "HOLD_MATTER_ID_MAX_CHARS", "limit": budgets.HOLD_MATTER_ID_MAX_CHARS,
                              "observed": 100_000, "field": "matter_id"}
    assert "HOLD_MATTER_ID_MAX_CHARS is 200" in body["message"] and "shorter matter_id" in body["fix"]
    just_over = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id,
                                             "matter_id": "M" * (budgets.HOLD_MATTER_ID_MAX_CHARS + 1)},
                         headers=org.admin.headers)
    assert just_over.status_code == 422 and just_over.json()["error"] == "E_BUDGET_EXCEEDED"
    _nothing_placed(org, api)
    at_limit = "M" * budgets.HOLD_MATTER_ID_MAX_CHARS
    placed = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "matter_id": f"  {at_limit} "},
                      headers=org.admin.headers)
    assert placed.status_code == 201, placed.text
    assert placed.json()["hold"]["matter_id"] == at_limit


@pytest.mark.parametrize(("matter_id", "character"), [
    ("M-7\r\nX-Forged: yes", "U+000D"),
    ("M-7\nsecond line", "U+000A"),
    ("m\x00", "U+0000"),
    ("M-7\u2028", "U+2028"),
    ("M\u200b7", "U+200B"),
    ("\tM-7", "U+0009"),
])
def test_a_matter_id_with_a_control_character_is_refused(org: Retained, api: Any, matter_id: str,
                                                         character: str) -> None:
    r = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "matter_id": matter_id},
                 headers=org.admin.headers)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "E_HOLD_MATTER_ID_MALFORMED"
    assert r.json()["detail"] == {"field": "matter_id", "character": character}
    assert character in r.json()["message"]
    _nothing_placed(org, api)


@pytest.mark.parametrize("matter_id", [12345, ["M-7"], {"id": "M-7"}, True])
def test_a_matter_id_that_is_not_text_is_refused(org: Retained, api: Any, matter_id: object) -> None:
    r = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "matter_id": matter_id},
                 headers=org.admin.headers)
    assert r.status_code == 422 and r.json()["error"] == "E_HOLD_MATTER_ID_MALFORMED", r.text
    _nothing_placed(org, api)


def test_a_blank_matter_id_is_no_matter_id(org: Retained, api: Any) -> None:
    placed = api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "matter_id": "   "},
                      headers=org.admin.headers)
    assert placed.status_code == 201 and placed.json()["hold"]["matter_id"] is None


# --- listing holds is an administrator route like the others ------------------------------------------


def test_a_non_administrator_listing_holds_is_403_like_the_other_administrator_routes(
        org: Retained, api: Any) -> None:
    api.post("/api/holds", json={"mailbox_id": org.i.mailbox_id, "matter_id": "M-7"}, headers=org.admin.headers)
    bob = org.person("bob@example.test", ("send.propose", org.i.mailbox_id), ("approval.decide", org.i.mailbox_id))
    for path in ("/api/holds", "/api/settings/retention", "/api/provider-status"):
        r = api.get(path, headers=bob.headers)
        assert r.status_code == 403, (path, r.text)
        assert r.json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    listed = api.get("/api/holds", headers=bob.headers).json()
    assert listed["message"] == "Only an administrator may list legal holds."
    assert "M-7" not in str(listed)
