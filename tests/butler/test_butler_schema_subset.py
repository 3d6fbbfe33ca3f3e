"""validate's JSON Schema subset: the keyword tables, and validation once a schema is inside."""

from __future__ import annotations

from typing import Any

import pytest

from mailnode.butler.schema_subset import ANNOTATIONS, HONOURED, SchemaSubsetError, problems, validate

HONOURED_EXAMPLES: dict[str, Any] = {
    "type": "object", "enum": ["a", 1, None], "const": None, "required": ["a"],
    "properties": {"a": {"type": "string"}}, "additionalProperties": False, "items": {"type": "integer"},
    "minItems": 1, "maxItems": 3, "minLength": 1, "maxLength": 9, "minimum": 0.5, "maximum": 10,
}
ANNOTATION_EXAMPLES: dict[str, Any] = {
    "title": "t", "description": "d", "$schema": "https://json-schema.org/draft/2020-12/schema",
    "default": 1, "examples": [1],
}
REFUSED: dict[str, Any] = {
    "pattern": "^a", "format": "email", "$ref": "#/x", "allOf": [{}], "anyOf": [{}], "oneOf": [{}], "not": {},
    "if": {}, "then": {}, "else": {}, "patternProperties": {}, "propertyNames": {}, "dependentRequired": {},
    "uniqueItems": True, "multipleOf": 2, "exclusiveMinimum": 0, "exclusiveMaximum": 9, "$defs": {},
    "contains": {}, "prefixItems": [], "unevaluatedProperties": False, "minProperties": 1, "maximun": 3,
}


def test_the_tables_are_the_spec_s() -> None:
    assert set(HONOURED_EXAMPLES) == HONOURED
    assert set(ANNOTATION_EXAMPLES) == ANNOTATIONS


@pytest.mark.parametrize("keyword", sorted(HONOURED_EXAMPLES))
def test_honoured_keywords_are_accepted(keyword: str) -> None:
    assert problems({keyword: HONOURED_EXAMPLES[keyword]}) == []


@pytest.mark.parametrize("keyword", sorted(ANNOTATION_EXAMPLES))
def test_annotation_keywords_are_accepted(keyword: str) -> None:
    assert problems({keyword: ANNOTATION_EXAMPLES[keyword]}) == []


@pytest.mark.parametrize("keyword", sorted(REFUSED))
def test_everything_else_is_refused_by_name(keyword: str) -> None:
    found = problems({"type": "object", keyword: REFUSED[keyword]})
    assert [(p.code, p.keyword) for p in found] == [("E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED", keyword)]


@pytest.mark.parametrize(
    ("schema", "code", "keyword"),
    [
        ({"type": ["string", "null"]}, "E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED", "type"),
        ({"additionalProperties": {"type": "string"}}, "E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED", "additionalProperties"),
        ({"items": [{"type": "string"}]}, "E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED", "items"),
        ({"type": "strng"}, "E_BUTLER_SCHEMA_TYPE_UNKNOWN", "type"),
        ({"type": 3}, "E_BUTLER_SCHEMA_TYPE_UNKNOWN", "type"),
        ({"properties": []}, "E_BUTLER_SCHEMA_MALFORMED", "properties"),
    ],
)
def test_keywords_in_a_form_the_subset_does_not_enforce(schema: dict[str, Any], code: str, keyword: str) -> None:
    assert [(p.code, p.keyword) for p in problems(schema)] == [(code, keyword)]


def test_a_nested_refusal_names_where_it_is() -> None:
    found = problems({"properties": {"email": {"type": "string", "format": "email"}}, "items": {"pattern": "x"}})
    assert [p.sentence() for p in found] == [
        "at /properties/email: keyword 'format' is not in the subset validate honours",
        "at /items: keyword 'pattern' is not in the subset validate honours",
    ]


def test_a_subschema_that_is_not_an_object_is_malformed() -> None:
    assert [p.code for p in problems({"items": True})] == ["E_BUTLER_SCHEMA_MALFORMED"]


def test_values_the_library_refuses_are_malformed() -> None:
    found = problems({"minLength": -1})
    assert [p.code for p in found] == ["E_BUTLER_SCHEMA_MALFORMED"]


SCHEMA = {"type": "object", "required": ["id", "subject"], "additionalProperties": False,
          "properties": {"id": {"type": "string"}, "subject": {"type": "string", "minLength": 1, "maxLength": 2},
                         "score": {"type": "number", "minimum": 0.5}, "tag": {"const": None}}}


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ({"id": "m", "subject": "hi"}, True),
        ({"id": "m", "subject": "😀😀"}, True),  # lengths count code points
        ({"id": "m", "subject": "😀😀😀"}, False),
        ({"id": "m", "subject": ""}, False),
        ({"id": "m"}, False),
        ({"id": "m", "subject": "hi", "extra": 1}, False),
        ({"id": "m", "subject": "hi", "score": 0.25}, False),
        ({"id": "m", "subject": "hi", "tag": None}, True),
        ({"id": "m", "subject": "hi", "tag": 0}, False),
        ({"id": 1, "subject": "hi"}, False),
        ([], False),
    ],
)
def test_validation_once_the_schema_is_inside(value: Any, ok: bool) -> None:
    assert (validate(value, SCHEMA) == []) is ok


def test_every_failure_is_reported() -> None:
    assert len(validate({"id": 1, "subject": "", "extra": 1}, SCHEMA)) == 3


def test_validation_refuses_a_schema_outside_the_subset_before_validating() -> None:
    with pytest.raises(SchemaSubsetError) as caught:
        validate("x", {"type": "string", "pattern": "^(a+)+$"})
    assert caught.value.code == "E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED"
    assert "pattern" in caught.value.what
