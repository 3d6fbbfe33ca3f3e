"""What a purge deletes, as tables (no database): the in-flight row of the retention table, which sends a
purge ends, whether a lease is live, the message columns it clears, and the deletion note a read shows.
spec/transactional.md §5."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailnode.retention import rules as retention
from mailnode.retention.rules import RetentionDecision, RetentionFacts, RetentionReason, Verdict, decide
from mailnode.schema.mail_messages import messages
from mailnode.vocabulary.send_states import STATE_OF_REASON, SendState, StateReason

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
D = timedelta(days=1)


def facts(age: timedelta, kind: str | None = "sealed_body", **kw: object) -> RetentionFacts:
    return RetentionFacts(kind=kind, created_at=NOW - age, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("row", "expected"), [
    # A send a worker is handing over now keeps its body, even past the ceiling.
    (facts(30 * D, send_in_flight=True, send_pending=True), RetentionDecision(Verdict.RETAIN,
                                                                              RetentionReason.SEND_IN_FLIGHT)),
    (facts(8 * D, send_in_flight=True), RetentionDecision(Verdict.RETAIN, RetentionReason.SEND_IN_FLIGHT)),
    # A hold still wins over it, and says it blocked nothing (the lease keeps it too).
    (facts(30 * D, send_in_flight=True, under_hold=True), RetentionDecision(Verdict.RETAIN,
                                                                            RetentionReason.LEGAL_HOLD, False)),
    # Without the lease the ceiling deletes a pending send.
    (facts(30 * D, send_pending=True), RetentionDecision(Verdict.DELETE, RetentionReason.CEILING)),
    # An unknown kind is kept whatever the lease says.
    (facts(30 * D, kind="attachment", send_in_flight=True),
     RetentionDecision(Verdict.RETAIN, RetentionReason.KIND_NOT_CLASSIFIED)),
])
def test_a_send_under_a_live_lease_is_retained(row: RetentionFacts, expected: RetentionDecision) -> None:
    assert decide(row, NOW) == expected


def test_every_retention_reason_has_a_verdict() -> None:
    assert set(retention.VERDICT_OF_REASON) == set(RetentionReason)


@pytest.mark.parametrize(("kind", "state", "ends"), [
    # Only a send that provably has not left is ended; ``outcome_unknown`` may have reached its recipients.
    *[("sealed_body", s.value, s in (SendState.HELD, SendState.AWAITING, SendState.THROTTLED)) for s in SendState],
    ("sealed_body", "sent", False),  # a state mailnode does not know: no dispatch moves it
    ("sealed_body", None, False),  # no send row
    ("inbound_raw", "held", False),
    (None, "held", False),
    ("attachment", "awaiting", False),
])
def test_which_purges_end_a_send(kind: str | None, state: str | None, ends: bool) -> None:
    assert retention.purge_ends_send(kind, state) is ends


def test_a_send_that_may_still_go_keeps_its_body_until_the_ceiling_whether_or_not_a_purge_ends_it() -> None:
    assert retention.PENDING_SEND_STATES == retention.NOT_YET_LEFT | {SendState.OUTCOME_UNKNOWN.value}
    assert retention.NOT_YET_LEFT == {"held", "awaiting", "throttled"}


@pytest.mark.parametrize(("lease_until", "live"), [
    (None, False),
    (NOW - timedelta(seconds=1), False),
    (NOW, False),  # a lease ends at its instant (recover_claims takes lease_until < now; the sweep may too)
    (NOW + timedelta(seconds=1), True),
])
def test_a_lease_is_live_until_it_ends(lease_until: datetime | None, live: bool) -> None:
    assert retention.lease_live(lease_until, NOW) is live


def test_the_purge_withholds_with_its_own_reason() -> None:
    assert STATE_OF_REASON[StateReason.RETENTION_DELETED] is SendState.WITHHELD


def test_every_message_column_is_either_cleared_or_kept() -> None:
    cleared, kept = set(retention.MESSAGE_CLEARED), set(retention.MESSAGE_KEPT)
    assert cleared.isdisjoint(kept)
    assert cleared | kept == set(messages.c.keys())
    # The body and everything quoting the message's words go; the mailbox's index stays.
    assert {"text_body", "headers", "defects", "parse_error"} == cleared
    assert {"subject", "from_address", "received_at", "conversation_id"} <= kept


def test_cleared_not_null_columns_are_left_an_empty_list() -> None:
    for name, value in retention.MESSAGE_CLEARED.items():
        assert (value is None) is messages.c[name].nullable, name


def test_the_deletion_note_speaks_the_words_of_the_410() -> None:
    note = retention.deletion_note(source_id="msg_x", kind="inbound_raw", purged_at=NOW)
    error = retention.content_deleted(source_id="msg_x", kind="inbound_raw", purged_at=NOW)
    assert note == {"at": "2026-03-20T09:00:00+00:00", "setting": "inbound_raw_seconds", "words": error.what,
                    "fix": error.fix}
    assert "deleted by retention at 2026-03-20T09:00:00+00:00" in note["words"]
