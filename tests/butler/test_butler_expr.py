"""The expression language: what it evaluates, what it refuses by name, and that it never raises otherwise."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mailnode.butler.expr import EXPR_CODES, ExprError, evaluate, evaluate_predicate, switch_key, truthy

STATE: dict[str, Any] = {
    "event": {"subject": "Invoice 42", "n": 3, "f": 1.5, "yes": True, "none": None, "tags": ["vip", 7],
              "reply_refusal": None, "from": "a@example.com", "nested": {"deep": {"x": "y"}}},
    "steps": {"msg": {"id": "msg_1"}},
    "butler": {"id": "btl_1", "versionId": "btv_1", "name": "ack"},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text", "plain text"),
        ("event.subject", "event.subject"),  # no ${: a literal, never a path
        ("Re: ${event.subject}", "Re: Invoice 42"),
        ("${event.tags}", ["vip", 7]),
        ("${event.none}", None),
        ("${ event.n }", 3),
        ("n=${event.n} f=${event.f} yes=${event.yes}", "n=3 f=1.5 yes=true"),
        ("${steps.msg.id}/${butler.id}", "msg_1/btl_1"),
        ("${event.nested.deep.x}", "y"),
        ("$ and } alone", "$ and } alone"),
    ],
)
def test_values(text: str, expected: Any) -> None:
    assert evaluate(text, STATE) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("event.subject contains 'Invoice'", True),
        ('event.subject contains "invoice"', False),
        ("event.tags contains 'vip'", True),
        ("event.tags contains 7", True),
        ("event.tags contains '7'", False),
        ("event.n == 3", True),
        ('event.n == "3"', False),
        ("event.yes == true", True),
        ("event.n != 3", False),
        ("event.reply_refusal == null", True),
        ("${event.from} == event.from", True),
        ("-3 != event.n", True),
        ("event.subject", "Invoice 42"),
        ("'a == b'", "a == b"),
        ("event.yes == 1", False),
    ],
)
def test_predicates(text: str, expected: Any) -> None:
    assert evaluate_predicate(text, STATE) == expected


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("event.n > 3", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("event.n >= 3", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("event.n < 3", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("event.yes && event.yes", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("event.yes || event.yes", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("!event.yes", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("event.yes and event.yes", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("event.n + 1 == 4", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("event.n - 1", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("event.n * 2", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("(event.n == 3)", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("lower(event.subject) == 'x'", "E_BUTLER_EXPR_FUNCTION_CALL"),
        ("event.tags[0] == 'vip'", "E_BUTLER_EXPR_INDEXING"),
        ("event.tags.0 == 'vip'", "E_BUTLER_EXPR_INDEXING"),
        ("event.tags.length == 2", "E_BUTLER_EXPR_LENGTH"),
        ("event.subject.length", "E_BUTLER_EXPR_LENGTH"),
        ("event.n == 3 == true", "E_BUTLER_EXPR_TOO_MANY_OPERATORS"),
        ("event.subject contains 'a' contains 'b'", "E_BUTLER_EXPR_TOO_MANY_OPERATORS"),
        ("== 3", "E_BUTLER_EXPR_EMPTY_OPERAND"),
        ("event.n ==", "E_BUTLER_EXPR_EMPTY_OPERAND"),
        ("", "E_BUTLER_EXPR_EMPTY_OPERAND"),
        ("event.n 3", "E_BUTLER_EXPR_MALFORMED"),
        ("'open", "E_BUTLER_EXPR_UNTERMINATED"),
        ("${event.n", "E_BUTLER_EXPR_UNTERMINATED"),
        ("org.rota == 1", "E_BUTLER_EXPR_UNKNOWN_ROOT"),
        ("event.missing == 1", "E_BUTLER_EXPR_UNRESOLVED"),
        ("event.n.x", "E_BUTLER_EXPR_UNRESOLVED"),
        ("1.5 == event.f", "E_BUTLER_EXPR_NOT_A_PATH"),
        ("99999999999999999999 == 1", "E_BUTLER_EXPR_INTEGER_OUT_OF_RANGE"),
        ("event.n contains 3", "E_BUTLER_EXPR_CONTAINS_TYPE"),
        ("event.subject contains 4", "E_BUTLER_EXPR_CONTAINS_TYPE"),
    ],
)
def test_predicates_refused_by_name(text: str, code: str) -> None:
    with pytest.raises(ExprError) as caught:
        evaluate_predicate(text, STATE)
    assert caught.value.code == code
    assert caught.value.detail["expression"] == text and caught.value.fix


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Re: ${event.missing}", "E_BUTLER_EXPR_UNRESOLVED"),
        ("Re: ${event.none}", "E_BUTLER_EXPR_NOT_PRIMITIVE"),
        ("Re: ${event.tags}", "E_BUTLER_EXPR_NOT_PRIMITIVE"),
        ("Re: ${event.nested}", "E_BUTLER_EXPR_NOT_PRIMITIVE"),
        ("${steps.nobody}", "E_BUTLER_EXPR_UNRESOLVED"),
        ("${event.n > 1}", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
        ("${event.n == 1}", "E_BUTLER_EXPR_NOT_A_PATH"),
        ("${len(event.tags)}", "E_BUTLER_EXPR_FUNCTION_CALL"),
        ("${event.tags[0]}", "E_BUTLER_EXPR_INDEXING"),
        ("${event.tags.length}", "E_BUTLER_EXPR_LENGTH"),
        ("${}", "E_BUTLER_EXPR_NOT_A_PATH"),
        ("x ${event.n", "E_BUTLER_EXPR_UNTERMINATED"),
        ("${env.secret}", "E_BUTLER_EXPR_UNKNOWN_ROOT"),
    ],
)
def test_values_refused_by_name(text: str, code: str) -> None:
    with pytest.raises(ExprError) as caught:
        evaluate(text, STATE)
    assert caught.value.code == code


def test_an_unresolved_path_is_never_interpolated_as_empty_or_none() -> None:
    with pytest.raises(ExprError):
        evaluate("Re: ${event.subjcet}", STATE)
    with pytest.raises(ExprError):
        evaluate("Re: ${event.none}", STATE)


def test_a_root_absent_from_the_state_does_not_resolve() -> None:
    with pytest.raises(ExprError) as caught:
        evaluate("${steps.x}", {"event": {}})
    assert caught.value.code == "E_BUTLER_EXPR_UNRESOLVED"


@pytest.mark.parametrize(("value", "expected"), [(None, False), (False, False), ("", False), (0, False), ([], False),
                                                 ({}, False), (True, True), ("x", True), (-1, True), ([0], True)])
def test_truthiness(value: Any, expected: bool) -> None:
    assert truthy(value) is expected


@pytest.mark.parametrize(("value", "expected"), [("a", "a"), (None, "null"), (True, "true"), (3, "3"), (1.5, "1.5")])
def test_switch_keys(value: Any, expected: str) -> None:
    assert switch_key(value) == expected


def test_a_switch_on_a_list_is_refused_rather_than_flattened() -> None:
    with pytest.raises(ExprError) as caught:
        switch_key(["a", "b"])
    assert caught.value.code == "E_BUTLER_EXPR_NOT_PRIMITIVE"


def test_every_code_is_stable_and_prefixed() -> None:
    assert all(code.startswith("E_BUTLER_EXPR_") for code in EXPR_CODES)
    assert len(set(EXPR_CODES)) == len(EXPR_CODES)


# --- property: the evaluator raises nothing but its own codes ---------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(string.ascii_lowercase + "_", max_size=6), inner, max_size=4),
    max_leaves=20,
)
states = st.fixed_dictionaries({}, optional={"event": json_values, "steps": json_values, "butler": json_values})
alphabet = st.sampled_from(list("${}.'\" =!<>&|()[]+-*/%,:") + ["event", "steps", "butler", "contains", "length",
                                                                   "subject", "tags", "and", "null", "true", "1"])
expression_texts = st.lists(alphabet, max_size=20).map("".join) | st.text(max_size=40)


@settings(max_examples=400)
@given(text=expression_texts, state=states)
def test_the_evaluator_raises_only_its_own_codes(text: str, state: dict[str, Any]) -> None:
    for fn in (evaluate, evaluate_predicate):
        try:
            fn(text, state)
        except ExprError as exc:
            assert exc.code in EXPR_CODES


@settings(max_examples=200)
@given(value=json_values)
def test_switch_keys_and_truthiness_raise_only_their_own_codes(value: Any) -> None:
    truthy(value)
    try:
        switch_key(value)
    except ExprError as exc:
        assert exc.code == "E_BUTLER_EXPR_NOT_PRIMITIVE"
