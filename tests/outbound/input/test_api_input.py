"""The outsider's report (issue 9) replayed through the API: a Subject holding any line break or control
character, a Subject of a million characters, a 30 MB text, on ``POST /api/mail`` (both classes),
``POST /api/sends`` (inline and from a draft) and the draft routes. Each answers its stable code with
what/why/fix, and nothing is written: no manifest, recipient, draft, conversation, audit entry or evidence
blob, and no provider request (``written`` counts them all)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mailnode import budgets
from tests.conftest import bearer

from .conftest import Org, mail_body

#: Every character ``str.splitlines`` breaks on, and controls the report did not name.
BAD_SUBJECT_CHARACTERS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r", "\n",
                          "\x00", "\x01", "\x1b", "\x7f", "\x9b"]


def _ids(chars: list[str]) -> list[str]:
    return [f"U+{ord(c):04X}" for c in chars]


def _assert_error(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = dict(r.json())
    assert body["error"] == code, body
    assert body["message"] and body["why"] and body["fix"], body
    return body


def _raw(api: Any, path: str, body: dict[str, Any], headers: dict[str, str], method: str = "post") -> Any:
    """Send ``body`` as JSON with non-ASCII escaped (so a lone surrogate travels as ``\\ud800``)."""
    return getattr(api, method)(path, content=json.dumps(body).encode("ascii"),
                                headers={**headers, "content-type": "application/json"})


def _send_body(org: Org, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"mailbox_id": org.installed.mailbox_id, "to": ["person@remote.test"],
                            "subject": "Hello", "body": "Hi there."}
    body.update(fields)
    return body


# --- line breaks and control characters in the Subject ---------------------------------------------------


@pytest.mark.parametrize("cls", ["realtime", "deferrable"])
@pytest.mark.parametrize("ch", BAD_SUBJECT_CHARACTERS, ids=_ids(BAD_SUBJECT_CHARACTERS))
def test_post_mail_with_a_line_break_or_control_in_the_subject_is_422_and_writes_nothing(
        api: Any, org: Org, app_token: str, written: Any, cls: str, ch: str) -> None:
    before = written()
    r = api.post("/api/mail", json=mail_body(org, cls, subject=f"Hi{ch}there"), headers=bearer(app_token))
    body = _assert_error(r, 422, "E_HEADER_INJECTION")
    assert body["detail"]["character"] == f"U+{ord(ch):04X}" and body["detail"]["field"] == "Subject"
    assert f"U+{ord(ch):04X}" in body["message"]
    assert written() == before


@pytest.mark.parametrize("ch", BAD_SUBJECT_CHARACTERS, ids=_ids(BAD_SUBJECT_CHARACTERS))
def test_post_sends_with_a_line_break_or_control_in_the_subject_is_422_and_writes_nothing(
        api: Any, org: Org, written: Any, ch: str) -> None:
    before = written()
    r = api.post("/api/sends", json=_send_body(org, subject=f"Hi{ch}there"), headers=bearer(org.installed.token))
    _assert_error(r, 422, "E_HEADER_INJECTION")
    assert written() == before


@pytest.mark.parametrize("ch", BAD_SUBJECT_CHARACTERS, ids=_ids(BAD_SUBJECT_CHARACTERS))
def test_a_draft_with_a_line_break_or_control_in_the_subject_is_422_on_save_and_on_edit(
        api: Any, org: Org, written: Any, ch: str) -> None:
    h = bearer(org.installed.token)
    before = written()
    r = api.post("/api/drafts", json={"mailbox_id": org.installed.mailbox_id, "subject": f"Hi{ch}there"}, headers=h)
    _assert_error(r, 422, "E_HEADER_INJECTION")
    assert written() == before
    draft = api.post("/api/drafts", json={"mailbox_id": org.installed.mailbox_id, "subject": "Fine",
                                          "to": ["person@remote.test"]}, headers=h)
    assert draft.status_code == 201, draft.text
    draft_id = draft.json()["draft"]["id"]
    before = written()
    r = api.put(f"/api/drafts/{draft_id}", json={"subject": f"Hi{ch}there"}, headers=h)
    _assert_error(r, 422, "E_HEADER_INJECTION")
    assert written() == before
    assert api.get(f"/api/drafts/{draft_id}", headers=h).json()["draft"]["subject"] == "Fine"


def test_a_tab_in_the_subject_is_white_space_and_is_sent(api: Any, org: Org, app_token: str) -> None:
    r = api.post("/api/mail", json=mail_body(org, subject="Upload\tfailed"), headers=bearer(app_token))
    assert r.status_code == 200, r.text
    assert json.loads(org.emulator.sends()[-1].body)["subject"] == "Upload\tfailed"


def test_a_lone_surrogate_is_422_text_malformed_in_the_subject_and_the_text(
        api: Any, org: Org, app_token: str, written: Any) -> None:
    before = written()
    r = _raw(api, "/api/mail", mail_body(org, subject="Hi \ud800"), bearer(app_token))
    assert _assert_error(r, 422, "E_TEXT_MALFORMED")["detail"]["character"] == "U+D800"
    r = _raw(api, "/api/mail", mail_body(org, text="Hi \udc00"), bearer(app_token))
    assert _assert_error(r, 422, "E_TEXT_MALFORMED")["detail"]["field"] == "body"
    r = _raw(api, "/api/sends", _send_body(org, body="\ud83d"), bearer(org.installed.token))
    _assert_error(r, 422, "E_TEXT_MALFORMED")
    r = _raw(api, "/api/drafts", {"mailbox_id": org.installed.mailbox_id, "body": "\ud83d"},
             bearer(org.installed.token))
    _assert_error(r, 422, "E_TEXT_MALFORMED")
    assert written() == before


def test_a_nul_in_the_body_is_422_text_malformed_and_a_draft_holding_one_is_not_saved(
        api: Any, org: Org, app_token: str, written: Any) -> None:
    before = written()
    r = api.post("/api/mail", json=mail_body(org, "deferrable", text="a\x00b"), headers=bearer(app_token))
    assert _assert_error(r, 422, "E_TEXT_MALFORMED")["detail"]["character"] == "U+0000"
    r = api.post("/api/drafts", json={"mailbox_id": org.installed.mailbox_id, "body": "a\x00b"},
                 headers=bearer(org.installed.token))
    _assert_error(r, 422, "E_TEXT_MALFORMED")
    assert written() == before


def test_line_breaks_and_controls_in_the_body_are_text_and_are_sent(api: Any, org: Org, app_token: str) -> None:
    text = "Line one\u2028line two\x0cpage\x85next\ttab"
    r = api.post("/api/mail", json=mail_body(org, text=text), headers=bearer(app_token))
    assert r.status_code == 200, r.text


# --- sizes -----------------------------------------------------------------------------------------------


def test_a_subject_at_the_limit_is_sent_and_one_over_is_422_naming_the_limit(
        api: Any, org: Org, app_token: str, written: Any) -> None:
    limit = budgets.SEND_SUBJECT_MAX_CHARS
    r = api.post("/api/mail", json=mail_body(org, key="at", subject="s" * limit), headers=bearer(app_token))
    assert r.status_code == 200, r.text
    assert json.loads(org.emulator.sends()[-1].body)["subject"] == "s" * limit
    before = written()
    for subject in ("s" * (limit + 1), "s" * 1_000_000):
        r = api.post("/api/mail", json=mail_body(org, key=f"over-{len(subject)}", subject=subject),
                     headers=bearer(app_token))
        body = _assert_error(r, 422, "E_SUBJECT_TOO_LONG")
        assert body["detail"] == {"limit_name": "SEND_SUBJECT_MAX_CHARS", "limit": limit, "observed": len(subject)}
        assert "SEND_SUBJECT_MAX_CHARS" in body["message"] and str(limit) in body["fix"]
    assert written() == before


def test_a_subject_over_the_limit_is_refused_by_sends_and_drafts(api: Any, org: Org, written: Any) -> None:
    h = bearer(org.installed.token)
    subject = "s" * (budgets.SEND_SUBJECT_MAX_CHARS + 1)
    before = written()
    _assert_error(api.post("/api/sends", json=_send_body(org, subject=subject), headers=h), 422, "E_SUBJECT_TOO_LONG")
    _assert_error(api.post("/api/drafts", json={"mailbox_id": org.installed.mailbox_id, "subject": subject},
                           headers=h), 422, "E_SUBJECT_TOO_LONG")
    assert written() == before


def test_a_body_over_the_limit_is_413_naming_the_limit_on_every_route(
        api: Any, org: Org, app_token: str, written: Any) -> None:
    limit = budgets.SEND_BODY_MAX_BYTES
    text = "x" * (limit + 1)
    h = bearer(org.installed.token)
    before = written()
    for r in (api.post("/api/mail", json=mail_body(org, "deferrable", text=text), headers=bearer(app_token)),
              api.post("/api/mail", json=mail_body(org, "realtime", key="k-2", text=text), headers=bearer(app_token)),
              api.post("/api/sends", json=_send_body(org, body=text), headers=h),
              api.post("/api/drafts", json={"mailbox_id": org.installed.mailbox_id, "body": text}, headers=h)):
        body = _assert_error(r, 413, "E_BODY_TOO_LARGE")
        assert body["detail"] == {"limit_name": "SEND_BODY_MAX_BYTES", "limit": limit, "observed": limit + 1}
        assert str(limit) in body["message"] and str(limit) in body["fix"]
    assert written() == before


def test_a_body_at_the_limit_in_utf8_bytes_is_sealed(api: Any, org: Org, app_token: str) -> None:
    text = "é" * (budgets.SEND_BODY_MAX_BYTES // 2)
    r = api.post("/api/mail", json=mail_body(org, "deferrable", text=text), headers=bearer(app_token))
    assert r.status_code == 202, r.text


def test_a_30_mb_text_is_413_request_too_large_before_the_route_reads_it(
        api: Any, org: Org, app_token: str, written: Any) -> None:
    before = written()
    text = "x" * (30 * 1000 * 1000)
    r = api.post("/api/mail", json=mail_body(org, "deferrable", text=text), headers=bearer(app_token))
    body = _assert_error(r, 413, "E_REQUEST_TOO_LARGE")
    assert body["detail"]["limit"] == budgets.API_REQUEST_MAX_BYTES and body["detail"]["declared"] is True
    assert written() == before


def test_a_chunked_body_over_the_request_limit_is_413_and_a_small_chunked_one_is_read_whole(
        api: Any, org: Org, app_token: str, written: Any) -> None:
    before = written()

    def big() -> Any:
        yield b'{"text": "'
        for _ in range(budgets.API_REQUEST_MAX_BYTES // (1024 * 1024) + 1):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    r = api.post("/api/mail", content=big(), headers={**bearer(app_token), "content-type": "application/json"})
    body = _assert_error(r, 413, "E_REQUEST_TOO_LARGE")
    assert body["detail"]["declared"] is False
    assert written() == before

    encoded = json.dumps(mail_body(org, "deferrable")).encode()

    def small() -> Any:
        yield encoded[:10]
        yield encoded[10:]

    r = api.post("/api/mail", content=small(), headers={**bearer(app_token), "content-type": "application/json"})
    assert r.status_code == 202, r.text
