"""Retention (spec/transactional.md §5): the deletion predicate, the rewrite floor and the pager."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.retention.rules import (
    DEFAULT_CONTENT_SECONDS,
    VERDICT_OF_REASON,
    Candidate,
    ContentKind,
    DeletionPage,
    RetentionDecision,
    RetentionFacts,
    RetentionReason,
    RetentionSettings,
    Verdict,
    decide,
    hold_blocked_audit_due,
    page_deletions,
    retain_until_at_give_up,
    retain_until_write,
)

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
D = timedelta(days=1)


def facts(age: timedelta, kind: str | None = "sealed_body", **kw: object) -> RetentionFacts:
    return RetentionFacts(kind=kind, created_at=NOW - age, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("row", "verdict", "reason", "hold_blocked"),
    [
        # A hold always wins, including over the ceiling.
        (facts(30 * D, under_hold=True), Verdict.RETAIN, RetentionReason.LEGAL_HOLD, True),
        (facts(15 * D, under_hold=True, send_pending=True), Verdict.RETAIN, RetentionReason.LEGAL_HOLD, True),
        (facts(8 * D, under_hold=True), Verdict.RETAIN, RetentionReason.LEGAL_HOLD, True),
        (facts(1 * D, under_hold=True), Verdict.RETAIN, RetentionReason.LEGAL_HOLD, False),
        (
            facts(8 * D, under_hold=True, retain_until=NOW + D),
            Verdict.RETAIN,
            RetentionReason.LEGAL_HOLD,
            False,
        ),
        # The ceiling wins over everything but a hold.
        (facts(14 * D + timedelta(seconds=1)), Verdict.DELETE, RetentionReason.CEILING, False),
        (facts(15 * D, send_pending=True), Verdict.DELETE, RetentionReason.CEILING, False),
        (facts(15 * D, retain_until=NOW + 5 * D), Verdict.DELETE, RetentionReason.CEILING, False),
        (facts(14 * D), Verdict.DELETE, RetentionReason.EXPIRED, False),
        # Inside the kind's retention: kept.
        (facts(7 * D), Verdict.RETAIN, RetentionReason.WITHIN_RETENTION, False),
        (facts(2 * D, kind="inbound_raw"), Verdict.RETAIN, RetentionReason.WITHIN_RETENTION, False),
        # Past it: a pending send, then an undelivered notice, keep it.
        (facts(8 * D, send_pending=True), Verdict.RETAIN, RetentionReason.SEND_PENDING, False),
        (
            facts(8 * D, retain_until=NOW + timedelta(seconds=1)),
            Verdict.RETAIN,
            RetentionReason.NOTICE_PENDING,
            False,
        ),
        (facts(8 * D, retain_until=NOW), Verdict.DELETE, RetentionReason.EXPIRED, False),
        (facts(8 * D, retain_until=NOW - D), Verdict.DELETE, RetentionReason.EXPIRED, False),
        (facts(8 * D), Verdict.DELETE, RetentionReason.EXPIRED, False),
        (facts(8 * D, kind="inbound_raw"), Verdict.DELETE, RetentionReason.EXPIRED, False),
        # An unknown kind is kept (deletion is the irreversible direction), even past the ceiling.
        (facts(30 * D, kind="attachment"), Verdict.RETAIN, RetentionReason.KIND_NOT_CLASSIFIED, False),
        (facts(30 * D, kind=None), Verdict.RETAIN, RetentionReason.KIND_NOT_CLASSIFIED, False),
    ],
)
def test_the_retention_table(
    row: RetentionFacts, verdict: Verdict, reason: RetentionReason, hold_blocked: bool
) -> None:
    assert decide(row, NOW) == RetentionDecision(verdict, reason, hold_blocked)


def test_a_hold_blocks_a_deletion_the_ceiling_would_allow() -> None:
    row = facts(20 * D)
    assert decide(row, NOW).verdict is Verdict.DELETE
    held = decide(RetentionFacts(kind=row.kind, created_at=row.created_at, under_hold=True), NOW)
    assert held.verdict is Verdict.RETAIN and held.hold_blocked


def test_settings_per_kind() -> None:
    settings = RetentionSettings(
        content_seconds={ContentKind.INBOUND_RAW: 2 * 86_400, ContentKind.SEALED_BODY: 10 * 86_400},
        ceiling_seconds=12 * 86_400,
    )
    assert decide(facts(3 * D, kind="inbound_raw"), NOW, settings).verdict is Verdict.DELETE
    assert decide(facts(3 * D, kind="sealed_body"), NOW, settings).verdict is Verdict.RETAIN
    assert (
        decide(facts(13 * D, kind="sealed_body", send_pending=True), NOW, settings).verdict is Verdict.DELETE
    )


@pytest.mark.parametrize(
    ("content", "ceiling"),
    [
        ({ContentKind.INBOUND_RAW: 86_400}, 14 * 86_400),
        ({ContentKind.INBOUND_RAW: 86_400, ContentKind.SEALED_BODY: 20 * 86_400}, 14 * 86_400),
        ({ContentKind.INBOUND_RAW: 0, ContentKind.SEALED_BODY: 86_400}, 14 * 86_400),
        ({ContentKind.INBOUND_RAW: 86_400, ContentKind.SEALED_BODY: 86_400}, 0),
    ],
)
def test_incoherent_settings_are_refused(content: dict[ContentKind, int], ceiling: int) -> None:
    with pytest.raises(MailnodeError) as caught:
        RetentionSettings(content_seconds=content, ceiling_seconds=ceiling)
    assert caught.value.code == "E_RETENTION_INCOHERENT"


@pytest.mark.parametrize("kind", list(ContentKind))
def test_every_kind_has_a_default(kind: ContentKind) -> None:
    assert 0 < DEFAULT_CONTENT_SECONDS[kind] <= budgets.RETENTION_CEILING_SECONDS_DEFAULT


@pytest.mark.parametrize("reason", list(RetentionReason))
def test_every_reason_has_a_verdict(reason: RetentionReason) -> None:
    assert reason in VERDICT_OF_REASON


GRACE = 7 * 86_400


@pytest.mark.parametrize(
    ("current", "written"),
    [
        (None, NOW + timedelta(seconds=GRACE)),
        (NOW - D, NOW + timedelta(seconds=GRACE)),
        (NOW + timedelta(seconds=GRACE / 2), NOW + timedelta(seconds=GRACE)),
        # More than half the window ahead: skip the rewrite.
        (NOW + timedelta(seconds=GRACE / 2 + 1), None),
        (NOW + timedelta(seconds=GRACE), None),
        (NOW + 30 * D, None),
    ],
)
def test_retain_until_rewrite_floor(current: datetime | None, written: datetime | None) -> None:
    assert retain_until_write(current, NOW, GRACE) == written


def test_a_long_outage_rewrites_retain_until_a_handful_of_times_not_every_pass() -> None:
    current: datetime | None = None
    writes = 0
    at = NOW
    while at < NOW + D:
        new = retain_until_write(current, at, GRACE)
        if new is not None:
            current, writes = new, writes + 1
        at += timedelta(seconds=budgets.SWEEPER_INTERVAL_SECONDS)
    assert writes == 1  # 144 passes in a day, one write


def cand(i: int, verdict: Verdict, hold_blocked: bool = False) -> Candidate[int, str]:
    reason = RetentionReason.EXPIRED if verdict is Verdict.DELETE else RetentionReason.NOTICE_PENDING
    return Candidate(key=i, row_id=f"row{i}", decision=RetentionDecision(verdict, reason, hold_blocked))


def test_a_retained_head_of_50_does_not_stop_deletion_of_row_51() -> None:
    scan = [cand(i, Verdict.RETAIN) for i in range(1, 51)] + [cand(51, Verdict.DELETE)]
    page = page_deletions(scan, scan_complete=True)
    assert page.delete == ("row51",)
    assert page.next_cursor is None and page.examined == 51


def test_a_retained_page_moves_the_cursor_past_it() -> None:
    # The scan window is exactly the retained head: nothing to delete here, but the cursor moves on,
    # so the next pass reads row 51 instead of the same fifty rows again.
    first = page_deletions([cand(i, Verdict.RETAIN) for i in range(1, 51)], scan_complete=False)
    assert first.delete == () and first.next_cursor == 50
    second = page_deletions([cand(51, Verdict.DELETE)], scan_complete=True)
    assert second.delete == ("row51",)


def test_the_batch_bounds_deletions_and_the_cursor_stops_after_the_last_one() -> None:
    scan = [cand(i, Verdict.DELETE if i % 2 else Verdict.RETAIN) for i in range(1, 201)]
    page = page_deletions(scan, scan_complete=True, batch_max=50)
    assert len(page.delete) == 50 and page.delete[-1] == "row99"
    assert page.next_cursor == 99 and page.examined == 99


def test_hold_blocked_rows_are_reported_for_audit() -> None:
    scan = [cand(1, Verdict.RETAIN, hold_blocked=True), cand(2, Verdict.DELETE), cand(3, Verdict.RETAIN)]
    page = page_deletions(scan, scan_complete=True)
    assert page.hold_blocked == ("row1",) and page.delete == ("row2",)


def test_an_empty_scan_starts_over() -> None:
    page: DeletionPage[int, str] = page_deletions([], scan_complete=True)
    assert page.delete == () and page.next_cursor is None


def test_seed_numbers() -> None:
    assert budgets.RETENTION_CEILING_SECONDS_DEFAULT == 14 * 86_400
    assert (budgets.RETENTION_DELETE_BATCH_MAX, budgets.RETENTION_SCAN_WINDOW_MAX) == (50, 500)


@pytest.mark.parametrize(("recorded", "holding", "due"), [
    (None, ["hld_1"], True),  # the first time a hold keeps the row
    (["hld_1"], ["hld_1"], False),  # every later pass of the same episode
    (["hld_1"], ["hld_1", "hld_2"], True),  # another hold placed: a new episode
    (["hld_1", "hld_2"], ["hld_2", "hld_1"], False),  # order does not matter
    (["hld_1", "hld_2"], ["hld_2"], True),  # one lifted while another still covers it
    (["hld_1"], ["hld_2"], True),  # lifted, and a new hold placed later
    (None, [], False), (["hld_1"], [], False),  # nothing holds it: nothing to audit
])
def test_hold_blocked_is_due_once_per_hold_episode(recorded: list[str] | None, holding: list[str], due: bool) -> None:
    assert hold_blocked_audit_due(recorded, holding) is due


@pytest.mark.parametrize(("current", "expected"), [
    (None, NOW + timedelta(seconds=budgets.RETENTION_NOTICE_GRACE_SECONDS)),
    # No half-window floor at a give-up: a value six days ahead still moves to a full grace from now.
    (NOW + timedelta(days=6), NOW + timedelta(seconds=budgets.RETENTION_NOTICE_GRACE_SECONDS)),
    (NOW - timedelta(days=1), NOW + timedelta(seconds=budgets.RETENTION_NOTICE_GRACE_SECONDS)),
    # Never backwards.
    (NOW + timedelta(seconds=budgets.RETENTION_NOTICE_GRACE_SECONDS), None),
    (NOW + timedelta(days=30), None),
])
def test_a_give_up_writes_a_fresh_grace_period(current: datetime | None, expected: datetime | None) -> None:
    assert retain_until_at_give_up(current, NOW) == expected
