"""The checker parses every expression (issue 17 item 8): "checks OK" means no expression can fail to parse
at run time, whatever the run's values; what depends on the values is left to the run, and says so."""

from __future__ import annotations

import typing

import pytest

from mailnode.butler import expr
from mailnode.butler.ast import NODE_MODELS, Node

from .conftest import CONTENT_CAP, SEND_CAP, codes, program, run_check

STOP = {"id": "done", "type": "stop", "reason": "end"}


def _guard(when: str) -> dict[str, object]:
    return program({"id": "g", "type": "guard", "when": when, "then": "done", "otherwise": None}, STOP)


def _transform(value: str) -> dict[str, object]:
    return program({"id": "t", "type": "transform", "as": "v", "value": value, "next": "done"}, STOP)


@pytest.mark.parametrize(("when", "code"), [
    ("event.subject == 'a' && event.from_addr == 'b'", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
    ("event.subject == 'a' || event.subject == 'b'", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
    ("event.size > 3", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
    ("!event.subject", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
    ("event.subject and event.subject", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
    ("(event.subject)", "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"),
    ("lower(event.subject) == 'a'", "E_BUTLER_EXPR_FUNCTION_CALL"),
    ("event.to[0] == 'a'", "E_BUTLER_EXPR_INDEXING"),
    ("event.subject == 'a' == 'b'", "E_BUTLER_EXPR_TOO_MANY_OPERATORS"),
    ("== 'a'", "E_BUTLER_EXPR_EMPTY_OPERAND"),
    ("event.subject 'a'", "E_BUTLER_EXPR_MALFORMED"),
    ("event.subject == 'a", "E_BUTLER_EXPR_UNTERMINATED"),
    ("event.n == 99999999999999999999", "E_BUTLER_EXPR_INTEGER_OUT_OF_RANGE"),
    ("evnt.subject == 'a'", "E_BUTLER_EXPR_UNKNOWN_ROOT"),
    ("${evnt.subject} == 'a'", "E_BUTLER_EXPR_UNKNOWN_ROOT"),
])
def test_a_guard_whose_expression_cannot_parse_does_not_check(when: str, code: str) -> None:
    result = run_check(_guard(when))
    assert not result.ok
    assert codes(result) == [code]
    finding = result.findings[0]
    assert finding.node == "g" and "g.when" in finding.what
    assert "docs/butlers.md#expressions" in finding.fix and "butler check" not in finding.fix


@pytest.mark.parametrize(("value", "code"), [
    ("Hi ${event.subject", "E_BUTLER_EXPR_UNTERMINATED"),
    ("${evnt.subject}", "E_BUTLER_EXPR_UNKNOWN_ROOT"),
    ("Re: ${event.subject == 'a'}", "E_BUTLER_EXPR_NOT_A_PATH"),
    ("${lower(event.subject)}", "E_BUTLER_EXPR_FUNCTION_CALL"),
])
def test_a_value_whose_expression_cannot_parse_does_not_check(value: str, code: str) -> None:
    assert codes(run_check(_transform(value))) == [code]


def test_a_switch_on_an_unsupported_operator_does_not_check() -> None:
    doc = program({"id": "s", "type": "switch", "on": "event.a && event.b", "cases": [{"equals": "x", "next": "done"}],
                   "default": None}, STOP)
    assert codes(run_check(doc)) == ["E_BUTLER_EXPR_OPERATOR_UNSUPPORTED"]


def test_every_bad_expression_of_a_program_is_reported_not_only_the_first() -> None:
    doc = program(
        {"id": "d", "type": "draft", "mailboxId": "${event.mailbox}", "subject": "Re: ${event.subject == 'a'}",
         "body": "${event.body", "inReplyTo": "${event.message_id}", "as": "dr", "next": "p"},
        {"id": "p", "type": "mail.send.propose", "draft": "${steps.dr && 1}", "next": None},
        capabilities=[SEND_CAP])
    result = run_check(doc)
    assert [(f.code, f.node) for f in result.findings] == [
        ("E_BUTLER_EXPR_NOT_A_PATH", "d"), ("E_BUTLER_EXPR_UNTERMINATED", "d"),
        ("E_BUTLER_EXPR_OPERATOR_UNSUPPORTED", "p")]


@pytest.mark.parametrize("when", [
    "event.subject == 'a'", "${event.subject} contains 'refund'", "event.flag", "steps.c.state != 'closed'",
    "event.n == -3", "butler.name == \"x\"", "event.to contains ${event.from_addr}",
])
def test_expressions_in_the_language_check(when: str) -> None:
    assert run_check(_guard(when)).ok


@pytest.mark.parametrize("value", ["plain text", "${event.subject}", "Re: ${event.subject} (${butler.name})",
                                   "$ {not a path}", "a } b"])
def test_values_in_the_language_check(value: str) -> None:
    assert run_check(_transform(value)).ok


def test_what_depends_on_the_values_is_left_to_the_run_with_a_fix_that_is_not_the_checker() -> None:
    # event.subject.length checks (event.subject might be an object); on a string it faults at run time.
    doc = _guard("event.subject.length == 3")
    assert run_check(doc).ok
    with pytest.raises(expr.ExprError) as caught:
        expr.evaluate_predicate("event.subject.length == 3", {"event": {"subject": "abc"}})
    assert caught.value.code == "E_BUTLER_EXPR_LENGTH"
    assert "butler check" not in caught.value.fix and "simulate" in caught.value.fix


def _text(annotation: object) -> bool:
    """str, Annotated[str, ...] or an optional one of those."""
    if annotation is str:
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        return _text(typing.get_args(annotation)[0])
    args = typing.get_args(annotation)
    return type(None) in args and any(_text(a) for a in args if a is not type(None))


@pytest.mark.parametrize("node_type", sorted(NODE_MODELS))
def test_every_expression_field_of_every_node_type_is_parsed(node_type: str) -> None:
    # Total: the fields listed as expressions are exactly the fields typed as expressions, so a new
    # expression parameter cannot skip the checker.
    model: type[Node] = NODE_MODELS[node_type]
    typed = {name for name, f in model.model_fields.items()
             if _text(f.annotation) and name not in ("id", "type", "as_", "collect_as", "default", *model.EDGES)
             and not any(getattr(m, "pattern", None) for m in f.metadata)}
    typed -= {"reason"}  # stop's reason is a token, not an expression
    assert set(model.PREDICATES) | set(model.VALUES) == typed


def test_a_program_with_content_read_and_a_bad_lookup_id_expression() -> None:
    doc = program({"id": "m", "type": "lookup", "entity": "message", "entityId": "${event.message_id",
                   "as": "msg", "next": None}, capabilities=[CONTENT_CAP])
    assert codes(run_check(doc)) == ["E_BUTLER_EXPR_UNTERMINATED"]
