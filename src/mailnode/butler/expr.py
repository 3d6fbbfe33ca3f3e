"""The Butler expression language: paths, interpolation and one comparison. Pure.

Seed 003 "The expression language, in full"; spec/butler.md §4 and Part A §3. Three forms and
nothing else:

- a **path** over the roots ``event``, ``steps`` and ``butler``: ``event.subject``, ``steps.msg.id``;
- an **interpolation** (``evaluate``): ``"Re: ${event.subject}"`` is a string; an expression that
  is exactly one ``${path}`` yields the raw value (a list, an object, null); text with no ``${`` is
  a literal string, never a path;
- a **comparison** (``evaluate_predicate``, used by ``guard.when`` and ``switch.on``) with at most
  one of ``==``, ``!=``, ``contains``; operands are a quoted string (``'...'`` or ``"..."``, no
  escapes), an integer, ``true``, ``false``, ``null``, a path or ``${path}``.

Anything else is refused by name with a stable code: ``>``/``<``/``&&``/``||``/``!``/arithmetic
(``E_BUTLER_EXPR_OPERATOR_UNSUPPORTED``), ``f(x)`` (``E_BUTLER_EXPR_FUNCTION_CALL``), ``a[0]`` or a
segment applied to a list (``E_BUTLER_EXPR_INDEXING``), ``.length`` of a list or string
(``E_BUTLER_EXPR_LENGTH``). A path that does not resolve faults (``E_BUTLER_EXPR_UNRESOLVED``); it is
never interpolated as ``""`` or ``"None"``. The evaluator reads only the state it is given (no
clock, randomness or I/O) and raises nothing but ``ExprError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mailnode import budgets
from mailnode.errors import MailnodeError

#: The closed set of roots a path may start from.
ROOTS = ("event", "steps", "butler")

#: Every code ``ExprError`` may carry.
EXPR_CODES = (
    "E_BUTLER_EXPR_NOT_A_PATH",
    "E_BUTLER_EXPR_UNKNOWN_ROOT",
    "E_BUTLER_EXPR_UNRESOLVED",
    "E_BUTLER_EXPR_INDEXING",
    "E_BUTLER_EXPR_LENGTH",
    "E_BUTLER_EXPR_FUNCTION_CALL",
    "E_BUTLER_EXPR_OPERATOR_UNSUPPORTED",
    "E_BUTLER_EXPR_TOO_MANY_OPERATORS",
    "E_BUTLER_EXPR_EMPTY_OPERAND",
    "E_BUTLER_EXPR_MALFORMED",
    "E_BUTLER_EXPR_UNTERMINATED",
    "E_BUTLER_EXPR_INTEGER_OUT_OF_RANGE",
    "E_BUTLER_EXPR_NOT_PRIMITIVE",
    "E_BUTLER_EXPR_CONTAINS_TYPE",
)

_PATH = re.compile(r"[a-z][a-z0-9_]*(?:\.[A-Za-z0-9_]+)*")
_INTEGER = re.compile(r"-?[0-9]+")
_FIX = ("Rewrite the expression in the language of docs/butlers.md#expressions; mailnode butler check FILE "
        "reports every expression that does not parse.")
#: The codes that depend on the run's values, so the checker cannot report them: the fix points at the
#: values (the run's facts and bindings), not at the checker, which passed the program.
RUN_TIME_CODES = frozenset({"E_BUTLER_EXPR_UNRESOLVED", "E_BUTLER_EXPR_INDEXING", "E_BUTLER_EXPR_LENGTH",
                            "E_BUTLER_EXPR_NOT_PRIMITIVE", "E_BUTLER_EXPR_CONTAINS_TYPE"})
_FIX_RUN_TIME = ("The expression parses; this run's values did not fit it. Read the run's facts and bindings "
                 "(GET /api/butler-runs/{id}), then change the path or route around it with a guard or switch; "
                 "a dry run over the same run (POST /api/butlers/{id}/simulate) shows the change before publishing.")
_FORMS = "The language has paths, ${path} interpolation and one comparison with ==, != or contains."


class ExprError(MailnodeError):
    """A fault in an expression; ``code`` is one of ``EXPR_CODES``, ``detail["expression"]`` the text.

    At run time the engine ends the run ``failed`` with the code as its reason.
    """


def _fault(code: str, text: str, what: str, why: str = _FORMS, **detail: Any) -> ExprError:
    fix = _FIX_RUN_TIME if code in RUN_TIME_CODES else _FIX
    return ExprError(code=code, what=what, why=why, fix=fix, status=422, detail={"expression": text, **detail})


# --- paths ------------------------------------------------------------------------------------------


def is_path(text: str) -> bool:
    """True when ``text`` has the shape of a path (``root.segment...``), whatever its root."""
    return _PATH.fullmatch(text) is not None


def _path_shape(path: str, shown: str) -> None:
    """What is wrong with ``path`` whatever the state: its shape and its root (``resolve``'s first half)."""
    if not is_path(path):
        _refuse_construct(path, shown)
        raise _fault("E_BUTLER_EXPR_NOT_A_PATH", shown, f"{path!r} is not a path.",
                     "A path is a root (event, steps, butler) then dot-separated names: event.subject.")
    root = path.split(".")[0]
    if root not in ROOTS:
        raise _fault("E_BUTLER_EXPR_UNKNOWN_ROOT", shown, f"{root!r} is not a root.",
                     f"A path starts at one of {', '.join(ROOTS)}.", root=root)


def resolve(path: str, state: Mapping[str, Any], text: str | None = None) -> Any:
    """The value at ``path`` in ``state`` (a mapping of the roots to their values).

    Raises ``ExprError``: ``E_BUTLER_EXPR_NOT_A_PATH`` (bad shape, with a construct named where one
    is recognised), ``E_BUTLER_EXPR_UNKNOWN_ROOT``, ``E_BUTLER_EXPR_UNRESOLVED`` (a missing key or a
    segment applied to a scalar), ``E_BUTLER_EXPR_INDEXING`` (a segment applied to a list) and
    ``E_BUTLER_EXPR_LENGTH`` (``length`` of a list or string).
    """
    shown = path if text is None else text
    _path_shape(path, shown)
    segments = path.split(".")
    root = segments[0]
    if root not in state:
        raise _fault("E_BUTLER_EXPR_UNRESOLVED", shown, f"{path} does not resolve: {root} is absent.",
                     "A path that does not resolve faults rather than becoming an empty string.", path=path)
    cursor: Any = state[root]
    walked = root
    for segment in segments[1:]:
        if isinstance(cursor, Mapping):
            if segment not in cursor:
                raise _fault("E_BUTLER_EXPR_UNRESOLVED", shown,
                             f"{path} does not resolve: {walked} has no {segment!r}.",
                             "A path that does not resolve faults rather than becoming an empty string.", path=path)
            cursor = cursor[segment]
        elif segment == "length" and isinstance(cursor, (list, tuple, str)):
            raise _fault("E_BUTLER_EXPR_LENGTH", shown, f"{walked}.length: length is not in the language.",
                         "There are no functions or properties of lists and strings; "
                         "bound the list with a loop's maxItems.",
                         path=path)
        elif isinstance(cursor, (list, tuple)):
            raise _fault("E_BUTLER_EXPR_INDEXING", shown, f"{walked}.{segment}: indexing is not in the language.",
                         f"{walked} is a list; a list is walked with map or foreach, never indexed.", path=path)
        else:
            raise _fault("E_BUTLER_EXPR_UNRESOLVED", shown, f"{path} does not resolve: {walked} is not an object.",
                         "Only an object has named members.", path=path)
        walked = f"{walked}.{segment}"
    return cursor


# --- interpolation ----------------------------------------------------------------------------------


def _primitive_text(value: Any, inner: str, text: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value)
    kind = "null" if value is None else type(value).__name__
    raise _fault("E_BUTLER_EXPR_NOT_PRIMITIVE", text, f"${{{inner}}} is {kind}, which cannot be written into text.",
                 "Only a string, a number or a boolean is interpolated; null, lists and objects are not.")


def evaluate(text: str, state: Mapping[str, Any]) -> Any:
    """Evaluate a value field: literal text, one whole ``${path}`` (raw value) or interpolated text.

    Numbers are written as JSON writes them and booleans as ``true``/``false``. Raises ``ExprError``
    (``E_BUTLER_EXPR_UNTERMINATED``, ``E_BUTLER_EXPR_NOT_PRIMITIVE`` and every path code).
    """
    if "${" not in text:
        return text
    whole = re.fullmatch(r"\$\{([^}]*)\}", text)
    if whole:
        inner = whole.group(1).strip()
        return resolve(inner, state, text)
    out: list[str] = []
    for literal, inner in _pieces(text):
        out.append(literal)
        if inner is not None:
            out.append(_primitive_text(resolve(inner, state, text), inner, text))
    return "".join(out)


def _pieces(text: str) -> list[tuple[str, str | None]]:
    """Split interpolated text into ``(literal, path or None)`` pairs; ``E_BUTLER_EXPR_UNTERMINATED``."""
    out: list[tuple[str, str | None]] = []
    pos = 0
    while True:
        start = text.find("${", pos)
        if start < 0:
            out.append((text[pos:], None))
            return out
        end = text.find("}", start + 2)
        if end < 0:
            raise _fault("E_BUTLER_EXPR_UNTERMINATED", text, "A ${ is never closed by }.")
        out.append((text[pos:start], text[start + 2 : end].strip()))
        pos = end + 1


def parse_value(text: str) -> None:
    """Raise the ``ExprError`` that ``evaluate(text, state)`` would raise for EVERY state, if any.

    The checker calls this on every value field (seed 003 "The expression language, in full": a
    program that checks has expressions that parse). Raised here: ``E_BUTLER_EXPR_UNTERMINATED``,
    ``E_BUTLER_EXPR_NOT_A_PATH`` (with the construct named where one is recognised) and
    ``E_BUTLER_EXPR_UNKNOWN_ROOT``. What depends on the state (``UNRESOLVED``, ``INDEXING`` and
    ``LENGTH`` of a list, ``NOT_PRIMITIVE``) is left to the run.
    """
    if "${" not in text:
        return
    whole = re.fullmatch(r"\$\{([^}]*)\}", text)
    if whole:
        _path_shape(whole.group(1).strip(), text)
        return
    for _, inner in _pieces(text):
        if inner is not None:
            _path_shape(inner, text)


def parse_predicate(text: str) -> None:
    """Raise the ``ExprError`` that ``evaluate_predicate(text, state)`` would raise for EVERY state, if any.

    For ``guard.when`` and ``switch.on``: every operator the language lacks
    (``E_BUTLER_EXPR_OPERATOR_UNSUPPORTED``, ``E_BUTLER_EXPR_FUNCTION_CALL``, ``E_BUTLER_EXPR_INDEXING``
    for ``[ ]``), ``E_BUTLER_EXPR_TOO_MANY_OPERATORS``, ``E_BUTLER_EXPR_EMPTY_OPERAND``,
    ``E_BUTLER_EXPR_MALFORMED``, ``E_BUTLER_EXPR_UNTERMINATED``, ``E_BUTLER_EXPR_INTEGER_OUT_OF_RANGE``
    and each operand's path shape and root. ``E_BUTLER_EXPR_CONTAINS_TYPE`` depends on the values and
    is left to the run.
    """
    tokens = _tokens(text)
    op_positions = [i for i, t in enumerate(tokens) if t.kind == "op"]
    _too_many_operators(op_positions, text)
    sides = [tokens] if not op_positions else [tokens[: op_positions[0]], tokens[op_positions[0] + 1 :]]
    for side in sides:
        _operand(side, text, None)


# --- comparison -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # "str", "word", "ref", "op"
    text: str


_UNSUPPORTED_OPERATORS = (">=", "<=", "&&", "||", "=>", ">", "<", "!", "+", "*", "/", "%", "=", "&", "|", "?", ":",
                          "^", "~")
_WORD_OPERATORS = {"and": "&&", "or": "||", "not": "!"}
_SPECIAL = set(" \t\r\n'\"()[]") | {c for op in _UNSUPPORTED_OPERATORS for c in op} | {"-"}


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "'\"":
            end = text.find(c, i + 1)
            if end < 0:
                raise _fault("E_BUTLER_EXPR_UNTERMINATED", text, f"A string opened with {c} is never closed.")
            out.append(_Token("str", text[i + 1 : end]))
            i = end + 1
        elif text.startswith("${", i):
            end = text.find("}", i + 2)
            if end < 0:
                raise _fault("E_BUTLER_EXPR_UNTERMINATED", text, "A ${ is never closed by }.")
            out.append(_Token("ref", text[i + 2 : end]))
            i = end + 1
        elif text.startswith("==", i) or text.startswith("!=", i):
            out.append(_Token("op", text[i : i + 2]))
            i += 2
        elif c == "-" and i + 1 < n and text[i + 1].isdigit() and (not out or out[-1].kind == "op"):
            j = i + 1
            while j < n and text[j].isdigit():
                j += 1
            out.append(_Token("word", text[i:j]))
            i = j
        elif c in "[]":
            raise _fault("E_BUTLER_EXPR_INDEXING", text, "Indexing with [ ] is not in the language.",
                         "Lists are walked with map or foreach, never indexed.")
        elif c == "(":
            if out and out[-1].kind == "word" and i > 0 and not text[i - 1].isspace():
                raise _fault("E_BUTLER_EXPR_FUNCTION_CALL", text,
                             f"{out[-1].text}(...) is a function call, which is not in the language.",
                             "The language has no functions.", function=out[-1].text)
            raise _fault("E_BUTLER_EXPR_OPERATOR_UNSUPPORTED", text, "Parentheses are not in the language.",
                         "There is no grouping: an expression has at most one operator.", operator="(")
        elif c == ")":
            raise _fault("E_BUTLER_EXPR_OPERATOR_UNSUPPORTED", text, "Parentheses are not in the language.",
                         "There is no grouping: an expression has at most one operator.", operator=")")
        elif c in _SPECIAL:
            op = next((o for o in _UNSUPPORTED_OPERATORS if text.startswith(o, i)), c)
            raise _fault("E_BUTLER_EXPR_OPERATOR_UNSUPPORTED", text, f"The operator {op} is not in the language.",
                         _FORMS, operator=op)
        else:
            j = i
            while j < n and text[j] not in _SPECIAL and not text.startswith("${", j) and not text[j].isspace():
                j += 1
            if j == i:
                j = i + 1
            word = text[i:j]
            if word == "contains":
                out.append(_Token("op", word))
            elif word in _WORD_OPERATORS:
                raise _fault("E_BUTLER_EXPR_OPERATOR_UNSUPPORTED", text, f"The operator {word} is not in the language.",
                             _FORMS, operator=word)
            else:
                out.append(_Token("word", word))
            i = j
    return out


def _refuse_construct(inner: str, text: str) -> None:
    """Name a construct that is not a path (an operator, a call, indexing) if one is recognised."""
    tokens = _tokens(inner)
    ops = [t for t in tokens if t.kind == "op"]
    if ops:
        raise _fault("E_BUTLER_EXPR_NOT_A_PATH", text,
                     f"${{{inner}}} holds the operator {ops[0].text}, but ${{...}} holds only a path.",
                     "A comparison belongs in guard.when or switch.on, written without ${...} around it.")


def _operand(tokens: list[_Token], text: str, state: Mapping[str, Any] | None) -> Any:
    """One operand's value; with ``state`` None, only its shape is checked (``parse_predicate``)."""
    if not tokens:
        raise _fault("E_BUTLER_EXPR_EMPTY_OPERAND", text, "An operand is empty.",
                     "Each side of an operator needs a value.")
    if len(tokens) > 1:
        raise _fault("E_BUTLER_EXPR_MALFORMED", text,
                     f"{' '.join(t.text for t in tokens)!r} is several values with no operator between them.", _FORMS)
    token = tokens[0]
    if token.kind == "str":
        return token.text
    if token.kind == "ref":
        if state is None:
            return _path_shape(token.text.strip(), text)
        return resolve(token.text.strip(), state, text)
    word = token.text
    if word == "true":
        return True
    if word == "false":
        return False
    if word == "null":
        return None
    if _INTEGER.fullmatch(word):
        digits = word.lstrip("-")
        if len(digits) > len(str(budgets.JSON_SAFE_INTEGER_MAX)) or int(digits) > budgets.JSON_SAFE_INTEGER_MAX:
            raise _fault("E_BUTLER_EXPR_INTEGER_OUT_OF_RANGE", text, f"{word} is beyond ±(2^53 - 1).",
                         "JSON numbers carry integers exactly only up to 2^53 - 1 (RFC 7493 §2.2).")
        return int(word)
    if state is None:
        return _path_shape(word, text)
    return resolve(word, state, text)


def same(a: Any, b: Any) -> bool:
    """Strict JSON equality: no coercion (``"3" != 3``, ``true != 1``); ``1 == 1.0`` as in JSON."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return False


def _too_many_operators(op_positions: list[int], text: str) -> None:
    if len(op_positions) > 1:
        raise _fault("E_BUTLER_EXPR_TOO_MANY_OPERATORS", text,
                     f"The expression has {len(op_positions)} operators; the language allows one.",
                     "There is no precedence and no boolean combinator; chain guard nodes instead.")


def evaluate_predicate(text: str, state: Mapping[str, Any]) -> Any:
    """Evaluate ``guard.when`` or ``switch.on``: one operand, or two around one operator.

    Returns a bool for ``==``, ``!=`` and ``contains`` (string in string, or strict membership in a
    list), else the operand's value. Raises ``ExprError`` with any code in ``EXPR_CODES``.
    """
    tokens = _tokens(text)
    op_positions = [i for i, t in enumerate(tokens) if t.kind == "op"]
    _too_many_operators(op_positions, text)
    if not op_positions:
        return _operand(tokens, text, state)
    at = op_positions[0]
    op = tokens[at].text
    left = _operand(tokens[:at], text, state)
    right = _operand(tokens[at + 1 :], text, state)
    if op == "==":
        return same(left, right)
    if op == "!=":
        return not same(left, right)
    if isinstance(left, str) and isinstance(right, str):
        return right in left
    if isinstance(left, (list, tuple)):
        return any(same(item, right) for item in left)
    raise _fault("E_BUTLER_EXPR_CONTAINS_TYPE", text, "contains needs a string on both sides, or a list on the left.",
                 f"The left side is {type(left).__name__} and the right side is {type(right).__name__}.")


def truthy(value: Any) -> bool:
    """A guard's reading of a value: false for false, null, "", 0, [] and {}; true otherwise."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, (str, list, tuple, Mapping)):
        return len(value) > 0
    return True


def switch_key(value: Any, text: str = "") -> str:
    """The string a ``switch`` compares with each case's ``equals``: text as is, JSON for the rest.

    ``null`` is ``"null"``, booleans ``"true"``/``"false"``, numbers as JSON writes them. A list or an
    object raises ``E_BUTLER_EXPR_NOT_PRIMITIVE`` rather than being flattened into text.
    """
    if value is None:
        return "null"
    return _primitive_text(value, text, text)
