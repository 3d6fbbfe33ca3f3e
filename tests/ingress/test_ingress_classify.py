"""automated() and reply_refusal() against the Pigeonhole cases, the real bounces, and a table."""

from __future__ import annotations

import re

import pytest

from mailnode.ingress.classify import MessageFacts, Reason, automated, facts_from, reply_refusal
from mailnode.ingress.parse import parse_message
from mailnode.ingress.reports import ReportKind, read_report
from tests.corpus import CORPUS, read_jsonl

AUTOREPLY = read_jsonl("autoreply/cases.jsonl")
BOUNCES = read_jsonl("bounces/expected.jsonl")


def _facts(raw: bytes, envelope_from: str | None) -> MessageFacts:
    return facts_from(parse_message(raw), envelope_from, read_report(raw))


@pytest.mark.parametrize("case", AUTOREPLY, ids=lambda c: c["name"])
def test_reply_refusal_matches_should_auto_reply(case: dict) -> None:
    facts = _facts(case["message"].encode("utf-8"), case["envelope_from"])
    refusal = reply_refusal(facts, [case["envelope_to"], *case["user_addresses"]])
    assert (refusal is None) == case["should_auto_reply"], (refusal, case["why"])


#: The reason each corpus kind must get when nothing but the message itself is known.
KIND_REASONS = {
    "bounce": {Reason.DELIVERY_REPORT},
    "complaint": {Reason.FEEDBACK_REPORT},
    "auto_reply": {Reason.AUTO_SUBMITTED, Reason.VACATION_MARKER, Reason.AUTO_RESPONSE_SUPPRESS},
}


@pytest.mark.parametrize("record", BOUNCES, ids=lambda r: r["file"])
def test_corpus_reports_and_auto_replies_are_automated(record: dict) -> None:
    raw = (CORPUS / "bounces" / record["file"]).read_bytes()
    # The envelope is unknown here (no SMTP): the message alone must say it is automated.
    reason = automated(_facts(raw, None))
    if record["file"].startswith("is-not-bounce"):
        assert reason is None
    elif record["kind"] == "not_bounce":  # lhost-amazonses-12: a delivery notice is still a report.
        assert reason is Reason.DELIVERY_REPORT
    else:
        assert reason in KIND_REASONS[record["kind"]]
    if record["kind"] in ("bounce", "complaint", "auto_reply"):
        print(record["file"], reason.value if reason else None)


@pytest.mark.parametrize(
    "record",
    [r for r in BOUNCES if r["message"]["headers"].get("Return-Path") == "<>"],
    ids=lambda r: r["file"],
)
def test_null_return_path_is_reason_null_sender(record: dict) -> None:
    raw = (CORPUS / "bounces" / record["file"]).read_bytes()
    assert automated(_facts(raw, "")) is Reason.NULL_SENDER


