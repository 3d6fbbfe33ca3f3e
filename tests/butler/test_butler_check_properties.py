"""Property: any text, any bytes and any JSON value yield findings (or a clean result), never an exception."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mailnode import budgets
from mailnode.butler.check import check

from .conftest import BASE, CONTENT_CAP, SEND_CAP

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=25,
)

FULL = copy.deepcopy(BASE)
FULL["capabilities"] = [SEND_CAP, CONTENT_CAP]
FULL["entry"] = "g"
FULL["nodes"] = [
    {"id": "g", "type": "guard", "when": "event.reply_refusal == null", "then": "each", "otherwise": "done"},
    {"id": "each", "type": "map", "over": "${event.x}", "as": "i", "maxItems": 3, "body": "m", "collectAs": "m_out",
     "next": "d"},
    {"id": "m", "type": "lookup", "entity": "message", "entityId": "${steps.i}", "as": "m_out"},
    {"id": "d", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "s", "body": "b", "as": "dr",
     "next": "p"},
    {"id": "p", "type": "mail.send.propose", "draft": "${steps.dr.id}", "next": "v"},
    {"id": "v", "type": "validate", "value": "${event.x}", "schema": {"type": "array"}, "next": "done"},
    {"id": "done", "type": "stop", "reason": "end"},
]


def _assert_shape(source: str | bytes) -> None:
    result = check(source, pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert result.ok == (not result.findings)
    assert result.ok == (result.ast is not None)
    for finding in result.findings:
        assert finding.code.startswith("E_BUTLER_") and finding.what and finding.why and finding.fix


def test_the_base_documents_are_clean() -> None:
    assert check(json.dumps(FULL), pot=budgets.BUTLER_RUN_POT_STATEMENTS).ok
    assert check(json.dumps(BASE), pot=budgets.BUTLER_RUN_POT_STATEMENTS).ok


@settings(max_examples=300)
@given(st.text(max_size=200))
def test_any_text(text: str) -> None:
    _assert_shape(text)


@settings(max_examples=200)
@given(st.binary(max_size=200))
def test_any_bytes(data: bytes) -> None:
    _assert_shape(data)


@settings(max_examples=300)
@given(json_values)
def test_any_json_value(value: Any) -> None:
    _assert_shape(json.dumps(value))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


FULL_PATHS = [p for p in _paths(FULL) if p]


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(FULL_PATHS), replacement=json_values, drop=st.booleans())
def test_any_single_edit_of_a_clean_program(path: tuple[Any, ...], replacement: Any, drop: bool) -> None:
    doc = copy.deepcopy(FULL)
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    _assert_shape(json.dumps(doc))
