"""The OpenAPI document a client generator reads: every API operation states a typed success answer, the
node's error body (``ErrorBody``) for each error status, the bearer scheme where a token is needed, and
never the framework's ``HTTPValidationError`` (``api.responses``).

Every operation is typed; a new one must be typed from the start or the walk fails.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

_METHODS = ("get", "put", "post", "delete", "patch")
_ERROR_REF = "#/components/schemas/ErrorBody"



def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """Every (METHOD, path, operation) of ``doc``."""
    return [(m.upper(), p, op) for p, ops in doc["paths"].items() for m, op in ops.items() if m in _METHODS]


def typed_success(op: dict[str, Any]) -> bool:
    """Whether some 2xx answer of ``op`` has a typed body: a model (``$ref``), an array of one, or text; or is
    204 No Content, which has no body to type (RFC 9110 §15.3.5)."""
    for status, response in op["responses"].items():
        if not status.startswith("2"):
            continue
        if status == "204" and not response.get("content"):
            return True
        for content in (response.get("content") or {}).values():
            schema = content.get("schema") or {}
            if "$ref" in schema or schema.get("type") == "string" or "$ref" in (schema.get("items") or {}):
                return True
    return False


def error_problems(op: dict[str, Any]) -> list[str]:
    """What is wrong with the error answers of ``op``: a missing common status or one not ``ErrorBody``."""
    responses = op["responses"]
    needed = {"422", "500"} | ({"400", "413"} if "requestBody" in op else set()) | (
        {"401"} if op.get("security") else set())
    problems = [f"no {s}" for s in sorted(needed - set(responses))]
    for status, response in responses.items():
        if status[0] in "45":
            schema = (response.get("content") or {}).get("application/json", {}).get("schema") or {}
            if schema.get("$ref") != _ERROR_REF:
                problems.append(f"{status} is not ErrorBody")
    return problems


@pytest.fixture
def doc(api: Any) -> dict[str, Any]:
    """The served document, as a generator downloads it."""
    r = api.get("/openapi.json")
    assert r.status_code == 200
    body: dict[str, Any] = r.json()
    return body


def test_every_operation_declares_a_typed_success_answer(doc: dict[str, Any]) -> None:
    untyped = sorted((m, p) for m, p, op in operations(doc) if not typed_success(op))
    assert untyped == [], "type these operations' success answers (docs/api.md, 'Declaring')"
    assert len(operations(doc)) > 100, "the walk found the document's operations"


def test_every_operation_answers_errors_in_the_nodes_body(doc: dict[str, Any]) -> None:
    wrong = {f"{m} {p}": e for m, p, op in operations(doc) if (e := error_problems(op))}
    assert wrong == {}


def test_the_framework_validation_error_appears_nowhere(doc: dict[str, Any]) -> None:
    text = json.dumps(doc)
    assert "HTTPValidationError" not in text
    assert "ValidationError" not in doc["components"]["schemas"]


def test_routes_that_need_a_token_carry_the_bearer_scheme_and_the_others_do_not(doc: dict[str, Any]) -> None:
    assert doc["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "bearerFormat": "mn_ token",
        "description": doc["components"]["securitySchemes"]["bearer"]["description"]}
    secured = {(m, p) for m, p, op in operations(doc) if op.get("security") == [{"bearer": []}]}
    assert ("POST", "/api/mail") in secured and ("GET", "/metrics") in secured
    assert ("GET", "/api/health") not in secured
    # The header the scheme describes is not also a free parameter (a generator would ask for it twice).
    assert all(p["name"].lower() != "authorization" for _, _, op in operations(doc) for p in op.get("parameters", []))


def test_ids_carry_their_pattern(doc: dict[str, Any]) -> None:
    param = doc["paths"]["/api/mail/{send_id}"]["get"]["parameters"][0]
    assert param["schema"]["pattern"] == "^snd_[0-9A-HJKMNP-TV-Z]{26}$"
    mail = doc["components"]["schemas"]["Mail"]["properties"]
    assert mail["id"]["pattern"] == "^snd_[0-9A-HJKMNP-TV-Z]{26}$"
    assert mail["mailbox_id"]["pattern"] == "^mbx_[0-9A-HJKMNP-TV-Z]{26}$"


def test_metrics_are_documented_as_text(doc: dict[str, Any]) -> None:
    assert list(doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"]) == ["text/plain"]


def test_no_two_models_share_a_name(doc: dict[str, Any]) -> None:
    """Two answer models of one name are renamed by the framework to their module paths
    (``mailnode__api__x__Name``), and a generator then drops every operation that uses them: one model, one
    name (define it once and import it)."""
    renamed = sorted(name for name in doc["components"]["schemas"] if "__" in name)
    assert renamed == [], "models defined twice under one name"
