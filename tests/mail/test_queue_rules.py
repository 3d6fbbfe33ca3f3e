"""The queue's pure decisions as tables: which view holds a case, the counts, snippets, ages, labels."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailnode.errors import MailnodeError
from mailnode.mail.queue_rules import (
    VIEW_RULES,
    CaseGroup,
    View,
    age_seconds,
    age_words,
    correspondent_of_send,
    counts,
    holder_label,
    in_view,
    next_cursor,
    parse_view,
    snippet,
)

ME, OTHER = "usr_me", "usr_other"


@pytest.mark.parametrize(("state", "holder", "views"), [
    ("open", None, {View.UNASSIGNED, View.OPEN}),
    ("open", ME, {View.MINE, View.OPEN}),
    ("open", OTHER, {View.OPEN}),
    ("closed", None, {View.CLOSED}),
    ("closed", ME, {View.CLOSED}),
    ("closed", OTHER, {View.CLOSED}),
    ("reopened?", None, set()),  # a state never seen is in no view (fails closed)
])
def test_which_views_hold_a_case(state: str, holder: str | None, views: set[View]) -> None:
    assert {v for v in View if in_view(v, state=state, holder_id=holder, principal_id=ME)} == views


def test_every_view_but_sent_has_a_rule() -> None:
    assert set(VIEW_RULES) == set(View) - {View.SENT}


def test_counts_add_each_group_to_every_view_holding_it() -> None:
    groups = [CaseGroup("open", None, 4), CaseGroup("open", ME, 2), CaseGroup("open", OTHER, 3),
              CaseGroup("closed", ME, 5), CaseGroup("closed", None, 1)]
    assert counts(groups, sent=7, principal_id=ME) == {View.UNASSIGNED: 4, View.MINE: 2, View.OPEN: 9,
                                                      View.CLOSED: 6, View.SENT: 7}
    assert counts([], sent=0, principal_id=ME) == {v: 0 for v in View}


@pytest.mark.parametrize(("text", "view"), [(None, View.UNASSIGNED), ("", View.UNASSIGNED), ("mine", View.MINE),
                                            ("open", View.OPEN), ("closed", View.CLOSED), ("sent", View.SENT)])
def test_parse_view(text: str | None, view: View) -> None:
    assert parse_view(text) is view


@pytest.mark.parametrize("text", ["Mine", "all", "handed_over", "unassigned "])
def test_an_unknown_view_is_refused_naming_the_views(text: str) -> None:
    with pytest.raises(MailnodeError) as e:
        parse_view(text)
    assert e.value.code == "E_QUEUE_VIEW_UNKNOWN" and e.value.status == 422
    assert e.value.detail["views"] == ["unassigned", "mine", "open", "closed", "sent"]


@pytest.mark.parametrize(("text", "size", "out"), [
    (None, 20, ""),
    ("", 20, ""),
    ("Hello,\n\n  the parcel   is late.", 40, "Hello, the parcel is late."),
    ("Thanks!\n\nOn Tue, 1 Dec 2026, Alice wrote:\n> old words\n>> older", 40, "Thanks!"),
    ("Danke\nAm 1.12.2026 schrieb Bob:\n> alt", 40, "Danke"),
    ("abcdefghij klmnop", 10, "abcdefghij…"),
    ("abcde fghij", 6, "abcde…"),
])
def test_snippet(text: str | None, size: int, out: str) -> None:
    assert snippet(text, size) == out


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("delta", "seconds", "words"), [
    (timedelta(seconds=-30), 0, "just now"),
    (timedelta(seconds=59), 59, "just now"),
    (timedelta(minutes=5, seconds=10), 310, "5 min"),
    (timedelta(hours=3, minutes=59), 14_340, "3 h"),
    (timedelta(days=2, hours=1), 176_400, "2 d"),
    (timedelta(days=43), 3_715_200, "6 w"),
    (timedelta(days=400), 34_560_000, "1 y"),
])
def test_age(delta: timedelta, seconds: int, words: str) -> None:
    assert age_seconds(NOW - delta, NOW) == seconds
    assert age_words(seconds) == words


@pytest.mark.parametrize(("holder", "out"), [(None, None), (ME, "you"), (OTHER, "Olga"), ("usr_gone", "usr_gone")])
def test_holder_label(holder: str | None, out: str | None) -> None:
    assert holder_label(holder, {OTHER: "Olga", ME: "Me Myself"}, ME) == out


@pytest.mark.parametrize(("to", "names", "out"), [
    ([], None, (None, None)),
    (["a@x.test", "b@x.test"], None, (None, "a@x.test")),
    (["a@x.test"], {"a@x.test": "Ann"}, ("Ann", "a@x.test")),
])
def test_correspondent_of_send(to: list[str], names: dict[str, str] | None, out: tuple[str | None, str | None]) -> None:
    assert correspondent_of_send(to, names) == out


@pytest.mark.parametrize(("keys", "limit", "out"), [([], 2, None), (["a"], 2, None), (["a", "b"], 2, "b")])
def test_next_cursor(keys: list[str], limit: int, out: str | None) -> None:
    assert next_cursor(keys, limit) == out
