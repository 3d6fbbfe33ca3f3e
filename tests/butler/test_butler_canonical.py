"""Canonical form and digests: RFC 8785 over the parsed document, SHA-256 over the source."""

from __future__ import annotations

import json

import pytest

from mailnode import budgets
from mailnode.butler.canonical import NotCanonical, canonical_json, non_canonical_values, source_sha256
from mailnode.butler.check import check

from .conftest import codes, program

VALIDATE = {"id": "v", "type": "validate", "value": "${event.score}",
            "schema": {"type": "object",
                       "properties": {"score": {"minimum": 0.5, "maximum": 2.75}, "tag": {"const": None}}},
            "next": None}


def test_reformatting_changes_the_source_digest_and_not_the_ast_digest() -> None:
    doc = program(VALIDATE)
    compact = check(json.dumps(doc, separators=(",", ":")), pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    pretty = check(json.dumps(doc, indent=4, sort_keys=True), pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert compact.ok and pretty.ok
    assert compact.ast_sha256 == pretty.ast_sha256
    assert compact.source_sha256 != pretty.source_sha256


def test_the_source_digest_is_over_the_bytes_as_submitted() -> None:
    text = json.dumps(program())
    assert (check(text, pot=budgets.BUTLER_RUN_POT_STATEMENTS).source_sha256
            == check(text.encode(), pot=budgets.BUTLER_RUN_POT_STATEMENTS).source_sha256
            == source_sha256(text))


def test_a_different_program_has_a_different_ast_digest() -> None:
    assert (check(json.dumps(program()), pot=budgets.BUTLER_RUN_POT_STATEMENTS).ast_sha256
            != check(json.dumps(program(VALIDATE)), pot=budgets.BUTLER_RUN_POT_STATEMENTS).ast_sha256)


def test_fractions_and_null_inside_a_validate_schema_survive() -> None:
    result = check(json.dumps(program(VALIDATE)), pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert result.ast_json is not None
    assert b'"minimum":0.5' in result.ast_json and b'"maximum":2.75' in result.ast_json
    assert b'"tag":{"const":null}' in result.ast_json


def test_absent_and_null_edges_are_the_same_program() -> None:
    with_null = check(json.dumps(program(VALIDATE)), pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    without = check(json.dumps(program({k: v for k, v in VALIDATE.items() if k != "next"})),
                    pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert with_null.ast_sha256 == without.ast_sha256
    assert with_null.ast_json is not None and b'"next"' not in with_null.ast_json


def test_an_integral_float_bound_is_the_same_program_as_the_integer() -> None:
    body = {"id": "t", "type": "transform", "as": "x", "value": "v"}
    loop = {"id": "each", "type": "foreach", "over": "${event.x}", "as": "i", "maxItems": 5, "body": "t"}
    a = check(json.dumps(program(loop, body)), pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    b = check(json.dumps(program(dict(loop, maxItems=5.0), body)), pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert a.ast_sha256 == b.ast_sha256 and a.source_sha256 != b.source_sha256


def test_the_canonical_bytes_sort_keys_by_utf16_code_units() -> None:
    assert canonical_json({"ａ": 1, "😀": 2, "b": 3.0}) == '{"b":3,"😀":2,"ａ":1}'.encode()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), 2**53, -(2**53), "\ud800"])
def test_values_without_a_canonical_form_raise_and_are_located(value: object) -> None:
    with pytest.raises(NotCanonical):
        canonical_json({"a": [1, {"b": value}]})
    assert [o.pointer for o in non_canonical_values({"a": [1, {"b": value}]})] == ["/a/1/b"]


def test_the_largest_safe_integer_is_canonical() -> None:
    assert canonical_json(2**53 - 1) == b"9007199254740991"
    assert non_canonical_values({"n": 2**53 - 1}) == []


def test_the_checker_turns_each_offending_value_into_a_finding() -> None:
    text = json.dumps(program(dict(VALIDATE, schema={"minimum": 0, "maximum": 1})))
    text = text.replace('"minimum": 0', '"minimum": NaN').replace('"maximum": 1', '"maximum": 1e999')
    result = check(text, pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert codes(result) == ["E_BUTLER_NOT_CANONICAL", "E_BUTLER_NOT_CANONICAL"]
    assert "/schema/minimum" in result.findings[0].what and "/schema/maximum" in result.findings[1].what
