"""The conversation page's words for the reading vocabularies: total over their enums, failing closed."""

from __future__ import annotations

import pytest

from mailnode.ingress.attachments import Danger
from mailnode.ingress.classify import Reason
from mailnode.outbound.render import AUTO_SUBMITTED_VALUES
from mailnode.web.composer import split_addresses
from mailnode.web.words import (
    AUTOMATED_WORDS,
    DANGER_WORDS,
    SEND_AUTOMATED_WORDS,
    automated_words,
    danger_words,
    send_automated_words,
)


@pytest.mark.parametrize("danger", list(Danger))
def test_every_danger_has_its_warning(danger: Danger) -> None:
    assert danger in DANGER_WORDS and danger_words(danger.value) == DANGER_WORDS[danger]


@pytest.mark.parametrize("reason", list(Reason))
def test_every_automated_reason_has_its_words(reason: Reason) -> None:
    assert reason in AUTOMATED_WORDS and automated_words(reason.value) == AUTOMATED_WORDS[reason]


@pytest.mark.parametrize("value", AUTO_SUBMITTED_VALUES)
def test_every_auto_submitted_value_of_a_send_has_its_words(value: str) -> None:
    assert value in SEND_AUTOMATED_WORDS and send_automated_words(value) == SEND_AUTOMATED_WORDS[value]
    assert set(SEND_AUTOMATED_WORDS) == set(AUTO_SUBMITTED_VALUES)


@pytest.mark.parametrize(("value", "words"), [
    (None, None),
    ("polyglot", "mailnode flagged this attachment ('polyglot') for a reason it does not know; do not open it."),
])
def test_a_danger_never_seen_still_warns(value: str | None, words: str | None) -> None:
    assert danger_words(value) == words


@pytest.mark.parametrize(("value", "words"), [
    (None, None),
    ("robot_vibes", "Marked automated for a reason mailnode does not know ('robot_vibes')."),
])
def test_an_automated_reason_never_seen_says_so(value: str | None, words: str | None) -> None:
    assert automated_words(value) == words


@pytest.mark.parametrize(("typed", "recipients"), [
    ("", []),
    ("a@x.test", ["a@x.test"]),
    ('"Doe, Jane" <jane@x.test>, bob@y.test', ['"Doe, Jane" <jane@x.test>', "bob@y.test"]),
    ("a@x.test;\n b@y.test ,, ", ["a@x.test", "b@y.test"]),
    ("Customer <c@remote.test>", ["Customer <c@remote.test>"]),
])
def test_recipients_typed_in_one_field(typed: str, recipients: list[str]) -> None:
    assert split_addresses(typed) == recipients
