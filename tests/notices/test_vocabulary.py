"""Notices to people: the vocabulary, the dedup key per episode, trip episodes, and no notice about a notice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailnode import budgets
from mailnode.notices.rules import (
    AUDIENCE_OF_KIND,
    EPISODE_PREFIX_OF_KIND,
    Audience,
    FailureFacts,
    NoticeKind,
    SendFailure,
    TripEpisode,
    advance_trip_episode,
    dedup_key,
    is_about_a_notice,
    notice_for_failure,
    parse_notice_kind,
    trip_episode_id,
)

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
USR = "usr_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A"
SND = "snd_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B"
EPISODES = {
    NoticeKind.APPROVAL_ASKED: "ast_01JDKZ8Q4M6V8R2T0W3X5Y7Z9C",
    NoticeKind.DOMAIN_PAUSE_PLACED: "dpz_01JDKZ8Q4M6V8R2T0W3X5Y7Z9D",
    NoticeKind.DOMAIN_PAUSE_LIFTED: "dpz_01JDKZ8Q4M6V8R2T0W3X5Y7Z9D",
    NoticeKind.BUTLER_PAUSED: "bpz_01JDKZ8Q4M6V8R2T0W3X5Y7Z9E",
    NoticeKind.SEND_FAILED: SND,
    NoticeKind.BREAKER_TRIPPED: "breaker_bounce_rate@2026-03-20T09:00:00+00:00",
    NoticeKind.WEBHOOK_DISABLED: "whe_01JDKZ8Q4M6V8R2T0W3X5Y7Z9F@2026-03-20T09:00:00+00:00",
}


@pytest.mark.parametrize("kind", list(NoticeKind))
def test_every_kind_has_an_audience_an_episode_and_a_key(kind: NoticeKind) -> None:
    assert kind in AUDIENCE_OF_KIND and kind in EPISODE_PREFIX_OF_KIND
    key = dedup_key(kind, EPISODES[kind], USR)
    assert key == f"{kind.value}:{EPISODES[kind]}:{USR}"


def test_placed_and_lifted_are_different_notices_about_one_pause() -> None:
    pause = EPISODES[NoticeKind.DOMAIN_PAUSE_PLACED]
    assert dedup_key("domain_pause_placed", pause, USR) != dedup_key("domain_pause_lifted", pause, USR)


@pytest.mark.parametrize(
    ("kind", "episode", "recipient"),
    [
        ("approval_wanted", "ast_01JDKZ8Q4M6V8R2T0W3X5Y7Z9C", USR),
        ("approval_asked", SND, USR),
        ("send_failed", "", USR),
        ("send_failed", SND, "btl_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A"),
        ("breaker_tripped", "", USR),
    ],
)
def test_a_malformed_key_is_a_programming_error(kind: str, episode: str, recipient: str) -> None:
    with pytest.raises(ValueError):
        dedup_key(kind, episode, recipient)


@pytest.mark.parametrize("value", [None, "", "Send_Failed", "send_failed_twice"])
def test_an_unknown_kind_is_not_parsed(value: str | None) -> None:
    assert parse_notice_kind(value) is None


@pytest.mark.parametrize(
    ("kind", "audience"),
    [
        ("approval_asked", Audience.DECIDERS),
        ("domain_pause_placed", Audience.ADMINISTRATORS),
        ("domain_pause_lifted", Audience.ADMINISTRATORS),
        ("butler_paused", Audience.BUTLER_OWNERS),
        ("send_failed", Audience.AUTHOR),
        ("breaker_tripped", Audience.ADMINISTRATORS),
    ],
)
def test_audiences(kind: str, audience: Audience) -> None:
    assert AUDIENCE_OF_KIND[NoticeKind(kind)] is audience


def failure(**kw: object) -> FailureFacts:
    base: dict[str, object] = {
        "send_id": SND,
        "author_id": USR,
        "mail_class": "correspondence",
        "notice_id": None,
        "auto_submitted": False,
        "failure": "bounced",
    }
    base.update(kw)
    return FailureFacts(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("facts", "notified"),
    [
        (failure(), True),
        (failure(failure="refused"), True),
        (failure(failure="withheld"), True),
        (failure(failure="gave_up", mail_class="deferrable"), True),
        (failure(failure="decision_needed"), True),
        (failure(author_id="btl_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A"), True),
        # A notice, or any system mail, never produces another notice.
        (failure(notice_id="ntf_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A", mail_class="deferrable", author_id=None), False),
        (failure(notice_id="ntf_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A", author_id=USR), False),
        (failure(auto_submitted=True), False),
        # An application reads its send's state; realtime failures were answered 503 in the request.
        (failure(author_id="app_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A", mail_class="deferrable"), False),
        (failure(mail_class="realtime"), False),
        (failure(author_id=None), False),
        # Unknown values fail closed: no mail about what mailnode cannot name.
        (failure(failure="exploded"), False),
        (failure(mail_class="bulk"), False),
    ],
)
def test_notice_for_failure(facts: FailureFacts, notified: bool) -> None:
    request = notice_for_failure(facts)
    assert (request is not None) is notified
    if request is not None:
        assert request.kind is NoticeKind.SEND_FAILED and request.episode == SND
        assert request.audience is Audience.AUTHOR and request.failure is SendFailure(facts.failure)


def test_the_bounce_storm_four_bouncing_notices_are_four_events_and_zero_notices() -> None:
    # Four notices went to four contact addresses that all bounce. Each bounce is an event (recorded by
    # the events layer, counted here as the input); none produces a notice, so nothing bounces again.
    notices = [f"ntf_01JDKZ8Q4M6V8R2T0W3X5Y7Z9{c}" for c in "ABCD"]
    events = [
        failure(
            send_id=f"snd_01JDKZ8Q4M6V8R2T0W3X5Y7ZA{c}",
            notice_id=n,
            mail_class="deferrable",
            author_id=None,
            auto_submitted=True,
        )
        for c, n in zip("ABCD", notices, strict=True)
    ]
    assert len(events) == 4
    assert all(is_about_a_notice(e) for e in events)
    assert [notice_for_failure(e) for e in events] == [None, None, None, None]


@pytest.mark.parametrize("f", list(SendFailure))
def test_every_failure_notifies_a_person_author(f: SendFailure) -> None:
    assert notice_for_failure(failure(failure=f.value)) is not None


# --- breaker trip episodes ------------------------------------------------------------------------

M = timedelta(minutes=1)
QUIET = budgets.NOTICE_BREAKER_EPISODE_QUIET_SECONDS


def run(observations: list[tuple[timedelta, bool]]) -> list[bool]:
    episode: TripEpisode | None = None
    notified: list[bool] = []
    for offset, tripped in observations:
        episode, notify = advance_trip_episode(episode, "breaker_bounce_rate", tripped, NOW + offset)
        notified.append(notify)
    return notified


@pytest.mark.parametrize(
    ("observations", "notified"),
    [
        ([(0 * M, False), (10 * M, False)], [False, False]),
        ([(0 * M, True), (10 * M, True), (20 * M, True)], [True, False, False]),
        # Flapping inside the quiet time is one episode.
        (
            [(0 * M, True), (10 * M, False), (20 * M, True), (30 * M, False), (40 * M, True)],
            [True, False, False, False, False],
        ),
        # A re-trip after the quiet time is a new episode.
        ([(0 * M, True), (10 * M, False), (10 * M + timedelta(seconds=QUIET), True)], [True, False, True]),
    ],
)
def test_once_per_trip_episode(observations: list[tuple[timedelta, bool]], notified: list[bool]) -> None:
    assert run(observations) == notified


def test_the_episode_id_names_the_breaker_and_its_start() -> None:
    episode, _ = advance_trip_episode(None, "breaker_volume", True, NOW)
    assert episode is not None
    assert trip_episode_id(episode) == "breaker_volume@2026-03-20T09:00:00+00:00"
    resumed, _ = advance_trip_episode(episode, "breaker_volume", True, NOW + 5 * M)
    assert resumed is not None and trip_episode_id(resumed) == trip_episode_id(episode)
