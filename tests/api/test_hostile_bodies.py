"""Hostile request bodies answer a clean four-part 4xx, never a 500 (issue 14 item 6): a validly signed
webhook nesting 100,000 arrays, the same nesting on an authenticated route, and bodies that are not JSON."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from mailnode import budgets
from mailnode.api.json_limit import nesting_over
from tests.api.hostile import send_hostile

SECRET = "whsec_" + base64.b64encode(b"mailnode-api-hostile-test-secret").decode()
FOUR_PARTS = ("error", "message", "why", "fix", "detail")


def _clean(answer: dict[str, Any], status: int, code: str) -> None:
    assert answer["status"] == status, answer
    body = answer["body"]
    assert tuple(body) == FOUR_PARTS and body["error"] == code and body["why"] and body["fix"], body
    assert "Error" not in json.dumps(body), body  # no Python exception's name


def test_nesting_bombs_are_refused_before_decoding(tmp_path: Path, database_url: str) -> None:
    deep = {"body_repeat": ["[", "]"], "n": 100_000}
    signed, policy, unterminated, event_ok = send_hostile(tmp_path / "node", database_url, SECRET, [
        {"method": "POST", "path": "/api/webhooks/resend", "sign": True, **deep},
        {"method": "POST", "path": "/api/policies", "auth": True, "body_repeat": ['{"a":', "}"], "n": 100_000},
        # An unterminated string of escaped quotes after enough brackets to be measured: linear, not a rescan
        # from every quote (the child's CPU limit fails a quadratic regression).
        {"method": "POST", "path": "/api/policies", "auth": True,
         "body_repeat": ["[" * 100 + '"', '\\"'], "n": 1, "tail_repeat": ['\\"', 1_000_000]},
        # A shallow signed event still reaches the signature check and the event parser.
        {"method": "POST", "path": "/api/webhooks/resend", "sign": True,
         "body": json.dumps({"type": "email.delivered", "created_at": "2026-12-01T00:00:00Z",
                             "data": {"email_id": "nope", "to": ["a@b.test"], "tags": [[[[1]]]]}})},
    ])
    _clean(signed, 422, "E_JSON_TOO_DEEP")
    _clean(policy, 422, "E_JSON_TOO_DEEP")
    _clean(unterminated, 422, "E_JSON_TOO_DEEP")
    assert signed["body"]["detail"]["limit_name"] == "JSON_NESTING_MAX"
    assert event_ok["status"] == 200, event_ok


@pytest.mark.parametrize(("body", "reason"), [
    ("{bad", "Expecting property name enclosed in double quotes at byte 1"),
    ('{"name": "x"} and more', "Extra data at byte 14"),
    ("\udcff", "could not be decoded"),
])
def test_a_body_that_is_not_json_says_so(api: Any, installed: Any, body: str, reason: str) -> None:
    raw = body.encode("utf-8", "surrogateescape")
    r = api.post("/api/teams", content=raw, headers={"Authorization": f"Bearer {installed.token}",
                                                     "content-type": "application/json"})
    assert r.status_code == 400, r.text
    out = r.json()
    assert out["error"] == "E_REQUEST_MALFORMED" and "not valid JSON" in out["message"] and reason in out["message"]
    assert "does not exist" not in out["why"], out


def test_a_node_without_a_webhook_secret_answers_404_not_configured(api: Any) -> None:
    body = b'{"type": "email.delivered", "data": {}}'
    r = api.post("/api/webhooks/resend", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 404, r.text
    out = r.json()
    assert out["error"] == "E_WEBHOOK_NOT_CONFIGURED" and out["why"] and "MAILNODE_RESEND_WEBHOOK_SECRET" in out["fix"]
    assert "E_SETTING_MISSING" not in r.text


LIMIT = budgets.JSON_NESTING_MAX


@pytest.mark.parametrize(("body", "over"), [
    (b"[" * LIMIT + b"]" * LIMIT, None),
    (b"[" * (LIMIT + 1) + b"]" * (LIMIT + 1), LIMIT + 1),
    (b'{"a":' * (LIMIT + 1) + b"1" + b"}" * (LIMIT + 1), LIMIT + 1),
    (b'["' + b"[" * 1000 + b'"]', None),  # brackets inside a string are text
    (b'["\\"' + b"[" * 1000 + b'"]', None),  # ... after an escaped quote too
    (b"[]" * 100_000, None),  # wide, not deep
    (b"[" * 1000, LIMIT + 1),  # not JSON, measured all the same
    (b"[" * 70 + b'"' + b'\\"' * 1000, LIMIT + 1),  # an unterminated string runs to the end
    (b'["' + b'\\"' * 1000 + b"[" * 100, None),  # ... hiding the brackets after it
    (b"[" * 70 + b'"\\', LIMIT + 1),  # ... a dangling backslash too
    (b'["\\\n' + b"[" * 100 + b'"]', None),  # an escaped newline stays inside the string
    (b"", None),
])
def test_nesting_is_measured_outside_strings(body: bytes, over: int | None) -> None:
    assert nesting_over(body, LIMIT) == over
