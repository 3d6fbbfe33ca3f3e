"""The notice sweep's pure decisions as tables (issue 9 "Notices"): which audit entry about a send is a failure
a person hears of, who an open approval stage asks, which seal errors are a notice's own, when a refused
notice is tried again, and the sweep's schedule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from croniter import croniter

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.governance.approvals import SubjectKind
from mailnode.notices import io as notices_io
from mailnode.notices.rules import (
    FAILURE_ACTIONS,
    FAILURE_WORDS,
    FailureFacts,
    SendFailure,
    failure_of_audit,
    notice_for_failure,
    seal_refused_the_notice,
    seal_retry_delay_seconds,
    stage_deciders,
)
from mailnode.schedules import interval_cron
from mailnode.vocabulary.mail_classes import MailClass
from mailnode.vocabulary.send_states import StateReason

CORR, DEFER, RT = "correspondence", "deferrable", "realtime"
DEDUP = "dedup_window_closed"
D = SendFailure.DECISION_NEEDED


@pytest.mark.parametrize(
    ("action", "reason", "mail_class", "failure"),
    [
        ("send.refused", None, CORR, SendFailure.REFUSED),
        ("send.refused", "anything", DEFER, SendFailure.REFUSED),
        ("send.withheld", "gave_up", DEFER, SendFailure.GAVE_UP),
        ("send.withheld", "domain_paused", CORR, SendFailure.WITHHELD),
        ("send.withheld", None, CORR, SendFailure.WITHHELD),
        # The sweeper's to_person: the key's window closed, nothing retries it.
        ("send.outcome_unknown", DEDUP, DEFER, D),
        ("send.outcome_unknown", DEDUP, CORR, D),
        # A hand-over or a recovered claim left correspondence ambiguous: never re-driven automatically.
        ("send.outcome_unknown", None, CORR, D),
        # Deferrable mail without the reason is the sweeper's to retry inside its window: not yet.
        ("send.outcome_unknown", None, DEFER, None),
        ("send.outcome_unknown", None, RT, None),
        ("send.outcome_unknown", None, "bulk", None),
        ("send.outcome_unknown", None, None, None),
        ("send.outcome_unknown", "realtime_not_retried", CORR, None),
        ("send.outcome_unknown", "made_up", CORR, None),
        ("send.handed_over", None, CORR, None),
        ("send.throttled", None, DEFER, None),
        ("send.sealed", None, CORR, None),
    ],
)
def test_failure_of_audit(action: str, reason: str | None, mail_class: str | None,
                          failure: SendFailure | None) -> None:
    assert failure_of_audit(action, reason, mail_class) is failure


@pytest.mark.parametrize("mail_class", [*(c.value for c in MailClass), "bulk", None])
@pytest.mark.parametrize("reason", [None, *(r.value for r in StateReason)])
def test_only_outcome_unknown_without_a_retry_coming_is_a_decision(reason: str | None, mail_class: str | None) -> None:
    got = failure_of_audit("send.outcome_unknown", reason, mail_class)
    expected = reason == DEDUP or (reason is None and mail_class == CORR)
    assert (got is D) is expected and got in (D, None)


def test_the_sweep_reads_every_failure_action() -> None:
    assert set(FAILURE_ACTIONS) <= set(notices_io.ACTION_KINDS)
    assert all(notices_io.ACTION_KINDS[a] is None for a in FAILURE_ACTIONS)


def test_decision_needed_reaches_the_author_only_for_mail_a_person_or_butler_wrote() -> None:
    def facts(mail_class: str, author: str | None, **kw: object) -> FailureFacts:
        base: dict[str, object] = {"send_id": "snd_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B", "author_id": author,
                                   "mail_class": mail_class, "notice_id": None, "auto_submitted": False,
                                   "failure": D.value}
        base.update(kw)
        return FailureFacts(**base)  # type: ignore[arg-type]

    usr, app = "usr_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A", "app_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A"
    assert notice_for_failure(facts(CORR, usr)) is not None
    assert notice_for_failure(facts(DEFER, usr)) is not None
    assert notice_for_failure(facts(DEFER, app)) is None
    assert notice_for_failure(facts(DEFER, None, notice_id="ntf_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A")) is None


def test_every_failure_has_words() -> None:
    assert set(FAILURE_WORDS) == set(SendFailure)


@pytest.mark.parametrize(
    ("holders", "roster", "actor", "decided", "asked"),
    [
        ({"a", "b", "c"}, None, "x", set(), {"a", "b", "c"}),
        # The person who asked is never asked.
        ({"a", "b", "x"}, None, "x", set(), {"a", "b"}),
        # Whoever decided this approval already (a withdrawn decision counts) is not asked again.
        ({"a", "b", "c"}, None, "x", {"a"}, {"b", "c"}),
        # A stage naming a team asks its members who hold the relation; a member without it is not asked.
        ({"a", "b", "c"}, {"b", "c", "t"}, "x", set(), {"b", "c"}),
        ({"a", "b", "c"}, {"b", "c"}, "x", {"b"}, {"c"}),
        ({"a", "b"}, set(), "x", set(), set()),
        ({"a"}, None, None, set(), {"a"}),
    ],
)
def test_stage_deciders(holders: set[str], roster: set[str] | None, actor: str | None, decided: set[str],
                        asked: set[str]) -> None:
    assert stage_deciders(holders, roster, actor, decided) == frozenset(asked)


@pytest.mark.parametrize(("status", "own"), [(400, True), (404, True), (409, True), (422, True), (499, True),
                                             (500, False), (503, False), (399, False)])
def test_which_seal_errors_are_the_notices_own(status: int, own: bool) -> None:
    assert seal_refused_the_notice(status) is own
    assert seal_refused_the_notice(MailnodeError(code="E_X", what="x", status=status).status) is own


B, MAX = budgets.NOTICE_SEAL_RETRY_BASE_SECONDS, budgets.NOTICE_SEAL_RETRY_MAX_SECONDS


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(-1, 0), (0, 0), (1, B), (2, 2 * B), (3, 4 * B), (12, min(2048 * B, MAX)), (13, MAX), (14, MAX), (10_000, MAX)],
)
def test_seal_retry_delay(failures: int, delay: int) -> None:
    assert seal_retry_delay_seconds(failures) == delay


def test_the_first_retry_is_the_next_default_pass_and_the_longest_wait_a_day() -> None:
    assert seal_retry_delay_seconds(1) <= budgets.NOTICE_SWEEP_INTERVAL_SECONDS
    assert max(seal_retry_delay_seconds(n) for n in range(100)) == 86_400


@pytest.mark.parametrize(
    ("seconds", "cron"),
    [(1, "*/1 * * * * *"), (2, "*/2 * * * * *"), (30, "*/30 * * * * *"), (60, "0 */1 * * * *"),
     (300, "0 */5 * * * *"), (600, "0 */10 * * * *"), (1800, "0 */30 * * * *"), (3600, "0 0 * * * *"),
     (0, None), (-30, None), (7, None), (45, None), (90, None), (420, None), (3601, None), (7200, None)],
)
def test_notice_sweep_interval_cron(seconds: int, cron: str | None) -> None:
    if cron is not None:
        assert interval_cron(seconds, "notice_sweep_interval_seconds") == cron
        # Read as DBOS reads it (seconds first): it fires every ``seconds``, evenly, across an hour boundary.
        it = croniter(cron, datetime(2026, 3, 10, 7, 59, tzinfo=UTC), second_at_beginning=True)
        fires = [it.get_next(datetime) for _ in range(4)]
        assert [b - a for a, b in pairwise(fires)] == [timedelta(seconds=seconds)] * 3
        return
    with pytest.raises(MailnodeError) as refused:
        interval_cron(seconds, "notice_sweep_interval_seconds")
    assert refused.value.code == "E_SETTING_MALFORMED" and refused.value.status == 422
    assert refused.value.detail == {"setting": "notice_sweep_interval_seconds", "value": seconds}


def test_the_default_interval_is_a_schedule() -> None:
    assert interval_cron(budgets.NOTICE_SWEEP_INTERVAL_SECONDS, "notice_sweep_interval_seconds") == "*/30 * * * * *"


def test_every_approval_kind_has_words_in_its_notice() -> None:
    assert set(notices_io.APPROVAL_WORDS) == {k.value for k in SubjectKind}
