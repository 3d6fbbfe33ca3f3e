"""Mail classes: the rules of each class, total over the enum, and an unknown class failing closed."""

from __future__ import annotations

import pytest

from mailnode.vocabulary.mail_classes import (
    ALL_GATES,
    CLASS_RULES,
    DEFAULT_MAIL_CLASS,
    UNIVERSAL_GATES,
    UNKNOWN_CLASS_RULES,
    DeliveredBy,
    FailureRule,
    Gate,
    MailClass,
    RetryRule,
    governed_by,
    parse_mail_class,
    rules_for,
)


@pytest.mark.parametrize("mail_class", list(MailClass))
def test_every_class_has_rules(mail_class: MailClass) -> None:
    assert mail_class in CLASS_RULES
    assert rules_for(mail_class.value) is CLASS_RULES[mail_class]


def test_the_rules_map_has_nothing_but_the_classes() -> None:
    assert set(CLASS_RULES) == set(MailClass)


def test_the_default_class_is_correspondence() -> None:
    assert DEFAULT_MAIL_CLASS is MailClass.CORRESPONDENCE


@pytest.mark.parametrize(
    ("mail_class", "delivered_by", "retry", "on_failure", "swept"),
    [
        (
            "correspondence",
            DeliveredBy.DISPATCH_SWEEP,
            RetryRule.THROTTLED_AND_DEDUP_WINDOW,
            FailureRule.STATE_AND_AUTHOR_NOTICE,
            True,
        ),
        ("realtime", DeliveredBy.REQUEST, RetryRule.NEVER, FailureRule.TERMINAL_VAGUE_503, False),
        ("deferrable", DeliveredBy.FIRST_BY_DISPATCH_THEN_SWEEPER, RetryRule.SWEEPER, FailureRule.AGED_OUT, True),
    ],
)
def test_spec_section_1_table(
    mail_class: str, delivered_by: DeliveredBy, retry: RetryRule, on_failure: FailureRule, swept: bool
) -> None:
    rules = rules_for(mail_class)
    assert (rules.delivered_by, rules.retry, rules.on_failure, rules.swept) == (
        delivered_by,
        retry,
        on_failure,
        swept,
    )


@pytest.mark.parametrize("mail_class", list(MailClass))
@pytest.mark.parametrize("gate", [Gate.DOMAIN_PAUSE, Gate.PROVIDER_BREAKER, Gate.RATE_BREAKERS])
def test_breakers_provider_and_domain_pause_govern_every_class(mail_class: MailClass, gate: Gate) -> None:
    assert governed_by(mail_class.value, gate)


@pytest.mark.parametrize("gate", [Gate.POLICY, Gate.APPROVALS, Gate.BUTLER_RELEASE])
@pytest.mark.parametrize(
    ("mail_class", "governed"), [("correspondence", True), ("realtime", False), ("deferrable", False)]
)
def test_policy_and_approvals_govern_correspondence_only(gate: Gate, mail_class: str, governed: bool) -> None:
    assert governed_by(mail_class, gate) is governed


@pytest.mark.parametrize("value", [None, "", "Realtime", "bulk", "correspondence ", "sent"])
def test_an_unknown_class_fails_closed(value: str | None) -> None:
    assert parse_mail_class(value) is None
    rules = rules_for(value)
    assert rules is UNKNOWN_CLASS_RULES
    assert rules.gates == ALL_GATES
    assert rules.retry is RetryRule.NEVER
    assert rules.delivered_by is DeliveredBy.NOBODY
    assert not rules.swept


def test_universal_gates_are_a_subset_of_all() -> None:
    assert UNIVERSAL_GATES < ALL_GATES == frozenset(Gate)
