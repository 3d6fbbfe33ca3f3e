"""The walk's closed vocabularies (issue 18): run states and the walk's own reasons are enums whose stored
values never change, every map over them is total, and node dispatch is a table that covers every node type
the Butler language defines, so a node type added without a handler fails here."""

from __future__ import annotations

import asyncio
import os
import pickle
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import mailnode
from mailnode.butler import engine, record
from mailnode.butler.ast import NODE_MODELS, ButlerDocument, JoinNode, Metadata, Trigger
from mailnode.butler.walk import EFFECT_PARAMS, EFFECT_TYPES, PURE_NODES, initial_state, walk
from mailnode.schema import butler_runs as run_tables
from mailnode.vocabulary import run_states as states
from mailnode.vocabulary.run_states import STATE_OF_REASON, RunState, WalkReason
from tests.butler.runs.test_walk import EVENT, Recorder, _run


def test_run_states_keep_their_stored_values() -> None:
    # butler_runs.state stores these and the API shows them: a renamed value orphans every stored run.
    assert [s.value for s in RunState] == ["running", "awaiting_release", "finished", "stopped", "refused", "failed"]


def test_the_walks_reasons_keep_their_stored_values() -> None:
    assert [r.value for r in WalkReason] == [
        "release_timed_out", "validate_failed", "budget_exhausted", "loop_bound_exceeded", "edge_to_nothing",
        "reserved_node_reached_the_walk", "E_BUTLER_LOOKUP_NOT_AN_ID", "E_BUTLER_LOOP_OVER_NOT_A_LIST",
        "E_BUTLER_MAP_COLLECTS_NOTHING", "E_BUTLER_PARAMETER_NOT_TEXT"]


def test_live_and_terminal_split_every_run_state_and_the_tables_bind_plain_text() -> None:
    assert set(states.LIVE) | set(states.TERMINAL) == set(RunState)
    assert not set(states.LIVE) & set(states.TERMINAL)
    assert run_tables.RUN_STATES == tuple(s.value for s in RunState)
    assert all(type(s) is str for s in run_tables.RUN_STATES)


@pytest.mark.parametrize("reason", list(WalkReason))
def test_every_reason_of_the_walk_ends_in_a_terminal_state_and_has_words(reason: WalkReason) -> None:
    # Generated from the enum: a reason added without a state or without a why/fix fails here.
    assert STATE_OF_REASON[reason] in states.TERMINAL
    assert reason.value in record.REASON_WORDS


@pytest.mark.parametrize("node_type", list(NODE_MODELS))
def test_every_node_type_of_the_language_has_exactly_one_handler_for_its_own_model(node_type: str) -> None:
    # Generated from ast.NODE_MODELS: a node type added to the language without a handler fails here.
    in_pure, in_effect = node_type in PURE_NODES, node_type in EFFECT_PARAMS
    assert in_pure != in_effect, f"{node_type}: pure {in_pure}, effect {in_effect}"
    handler = PURE_NODES[node_type] if in_pure else EFFECT_PARAMS[node_type]
    takes = typing.get_type_hints(handler)["node"]
    assert NODE_MODELS[node_type] in (typing.get_args(takes) or (takes,))


def test_the_dispatch_tables_name_no_type_the_language_lacks() -> None:
    assert set(PURE_NODES) | set(EFFECT_PARAMS) == set(NODE_MODELS)
    assert EFFECT_TYPES == ("lookup", "case.assign", "case.close", "draft", "mail.send.propose")


def test_a_node_type_without_a_handler_fails_the_run_before_any_effect() -> None:
    # A stored row edited past the checker (a reserved type): the walk fails closed, it performs nothing.
    smuggled = JoinNode.model_construct(id="tag", type="label", next=None)
    doc = ButlerDocument.model_construct(api_version="mailnode/v1", kind="Butler",
                                         metadata=Metadata(name="t", owner="team:t"), capabilities=[],
                                         trigger=Trigger(event="mail.received", mailbox="support@example.test"),
                                         entry="tag", nodes=[smuggled])
    effects = Recorder()
    state = initial_state(EVENT, "btl_01JDAAAAAAAAAAAAAAAAAAAAAA", "btv_01JDAAAAAAAAAAAAAAAAAAAAAA", "t")
    result = asyncio.run(walk(doc, state, effects, "mail.received"))
    assert (result.state, result.reason, effects.calls) == ("failed", "reserved_node_reached_the_walk", [])
    assert result.detail["what"] == "label is not a node the engine runs."


def test_a_walk_ends_with_its_reason_as_plain_text() -> None:
    result = _run([{"id": "check", "type": "validate", "value": "${event.subject}", "schema": {"type": "number"},
                    "next": None}], Recorder())
    assert (result.state, result.reason) == (RunState.REFUSED, "validate_failed")
    assert type(result.reason) is str


def test_the_engine_hands_plain_text_to_dbos_and_the_record() -> None:
    # Step arguments and the workflow's result are pickled by DBOS: an enum member would be stored by its
    # class's import path instead of its value.
    outcome = engine._counts(RunState.FAILED, WalkReason.EDGE_TO_NOTHING)
    assert (type(outcome["state"]), type(outcome["reason"])) == (str, str)
    assert b"RunState" not in pickle.dumps(outcome) and b"WalkReason" not in pickle.dumps(outcome)
    assert (outcome["state"], outcome["reason"]) == ("failed", "edge_to_nothing")


def test_the_walk_and_its_vocabulary_import_neither_dbos_nor_the_database() -> None:
    # The dry run shares the walk because the walk touches no storage: its states live outside the run
    # tables (schema.butler_runs).
    code = ("import sys, mailnode.butler.walk; "
            "bad = [m for m in sys.modules "
            "if m.split('.')[0] in ('dbos', 'sqlalchemy') or m.startswith('mailnode.db')]; "
            "print(bad[:5]); sys.exit(1 if bad else 0)")
    src = str(Path(mailnode.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
