"""A stored version is checked once per (its digest, the checker's code, the pot) in a process (issue 17
item 9): a deep program cost ~70 s at every delivery's run start."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mailnode import budgets
from mailnode.butler import check as check_mod

from .conftest import program

POT = budgets.BUTLER_RUN_POT_STATEMENTS


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"check": 0}
    real = check_mod.check

    def counting(source: Any, *, pot: int) -> check_mod.CheckResult:
        calls["check"] += 1
        return real(source, pot=pot)

    monkeypatch.setattr(check_mod, "check", counting)
    return calls


def _stored(name: str) -> str:
    result = check_mod.check(json.dumps(program(metadata={"name": name, "owner": "team:t"})), pot=POT)
    assert result.ast_json is not None
    return result.ast_json.decode()


def test_a_version_already_checked_by_this_code_is_not_checked_again(counted: dict[str, int]) -> None:
    ast_json = _stored("once")
    counted["check"] = 0
    first = check_mod.check_stored(ast_json, pot=POT)
    again = check_mod.check_stored(ast_json, pot=POT)
    assert first.ok and again is first and counted["check"] == 1


def test_other_bytes_another_pot_or_another_checker_check_again(counted: dict[str, int],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    ast_json = _stored("keyed")
    check_mod.check_stored(ast_json, pot=POT)
    counted["check"] = 0
    check_mod.check_stored(ast_json + " ", pot=POT)  # a hand-edited row: other bytes
    check_mod.check_stored(ast_json, pot=POT - 1)
    monkeypatch.setattr(check_mod, "CHECKER_VERSION", "another checker")
    check_mod.check_stored(ast_json, pot=POT)
    assert counted["check"] == 3


def test_a_remembered_refusal_is_still_a_refusal(counted: dict[str, int]) -> None:
    bad = '{"apiVersion": "mailnode/v1", "nodes": []}'
    assert not check_mod.check_stored(bad, pot=POT).ok and not check_mod.check_stored(bad, pot=POT).ok


def test_the_memory_is_bounded_in_bytes(counted: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budgets, "BUTLER_CHECKED_CACHE_MAX_BYTES", 1000)
    versions = [_stored(f"bounded{i}") for i in range(6)]
    for v in versions:
        check_mod.check_stored(v, pot=POT)
    counted["check"] = 0
    check_mod.check_stored(versions[0], pot=POT)  # pushed out by the later ones
    check_mod.check_stored(versions[-1], pot=POT)  # still remembered
    assert counted["check"] == 1
    assert check_mod._checked_bytes <= 1000
