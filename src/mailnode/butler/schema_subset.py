"""The JSON Schema subset a ``validate`` node honours, and validation against it.

Seed 003 ("validate honours type, enum, const, ..."), spec/butler.md §4 and Part A §4. A validator
that ignored a keyword it did not understand would pass everything while reading as though it
checked something, so every keyword outside ``HONOURED`` and ``ANNOTATIONS`` is refused by name, and
so is a keyword in a form the subset does not enforce (an array-valued ``type``, an object-valued
``additionalProperties``, the array form of ``items``). ``pattern`` and ``format`` are absent on
purpose: a regular expression compiled from a stored program is a denial of service.

Once ``problems(schema)`` is empty, ``validate`` checks a value with ``jsonschema``'s Draft 2020-12
validator. String lengths count Unicode code points (Python ``len``), and ``1.0`` counts as an
integer, as JSON Schema says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from mailnode.errors import MailnodeError

#: Keywords ``validate`` enforces.
HONOURED = frozenset(
    {
        "type", "enum", "const", "required", "properties", "additionalProperties", "items",
        "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
    }
)
#: Keywords accepted and ignored: they say something to a reader, not to the validator.
ANNOTATIONS = frozenset({"title", "description", "$schema", "default", "examples"})
#: The names ``type`` may take (one string, never an array).
TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})

_FIX = "Use only the keywords listed in docs/butlers.md#validate, then check it: mailnode butler check FILE."


@dataclass(frozen=True)
class SchemaProblem:
    """One refusal: the code, the JSON Pointer of the subschema, the keyword and why."""

    code: str
    pointer: str
    keyword: str | None
    why: str

    def sentence(self) -> str:
        """``at /properties/n: keyword 'pattern' ...`` in one line."""
        where = self.pointer or "/"
        named = f"keyword {self.keyword!r} " if self.keyword else ""
        return f"at {where}: {named}{self.why}"


class SchemaSubsetError(MailnodeError):
    """A schema outside the subset; ``code`` is ``E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED``,
    ``E_BUTLER_SCHEMA_TYPE_UNKNOWN`` or ``E_BUTLER_SCHEMA_MALFORMED``; ``detail["problems"]`` lists all."""


def problems(schema: Any) -> list[SchemaProblem]:
    """Every way ``schema`` leaves the subset, in document order (empty when it is inside).

    Codes: ``E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED`` (a keyword, or a keyword's form, not honoured),
    ``E_BUTLER_SCHEMA_TYPE_UNKNOWN`` (a ``type`` name not in ``TYPES``), ``E_BUTLER_SCHEMA_MALFORMED``
    (a subschema that is not an object, or a value ``jsonschema`` rejects).
    """
    found: list[SchemaProblem] = []
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        pointer, sub = stack.pop()
        if not isinstance(sub, dict):
            found.append(SchemaProblem("E_BUTLER_SCHEMA_MALFORMED", pointer, None, "a subschema must be a JSON object"))
            continue
        children: list[tuple[str, Any]] = []
        for key, value in sub.items():
            at = f"{pointer}/{key}"
            if key in ANNOTATIONS:
                continue
            if key not in HONOURED:
                found.append(SchemaProblem("E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED", pointer, key,
                                           "is not in the subset validate honours"))
            elif key == "type":
                if isinstance(value, list):
                    found.append(SchemaProblem("E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED", pointer, key,
                                               "is given as an array; the subset takes one type name"))
                elif not isinstance(value, str) or value not in TYPES:
                    found.append(SchemaProblem("E_BUTLER_SCHEMA_TYPE_UNKNOWN", pointer, key,
                                               f"names {value!r}; known types are {', '.join(sorted(TYPES))}"))
            elif key == "additionalProperties":
                if not isinstance(value, bool):
                    found.append(SchemaProblem("E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED", pointer, key,
                                               "is given as a schema; the subset takes only true or false"))
            elif key == "items":
                if isinstance(value, list):
                    found.append(SchemaProblem("E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED", pointer, key,
                                               "is given as an array; the subset takes one schema for every item"))
                else:
                    children.append((at, value))
            elif key == "properties":
                if isinstance(value, dict):
                    children.extend((f"{at}/{name}", s) for name, s in value.items())
                else:
                    found.append(SchemaProblem("E_BUTLER_SCHEMA_MALFORMED", pointer, key,
                                               "must be an object of schemas"))
        stack.extend(reversed(children))
    if not found:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            where = "/" + "/".join(str(p) for p in exc.path) if exc.path else ""
            found.append(SchemaProblem("E_BUTLER_SCHEMA_MALFORMED", where, None, exc.message))
    return found


def require_subset(schema: Any) -> None:
    """Raise ``SchemaSubsetError`` (all problems in ``detail``, the first one's code) unless ``schema`` is inside."""
    found = problems(schema)
    if found:
        raise SchemaSubsetError(
            code=found[0].code,
            what=f"The validate schema leaves the subset: {found[0].sentence()}.",
            why="A keyword the validator does not enforce would pass everything while reading as a check.",
            fix=_FIX,
            status=422,
            detail={"problems": [p.sentence() for p in found]},
        )


def validate(value: Any, schema: dict[str, Any]) -> list[str]:
    """The reasons ``value`` fails ``schema``, one sentence each in path order; empty when it holds.

    Raises ``SchemaSubsetError`` first if ``schema`` leaves the subset.
    """
    require_subset(schema)
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{e.json_path}: {e.message}" for e in errors]
