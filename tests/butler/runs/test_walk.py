"""The walk as a plain function over an AST, a state and an ``Effects`` that records what it is asked:
the same walk the engine and the dry run use, with no database and no DBOS."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from mailnode.butler.ast import ButlerDocument
from mailnode.butler.walk import EffectCall, EffectResult, WalkResult, initial_state, walk
from tests.butler.runs.conftest import program

EVENT = {"message_id": "msg_01JDAAAAAAAAAAAAAAAAAAAAAA", "mailbox_id": "mbx_01JDAAAAAAAAAAAAAAAAAAAAAA",
         "case_id": "cas_01JDAAAAAAAAAAAAAAAAAAAAAA", "mailbox_address": "support@example.test",
         "return_path": "customer@remote.test", "reply_refusal": None, "subject": "Hi",
         "ids": ["cas_01JDAAAAAAAAAAAAAAAAAAAAAA", "cas_01JDBBBBBBBBBBBBBBBBBBBBBB"]}


@dataclass
class Recorder:
    """Effects that perform nothing: every call is recorded and answered ``ok``."""

    budget: int = 100
    released: bool = True
    calls: list[EffectCall] = field(default_factory=list)
    waits: list[tuple[str, int]] = field(default_factory=list)

    def affordable(self, call: EffectCall) -> bool:
        return len(self.calls) < self.budget

    async def perform(self, call: EffectCall) -> EffectResult:
        self.calls.append(call)
        parks = call.node_type == "mail.send.propose"
        return EffectResult("ok", "butler_release_required" if parks else None, call.step,
                            {"id": "dft_01JDAAAAAAAAAAAAAAAAAAAAAA"} if call.node_type == "draft" else {"n": call.seq},
                            parks=parks)

    async def wait(self, step: str, seconds: int) -> None:
        self.waits.append((step, seconds))

    async def await_release(self, call: EffectCall, result: EffectResult) -> bool:
        return self.released


def _run(nodes: list[dict[str, Any]], effects: Recorder, event: dict[str, Any] | None = None,
         caps: list[str] | None = None) -> WalkResult:
    doc = ButlerDocument.model_validate(program(nodes, nodes[0]["id"], caps))
    state = initial_state(event or EVENT, "btl_01JDAAAAAAAAAAAAAAAAAAAAAA", "btv_01JDAAAAAAAAAAAAAAAAAAAAAA", "t")
    return asyncio.run(walk(doc, state, effects, "mail.received"))


_TAKE_EACH = [
    {"id": "each", "type": "foreach", "over": "${event.ids}", "as": "c", "maxItems": 1, "body": "take",
     "next": None},
    {"id": "take", "type": "case.assign", "caseId": "${steps.c}", "assignee": "${butler.id}", "next": None},
]


def test_a_loop_over_more_items_than_its_bound_fails_and_processes_nothing() -> None:
    effects = Recorder()
    result = _run(_TAKE_EACH, effects)
    assert (result.state, result.reason) == ("failed", "loop_bound_exceeded")
    assert effects.calls == [] and result.detail["items"] == 2


def test_a_loop_within_its_bound_visits_each_item_with_its_own_step_name() -> None:
    nodes = [dict(_TAKE_EACH[0], maxItems=2), _TAKE_EACH[1]]
    effects = Recorder()
    result = _run(nodes, effects)
    assert (result.state, result.effects, result.nodes_executed) == ("finished", 2, 3)
    assert [(c.seq, c.step, c.params["case_id"]) for c in effects.calls] == [
        (1, "take#1", EVENT["ids"][0]), (2, "take#2", EVENT["ids"][1])]


def test_map_collects_what_its_body_binds() -> None:
    effects = Recorder()
    result = _run([
        {"id": "each", "type": "map", "over": "${event.ids}", "as": "c", "maxItems": 5, "body": "tag",
         "collectAs": "tags", "next": "check"},
        {"id": "tag", "type": "transform", "as": "tags", "value": "seen:${steps.c}", "next": None},
        {"id": "check", "type": "validate", "value": "${steps.tags}", "schema": {"type": "array", "minItems": 3},
         "next": None},
    ], effects)
    assert (result.state, result.reason) == ("refused", "validate_failed")


def test_an_unaffordable_effect_refuses_the_run_after_the_ones_before() -> None:
    effects = Recorder(budget=1)
    result = _run([dict(_TAKE_EACH[0], maxItems=2), _TAKE_EACH[1]], effects)
    assert (result.state, result.reason, len(effects.calls)) == ("refused", "budget_exhausted", 1)


@pytest.mark.parametrize(("event", "code"), [
    ({**EVENT, "return_path": ""}, "E_BUTLER_PARENT_HAS_NO_RETURN_PATH"),
    ({**EVENT, "return_path": "Support@Example.test"}, "E_BUTLER_REPLY_WOULD_LOOP"),
    ({**EVENT, "reply_refusal": "own_address"}, "E_BUTLER_REPLY_WOULD_LOOP"),
    ({**EVENT, "reply_refusal": "list_header"}, "E_BUTLER_REPLY_REFUSED"),
])
def test_a_draft_with_nowhere_safe_to_reply_fails_before_any_effect(event: dict[str, Any], code: str) -> None:
    effects = Recorder()
    result = _run([{"id": "reply", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "Re",
                    "body": "x", "as": "d", "next": None}], effects, event, ["send.propose"])
    assert (result.state, result.reason, effects.calls) == ("failed", code, [])


def test_a_draft_goes_to_the_return_path_and_a_timed_out_release_stops_the_run() -> None:
    effects = Recorder(released=False)
    result = _run([
        {"id": "reply", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "Re: ${event.subject}",
         "body": "x", "as": "d", "next": "pause"},
        {"id": "pause", "type": "wait", "seconds": 60, "next": "send"},
        {"id": "send", "type": "mail.send.propose", "draft": "${steps.d.id}", "next": None},
    ], effects, caps=["send.propose"])
    assert effects.calls[0].params["recipient"] == "customer@remote.test"
    assert effects.waits == [("pause#1", 60)]
    assert (result.state, result.reason) == ("stopped", "release_timed_out")
