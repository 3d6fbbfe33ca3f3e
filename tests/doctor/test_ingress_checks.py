"""Doctor's ``materialisation_backlog`` decision as a table (issue 19: a burst is accepted at listener speed and
drains after; the backlog and its age are visible, ok while young)."""

from __future__ import annotations

import pytest

from mailnode import budgets
from mailnode.doctor.ingress_checks import Backlog, backlog_finding

MAX = 120.0


@pytest.mark.parametrize(("waiting", "age", "ok", "words"), [
    (0, None, True, "none waiting: every accepted receipt is materialised or quarantined"),
    (1, 0, True, "1 accepted receipts wait to be materialised, the oldest received 0 s ago (degraded from 120 s)"),
    (250, 119, True, "250 accepted receipts wait to be materialised, the oldest received 119 s ago"),
    (1, 120, False, "1 accepted receipts wait to be materialised, the oldest received 120 s ago"),
    (3, 86_400, False, "3 accepted receipts wait to be materialised, the oldest received 86400 s ago"),
])
def test_the_backlog_is_ok_while_its_oldest_is_younger_than_the_budget(waiting: int, age: int | None, ok: bool,
                                                                        words: str) -> None:
    finding = backlog_finding(Backlog(waiting, age), MAX)
    assert finding.name == "materialisation_backlog"
    assert finding.severity.value == "degraded"
    assert finding.ok is ok
    assert finding.detail.startswith(words)
    assert finding.data == {"waiting": waiting, "oldest_age_seconds": age, "age_max_seconds": MAX}
    assert bool(finding.fix) is not ok


def test_an_empty_backlog_is_said_in_words_never_a_bare_zero() -> None:
    finding = backlog_finding(Backlog(0, None), MAX)
    assert "none waiting" in finding.detail and "0" not in finding.detail


def test_the_budget_is_a_few_repair_scans() -> None:
    assert budgets.MATERIALISE_BACKLOG_AGE_MAX_SECONDS > budgets.MATERIALISE_SCAN_INTERVAL_SECONDS