def _facts_of(
    headers: dict[str, str],
    envelope_from: str | None = "person@example.org",
    from_address: str = "person@example.org",
    report: ReportKind = ReportKind.NONE,
    recipients: tuple[str, ...] = ("me@example.com",),
) -> MessageFacts:
    return MessageFacts(
        envelope_from=envelope_from,
        from_address=from_address,
        headers=tuple((k.lower(), v) for k, v in headers.items()),
        report_kind=report,
        recipients=recipients,
    )


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (_facts_of({}), None),
        (_facts_of({}, envelope_from=""), Reason.NULL_SENDER),
        (_facts_of({}, envelope_from="<>"), Reason.NULL_SENDER),
        (_facts_of({}, envelope_from=None), None),
        (_facts_of({}, report=ReportKind.DELIVERY_STATUS), Reason.DELIVERY_REPORT),
        (_facts_of({}, report=ReportKind.FEEDBACK), Reason.FEEDBACK_REPORT),
        (_facts_of({"Auto-Submitted": "auto-replied"}), Reason.AUTO_SUBMITTED),
        (_facts_of({"Auto-Submitted": "auto-generated; owner-email=x@example.com"}), Reason.AUTO_SUBMITTED),
        (_facts_of({"Auto-Submitted": "No"}), None),
        (_facts_of({"Auto-Submitted": "no (a person)"}), None),
        (_facts_of({"X-Autoreply": "yes"}), Reason.VACATION_MARKER),
        (_facts_of({"X-Autorespond": "x"}), Reason.VACATION_MARKER),
        (_facts_of({"X-Apple-Action": "VACATION"}), Reason.VACATION_MARKER),
        (_facts_of({"X-Apple-Action": "OTHER"}), None),
        (_facts_of({"Precedence": "BULK"}), Reason.PRECEDENCE),
        (_facts_of({"Precedence": "list"}), Reason.PRECEDENCE),
        (_facts_of({"Precedence": "junk"}), Reason.PRECEDENCE),
        (_facts_of({"Precedence": "normal"}), None),
        (_facts_of({"List-Unsubscribe": "<mailto:u@example.net>"}), Reason.LIST_HEADER),
        (_facts_of({"List-Archive": "<https://example.net>"}), Reason.LIST_HEADER),
        (_facts_of({"X-Auto-Response-Suppress": "All"}), Reason.AUTO_RESPONSE_SUPPRESS),
        (_facts_of({"X-Auto-Response-Suppress": "DR, OOF, AutoReply"}), Reason.AUTO_RESPONSE_SUPPRESS),
        (_facts_of({"X-Auto-Response-Suppress": "DR, RN"}), None),
        (_facts_of({}, envelope_from="MAILER-DAEMON@mx.example.org"), Reason.SYSTEM_SENDER),
        (_facts_of({}, envelope_from="listserv@lists.example.org"), Reason.SYSTEM_SENDER),
        (_facts_of({}, envelope_from="Majordomo@lists.example.org"), Reason.SYSTEM_SENDER),
        (_facts_of({}, envelope_from="news-request-bounces@lists.example.org"), Reason.SYSTEM_SENDER),
        (_facts_of({}, envelope_from="owner-announce@lists.example.org"), Reason.SYSTEM_SENDER),
        (
            _facts_of({}, envelope_from=None, from_address="mailer-daemon@mx.example.org"),
            Reason.SYSTEM_SENDER,
        ),
        (_facts_of({}, envelope_from="the-owner-x@example.org"), None),
        (_facts_of({}, envelope_from="requester@example.org"), None),
    ],
)
def test_automated_table(facts: MessageFacts, expected: Reason | None) -> None:
    assert automated(facts) is expected


@pytest.mark.parametrize(
    ("facts", "mailbox", "expected"),
    [
        (_facts_of({}), ["me@example.com"], None),
        (_facts_of({}, recipients=("ME@Example.COM",)), ["me@example.com"], None),
        (_facts_of({}, recipients=("other@example.com",)), ["me@example.com"], Reason.NOT_ADDRESSED),
        (_facts_of({}, recipients=()), ["me@example.com"], Reason.NOT_ADDRESSED),
        (_facts_of({}, recipients=("alias@example.com",)), ["me@example.com", "alias@example.com"], None),
        (_facts_of({}, envelope_from="Me@example.com"), ["me@example.com"], Reason.OWN_ADDRESS),
        (
            _facts_of({"Precedence": "bulk"}, envelope_from="me@example.com"),
            ["me@example.com"],
            Reason.PRECEDENCE,
        ),
    ],
)
def test_reply_refusal_table(facts: MessageFacts, mailbox: list[str], expected: Reason | None) -> None:
    assert reply_refusal(facts, mailbox) is expected


def test_resent_to_counts_as_addressed() -> None:
    raw = b"From: a@example.org\r\nTo: list@example.net\r\nResent-To: me@example.com\r\n\r\nx\r\n"
    assert reply_refusal(_facts(raw, "a@example.org"), ["me@example.com"]) is None


def test_every_reason_token_is_documented() -> None:
    documented = set(re.findall(r"``([a-z_]+)``", Reason.__doc__ or ""))
    assert {reason.value for reason in Reason} <= documented
