"""The checker: each finding code from the smallest program that produces it."""

from __future__ import annotations

import json

import pytest

from mailnode import budgets
from mailnode.butler.ast import NODE_MODELS, RESERVED_BECAUSE
from mailnode.butler.check import check

from .conftest import BASE, CONTENT_CAP, METADATA_CAP, SEND_CAP, codes, program, run_check

STOP = {"id": "done", "type": "stop", "reason": "end"}


def test_the_smallest_program_checks_clean() -> None:
    result = run_check(program())
    assert result.ok and result.findings == ()
    assert result.ast is not None and result.ast.entry == "done"
    assert result.price is not None and result.price.total == 0
    assert result.ast_json is not None and result.ast_sha256 and result.source_sha256


# --- source -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["{", "", "nope", b"\xff\xfe{}", "\ud800", '{"a": 1} trailing', "1" * 5000])
def test_non_json_is_refused(source: str | bytes) -> None:
    result = check(source, pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert codes(result) == ["E_BUTLER_SOURCE_NOT_JSON"]
    assert not result.ok


def test_a_source_over_the_size_budget_names_the_budget_its_limit_and_the_ask() -> None:
    source = b" " * budgets.BUTLER_SOURCE_MAX_BYTES + json.dumps(BASE).encode()
    result = check(source, pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert codes(result) == ["E_BUTLER_SOURCE_TOO_LARGE"]
    finding = result.findings[0]
    assert "BUTLER_SOURCE_MAX_BYTES" in finding.what and str(budgets.BUTLER_SOURCE_MAX_BYTES) in finding.what
    assert str(len(source)) in finding.what and "split" in finding.fix


def test_a_source_at_the_size_budget_is_read() -> None:
    body = json.dumps(BASE).encode()
    source = body + b" " * (budgets.BUTLER_SOURCE_MAX_BYTES - len(body))
    assert check(source, pot=budgets.BUTLER_RUN_POT_STATEMENTS).ok


@pytest.mark.parametrize("depth", [budgets.BUTLER_SOURCE_MAX_DEPTH + 1, 100_000])
def test_nesting_beyond_the_depth_budget_is_a_finding(depth: int) -> None:
    result = check("[" * depth + "]" * depth, pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert codes(result) == ["E_BUTLER_SOURCE_TOO_DEEP"]
    assert str(budgets.BUTLER_SOURCE_MAX_DEPTH) in result.findings[0].what


def test_a_repeated_key_is_a_finding() -> None:
    text = json.dumps(program()).replace('"entry": "done"', '"entry": "done", "entry": "done"')
    assert codes(check(text, pot=budgets.BUTLER_RUN_POT_STATEMENTS)) == ["E_BUTLER_DUPLICATE_KEY"]


# --- envelope ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc",
    [
        [],
        "Butler",
        {**BASE, "apiVersion": "mailda/v1"},
        {**BASE, "kind": "Robot"},
        {k: v for k, v in BASE.items() if k != "capabilities"},
        {**BASE, "extra": 1},
        {**BASE, "metadata": {"name": "x", "owner": "y", "colour": "red"}},
        {**BASE, "trigger": {"event": "mail.sent", "mailbox": "a@b"}},
        {**BASE, "capabilities": [{"action": "mailbox.delete", "resource": "mailbox:a@b"}]},
        {**BASE, "entry": "Not-an-id"},
        {**BASE, "nodes": []},
    ],
)
def test_a_malformed_envelope_is_refused(doc: object) -> None:
    result = run_check(doc)
    assert "E_BUTLER_MALFORMED" in codes(result) and not result.ok


def test_every_envelope_problem_is_reported_not_only_the_first() -> None:
    doc = {k: v for k, v in BASE.items() if k not in ("kind", "trigger")}
    doc["apiVersion"] = "v0"
    result = run_check(doc)
    assert codes(result) == ["E_BUTLER_MALFORMED"] * 3


def test_a_node_that_is_not_an_object_is_malformed_and_the_others_are_still_checked() -> None:
    doc = program(STOP, {"id": "x", "type": "guard"})
    doc["nodes"].insert(1, 7)
    assert codes(run_check(doc)) == ["E_BUTLER_MALFORMED", "E_BUTLER_NODE_MALFORMED"]


def test_too_many_nodes_is_a_budget_finding() -> None:
    nodes = [{"id": f"n{i}", "type": "join"} for i in range(budgets.BUTLER_NODES_MAX + 1)]
    result = run_check(program(*nodes))
    assert codes(result) == ["E_BUTLER_TOO_MANY_NODES"]
    assert "BUTLER_NODES_MAX" in result.findings[0].what


def test_exactly_the_node_budget_is_allowed() -> None:
    nodes = [{"id": f"n{i}", "type": "join"} for i in range(budgets.BUTLER_NODES_MAX)]
    assert run_check(program(*nodes)).ok


# --- nodes ------------------------------------------------------------------------------------------


def test_duplicate_ids_are_reported_per_repeat() -> None:
    result = run_check(program(STOP, STOP, STOP))
    assert codes(result) == ["E_BUTLER_DUPLICATE_NODE_ID", "E_BUTLER_DUPLICATE_NODE_ID"]


def test_an_entry_naming_no_node() -> None:
    result = run_check(program(STOP, entry="start"))
    assert codes(result) == ["E_BUTLER_NO_ENTRY"]
    assert "done" in result.findings[0].fix


def test_an_unknown_node_type_names_the_shipped_ones() -> None:
    result = run_check(program({"id": "x", "type": "connector.salesforce.upsert"}))
    assert codes(result) == ["E_BUTLER_NODE_UNKNOWN"]
    assert "mail.send.propose" in result.findings[0].fix


def test_a_misspelt_node_type_gets_a_suggestion() -> None:
    result = run_check(program({"id": "x", "type": "case.clsoe", "caseId": "${event.case_id}"}))
    assert "case.close" in result.findings[0].what


@pytest.mark.parametrize("node_type", sorted(RESERVED_BECAUSE))
def test_reserved_types_parse_and_are_refused_with_their_reason(node_type: str) -> None:
    result = run_check(program({"id": "x", "type": node_type, "anything": {"goes": 1}}))
    assert codes(result) == ["E_BUTLER_NODE_RESERVED"]
    assert result.findings[0].why == RESERVED_BECAUSE[node_type]


def _loop(max_items: object = 5, kind: str = "foreach", **extra: object) -> dict[str, object]:
    node: dict[str, object] = {"id": "each", "type": kind, "over": "${event.items}", "as": "item",
                               "body": "step", "next": None, **extra}
    if kind == "map":
        node["collectAs"] = "step_out"
    if max_items is not _ABSENT:
        node["maxItems"] = max_items
    return node


_ABSENT = object()
BODY = {"id": "step", "type": "transform", "as": "step_out", "value": "${steps.item}"}


@pytest.mark.parametrize("kind", ["map", "foreach"])
@pytest.mark.parametrize("bound", [_ABSENT, 0, -1, 1.5, "5", True, None, 2**53, [5]])
def test_a_loop_without_a_sound_bound_is_unbounded(kind: str, bound: object) -> None:
    result = run_check(program(_loop(bound, kind), BODY))
    assert codes(result) == ["E_BUTLER_LOOP_UNBOUNDED"]


@pytest.mark.parametrize("bound", [1, 5.0, budgets.JSON_SAFE_INTEGER_MAX])
def test_a_loop_with_a_sound_bound_checks(bound: object) -> None:
    assert run_check(program(_loop(bound), BODY)).ok


@pytest.mark.parametrize("node_type", sorted(NODE_MODELS))
@pytest.mark.parametrize("key", ["to", "cc", "bcc"])
def test_no_node_takes_a_recipient(node_type: str, key: str) -> None:
    result = run_check(program({"id": "x", "type": node_type, key: "victim@example.org"}))
    assert "E_BUTLER_NODE_UNKNOWN_PARAMETER" in codes(result)
    finding = next(f for f in result.findings if f.code == "E_BUTLER_NODE_UNKNOWN_PARAMETER")
    assert "recipient" in finding.why


def test_an_unknown_parameter_lists_the_known_ones() -> None:
    result = run_check(program({"id": "x", "type": "wait", "seconds": 5, "until": "tomorrow"}))
    assert codes(result) == ["E_BUTLER_NODE_UNKNOWN_PARAMETER"]
    assert result.findings[0].fix.endswith("seconds, next.")


@pytest.mark.parametrize(
    "node",
    [
        {"id": "x", "type": "wait"},
        {"id": "x", "type": "wait", "seconds": 0},
        {"id": "x", "type": "wait", "seconds": budgets.BUTLER_WAIT_MAX_SECONDS + 1},
        {"id": "x", "type": "stop", "reason": ""},
        {"id": "x", "type": "guard", "when": 3},
        {"id": "x", "type": "lookup", "entity": "secrets", "entityId": "${event.x}", "as": "row"},
        {"id": "x", "type": "switch", "on": "${event.subject}", "cases": []},
        {"id": "x", "type": "switch", "on": "${event.subject}", "cases": [{"equals": "a", "next": None, "goto": "b"}]},
        {"id": "x", "type": "transform", "as": "Bad Name", "value": "v"},
        {"id": "x", "type": "join", "next": "Bad-Edge"},
    ],
)
def test_a_malformed_parameter(node: dict[str, object]) -> None:
    result = run_check(program(node))
    assert set(codes(result)) <= {"E_BUTLER_NODE_MALFORMED", "E_BUTLER_NODE_UNKNOWN_PARAMETER"}
    assert "E_BUTLER_NODE_MALFORMED" in codes(result) or "goto" in result.render()


def test_a_node_without_a_valid_id_is_malformed() -> None:
    result = run_check(program({"id": "Start", "type": "stop", "reason": "r"}, STOP, entry="done"))
    assert codes(result) == ["E_BUTLER_NODE_MALFORMED"]
    assert result.findings[0].node == "Start"


def test_a_validate_schema_outside_the_subset_is_refused_at_check_time() -> None:
    node = {"id": "v", "type": "validate", "value": "${event.subject}", "schema": {"type": "string", "pattern": "^a"}}
    result = run_check(program(node))
    assert codes(result) == ["E_BUTLER_SCHEMA_KEYWORD_UNSUPPORTED"]
    assert "pattern" in result.findings[0].what


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400", str(2**53), str(-(2**60))])
def test_numbers_without_a_canonical_form_are_findings(value: str) -> None:
    node = {"id": "v", "type": "validate", "value": "${event.n}", "schema": {"const": 0}}
    text = json.dumps(program(node)).replace('"const": 0', f'"const": {value}')
    result = check(text, pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert codes(result) == ["E_BUTLER_NOT_CANONICAL"]
    assert result.findings[0].node == "v" and "/schema/const" in result.findings[0].what


def test_a_lone_surrogate_in_a_schema_is_not_canonical() -> None:
    node = {"id": "v", "type": "validate", "value": "${event.n}", "schema": {"const": "x"}}
    result = check(json.dumps(program(node)).replace('"const": "x"', '"const": "\\ud800"'),
                   pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert codes(result) == ["E_BUTLER_NOT_CANONICAL"]
    assert "surrogate" in result.findings[0].what


def test_a_lone_surrogate_in_a_string_parameter_is_malformed() -> None:
    text = json.dumps(program()).replace('"smallest"', '"small\\ud800est"')
    assert codes(check(text, pot=budgets.BUTLER_RUN_POT_STATEMENTS)) == ["E_BUTLER_MALFORMED"]


# --- graph ------------------------------------------------------------------------------------------


def test_an_edge_to_nothing_dangles() -> None:
    result = run_check(program({"id": "a", "type": "join", "next": "nowhere"}))
    assert codes(result) == ["E_BUTLER_EDGE_DANGLING"]
    assert "a.next" in result.findings[0].what


def test_an_edge_to_a_refused_node_dangles_too() -> None:
    result = run_check(program({"id": "a", "type": "join", "next": "b"}, {"id": "b", "type": "label"}))
    assert codes(result) == ["E_BUTLER_NODE_RESERVED", "E_BUTLER_EDGE_DANGLING"]
    assert "refused above" in result.findings[1].why


def test_switch_case_edges_are_named_by_position() -> None:
    node = {"id": "s", "type": "switch", "on": "${event.subject}",
            "cases": [{"equals": "a", "next": "done"}, {"equals": "b", "next": "gone"}], "default": None}
    result = run_check(program(node, STOP))
    assert codes(result) == ["E_BUTLER_EDGE_DANGLING"]
    assert "s.cases[1].next" in result.findings[0].what


def test_a_self_loop_is_a_cycle() -> None:
    result = run_check(program({"id": "a", "type": "join", "next": "a"}))
    assert codes(result) == ["E_BUTLER_CYCLE"]
    assert result.findings[0].what == "a -> a"


def test_a_cycle_is_reported_once_whichever_node_the_search_starts_from() -> None:
    result = run_check(program({"id": "a", "type": "join", "next": "b"}, {"id": "b", "type": "join", "next": "c"},
                               {"id": "c", "type": "join", "next": "a"}, {"id": "z", "type": "join", "next": "b"}))
    assert codes(result) == ["E_BUTLER_CYCLE"]
    assert result.findings[0].what == "a -> b -> c -> a"


def test_two_cycles_are_two_findings() -> None:
    result = run_check(program(
        {"id": "g", "type": "guard", "when": "true", "then": "a", "otherwise": "b"},
        {"id": "a", "type": "join", "next": "g"},
        {"id": "b", "type": "join", "next": "b"},
    ))
    assert sorted(f.what for f in result.findings) == ["b -> b", "g -> a -> g"]


def test_a_loop_body_pointing_back_at_its_loop_is_a_cycle() -> None:
    body = {**BODY, "next": "each"}
    assert codes(run_check(program(_loop(3), body))) == ["E_BUTLER_CYCLE"]


def test_unreachable_nodes_are_allowed() -> None:
    assert run_check(program(STOP, {"id": "island", "type": "join", "next": None})).ok


# --- capabilities -----------------------------------------------------------------------------------

ASSIGN = {"id": "take", "type": "case.assign", "caseId": "${event.case_id}", "assignee": "${butler.id}"}


@pytest.mark.parametrize("resource", ["case_type:refund", "mailbox:", "mailbox:support", "support@example.com",
                                      "mailbox:a b@c"])
def test_a_capability_of_the_wrong_grain(resource: str) -> None:
    result = run_check(program(ASSIGN, capabilities=[{"action": "send.propose", "resource": resource}]))
    assert codes(result) == ["E_BUTLER_CAPABILITY_RESOURCE_UNKNOWN"]
    assert result.findings[0].node is None


def test_a_needed_capability_not_declared_is_reported_once_per_requirement() -> None:
    second = {**ASSIGN, "id": "again"}
    result = run_check(program({**ASSIGN, "next": "again"}, second))
    assert codes(result) == ["E_BUTLER_CAPABILITY_NOT_DECLARED"]
    assert result.findings[0].node == "take" and "1 more" in result.findings[0].what


def test_a_message_lookup_needs_content_read_not_metadata_read() -> None:
    lookup = {"id": "m", "type": "lookup", "entity": "message", "entityId": "${event.message_id}", "as": "msg"}
    assert codes(run_check(program(lookup, capabilities=[METADATA_CAP]))) == [
        "E_BUTLER_CAPABILITY_NOT_DECLARED", "E_BUTLER_CAPABILITY_UNUSED"]
    assert run_check(program(lookup, capabilities=[CONTENT_CAP])).ok


def test_a_case_lookup_is_satisfied_by_either_read_and_both_count_as_used() -> None:
    lookup = {"id": "c", "type": "lookup", "entity": "case", "entityId": "${event.case_id}", "as": "row"}
    assert run_check(program(lookup, capabilities=[METADATA_CAP])).ok
    assert run_check(program(lookup, capabilities=[METADATA_CAP, CONTENT_CAP])).ok


def test_a_draft_lookup_needs_nothing() -> None:
    lookup = {"id": "d", "type": "lookup", "entity": "draft", "entityId": "${event.x}", "as": "row"}
    assert run_check(program(lookup)).ok


def test_a_declared_capability_nothing_uses() -> None:
    result = run_check(program(STOP, capabilities=[SEND_CAP]))
    assert codes(result) == ["E_BUTLER_CAPABILITY_UNUSED"]


def test_unused_is_not_claimed_when_a_node_that_might_use_it_did_not_check() -> None:
    broken = {"id": "d", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "s", "body": "b", "as": "d",
              "to": "x"}
    assert codes(run_check(program(broken, capabilities=[SEND_CAP]))) == ["E_BUTLER_NODE_UNKNOWN_PARAMETER"]


# --- price ------------------------------------------------------------------------------------------


def test_an_unaffordable_program_names_the_dearest_loop_and_the_bound_that_fits() -> None:
    send = {"id": "step", "type": "mail.send.propose", "draft": "${steps.item}"}
    result = run_check(program(_loop(501), send, capabilities=[SEND_CAP]))
    assert codes(result) == ["E_BUTLER_UNAFFORDABLE"]
    finding = result.findings[0]
    assert finding.node == "each" and "10020" in finding.what and "butler_run_pot" in finding.what
    assert "to 500" in finding.fix


def test_a_program_priced_exactly_at_the_pot_is_affordable() -> None:
    send = {"id": "step", "type": "mail.send.propose", "draft": "${steps.item}"}
    assert run_check(program(_loop(500), send, capabilities=[SEND_CAP])).ok


# --- all findings, and their shape ------------------------------------------------------------------


def test_all_findings_are_reported_not_only_the_first() -> None:
    result = run_check(program(
        {"id": "a", "type": "join", "next": "nowhere"},
        {"id": "b", "type": "llm.classify"},
        {"id": "c", "type": "wait", "seconds": 1, "to": "x"},
        entry="missing",
        capabilities=[{"action": "send.propose", "resource": "team:ops"}],
    ))
    assert codes(result) == [
        "E_BUTLER_NODE_RESERVED", "E_BUTLER_NODE_UNKNOWN_PARAMETER", "E_BUTLER_NO_ENTRY",
        "E_BUTLER_EDGE_DANGLING", "E_BUTLER_CAPABILITY_RESOURCE_UNKNOWN",
    ]


def test_a_finding_prints_in_four_parts() -> None:
    finding = run_check(program(entry="start")).findings[0]
    lines = finding.render().splitlines()
    assert lines[0].startswith("E_BUTLER_NO_ENTRY  ")
    assert [line.split()[0] for line in lines[1:]] == ["node", "why", "fix"]
    assert finding.to_json()["code"] == "E_BUTLER_NO_ENTRY"
