"""Every ```json block in docs/butlers.md is a Butler that checks clean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mailnode import budgets
from mailnode.butler.check import check

DOC = Path(__file__).resolve().parents[2] / "docs" / "butlers.md"
BLOCKS = re.findall(r"^```json\n(.*?)^```$", DOC.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)


def test_the_doc_has_the_three_examples() -> None:
    assert len(BLOCKS) >= 3
    text = "\n".join(BLOCKS)
    assert "event.reply_refusal" in text and '"lookup"' in text and '"validate"' in text and '"switch"' in text
    assert '"case.assign"' in text


@pytest.mark.parametrize("block", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_every_example_checks_clean(block: str) -> None:
    result = check(block, pot=budgets.BUTLER_RUN_POT_STATEMENTS)
    assert result.ok, result.render()


def test_the_findings_list_in_the_doc_is_every_code_the_checker_emits() -> None:
    source = (Path(__file__).resolve().parents[2] / "src" / "mailnode" / "butler").glob("*.py")
    emitted = set()
    for path in source:
        emitted |= set(re.findall(r'"(E_BUTLER_(?!EXPR_)[A-Z_]+)"', path.read_text(encoding="utf-8")))
    documented = set(re.findall(r"`(E_BUTLER_(?!EXPR_)[A-Z_]+)`", DOC.read_text(encoding="utf-8")))
    assert emitted <= documented
