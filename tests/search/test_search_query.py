"""The search query language, as a table: what a string parses to, and what each refusal names."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailnode.errors import MailnodeError
from mailnode.search.documents import words
from mailnode.search.query import CaseIs, Field, Phrase, SearchQuery, parse_query
from mailnode.search.run import fts5_query, parse_cursor, snippet, tsquery
from mailnode.vocabulary.send_states import SendState


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("invoice", SearchQuery(phrases=(Phrase(Field.ANY, ("invoice",)),))),
    ("Late  INVOICE", SearchQuery(phrases=(Phrase(Field.ANY, ("late",)), Phrase(Field.ANY, ("invoice",))))),
    ('"late invoice"', SearchQuery(phrases=(Phrase(Field.ANY, ("late", "invoice")),))),
    ("alice@example.com", SearchQuery(phrases=(Phrase(Field.ANY, ("alice", "example", "com")),))),
    ("from:alice@example.com", SearchQuery(phrases=(Phrase(Field.FROM, ("alice", "example", "com")),))),
    ('FROM:"Alice Müller"', SearchQuery(phrases=(Phrase(Field.FROM, ("alice", "müller")),))),
    ("to:support subject:refund", SearchQuery(phrases=(Phrase(Field.TO, ("support",)),
                                                       Phrase(Field.SUBJECT, ("refund",))))),
    ("mailbox:Support mailbox:mbx_01ARZ3NDEKTSV4RRFFQ69G5FAV",
     SearchQuery(mailboxes=("Support", "mbx_01ARZ3NDEKTSV4RRFFQ69G5FAV"))),
    ("is:open is:MINE", SearchQuery(case_is=frozenset({CaseIs.OPEN, CaseIs.MINE}))),
    ("is:unassigned is:closed", SearchQuery(case_is=frozenset({CaseIs.UNASSIGNED, CaseIs.CLOSED}))),
    ("is:automated has:attachment", SearchQuery(automated=True, has_attachment=True)),
    ("state:held state:awaiting", SearchQuery(states=frozenset({SendState.HELD, SendState.AWAITING}))),
    ("before:2026-03-01 after:2026/01/15", SearchQuery(before=day(2026, 3, 1), after=day(2026, 1, 15))),
    ("before:2026-03-01 before:2026-02-01 after:2026-01-01 after:2026-01-10",
     SearchQuery(before=day(2026, 2, 1), after=day(2026, 1, 10))),
    ("meet at 10:30", SearchQuery(phrases=(Phrase(Field.ANY, ("meet",)), Phrase(Field.ANY, ("at",)),
                                           Phrase(Field.ANY, ("10", "30"))))),
    ('"-not negation"', SearchQuery(phrases=(Phrase(Field.ANY, ("not", "negation")),))),
    ("from:bob invoice is:open", SearchQuery(phrases=(Phrase(Field.FROM, ("bob",)), Phrase(Field.ANY, ("invoice",))),
                                             case_is=frozenset({CaseIs.OPEN}))),
])
def test_a_query_parses_to(text: str, expected: SearchQuery) -> None:
    assert parse_query(text) == expected


@pytest.mark.parametrize(("text", "code", "token", "position"), [
    ("", "E_SEARCH_QUERY_EMPTY", "", 0),
    ("   ", "E_SEARCH_QUERY_EMPTY", "   ", 0),
    ('invoice "late payment', "E_SEARCH_QUOTE_UNTERMINATED", '"late payment', 8),
    ('subject:"late', "E_SEARCH_QUOTE_UNTERMINATED", 'subject:"late', 0),
    ("invoice re:hello", "E_SEARCH_OPERATOR_UNKNOWN", "re:hello", 8),
    ("http://example.com", "E_SEARCH_OPERATOR_UNKNOWN", "http://example.com", 0),
    ("from:", "E_SEARCH_VALUE_MISSING", "from:", 0),
    ('subject:""', "E_SEARCH_VALUE_MISSING", 'subject:""', 0),
    ("before:2026-02-30", "E_SEARCH_DATE_INVALID", "before:2026-02-30", 0),
    ("x after:yesterday", "E_SEARCH_DATE_INVALID", "after:yesterday", 2),
    ("after:2026-1-5", "E_SEARCH_DATE_INVALID", "after:2026-1-5", 0),
    ("is:urgent", "E_SEARCH_VALUE_UNKNOWN", "is:urgent", 0),
    ("has:pdf", "E_SEARCH_VALUE_UNKNOWN", "has:pdf", 0),
    ("state:sent", "E_SEARCH_VALUE_UNKNOWN", "state:sent", 0),
    ("invoice !!!", "E_SEARCH_TERM_HAS_NO_WORDS", "!!!", 8),
    ("from:@", "E_SEARCH_TERM_HAS_NO_WORDS", "from:@", 0),
    ("invoice -spam", "E_SEARCH_NEGATION_UNSUPPORTED", "-spam", 8),
    (" ".join(f"w{i}" for i in range(21)), "E_SEARCH_TOO_MANY_TERMS", "w20", 70),
    ("x" * 1001, "E_SEARCH_QUERY_TOO_LONG", "x", 1000),
])
def test_an_unreadable_query_is_refused_naming_the_token(text: str, code: str, token: str, position: int) -> None:
    with pytest.raises(MailnodeError) as caught:
        parse_query(text)
    err = caught.value
    assert (err.code, err.status) == (code, 422), err.render()
    assert (err.detail["token"], err.detail["position"]) == (token, position)
    assert err.what and err.why and err.fix


def test_the_budgets_bound_the_query() -> None:
    from mailnode import budgets

    parse_query(" ".join(["w"] * budgets.SEARCH_QUERY_MAX_TERMS))
    parse_query("x" * budgets.SEARCH_QUERY_MAX_CHARS)
    with pytest.raises(MailnodeError) as caught:
        parse_query(" ".join(["w"] * (budgets.SEARCH_QUERY_MAX_TERMS + 1)))
    assert caught.value.detail["limit_name"] == "SEARCH_QUERY_MAX_TERMS"


@pytest.mark.parametrize(("text", "expected"), [
    ("Alice Müller <alice@example.com>", ["alice", "müller", "alice", "example", "com"]),
    ("don't_stop—now 3.5€", ["don", "t", "stop", "now", "3", "5"]),
    ("ＡＢＣ 東京都", ["ａｂｃ", "東京都"]),
    ("", []),
])
def test_words_are_runs_of_letters_and_digits(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_the_full_text_queries_both_databases_are_given() -> None:
    q = parse_query('"late invoice" from:alice@example.com subject:refund')
    assert fts5_query(q.phrases) == ('"late invoice" AND sender : "alice example com" AND subject : "refund"')
    assert tsquery(q.phrases) == ("('late' <-> 'invoice') & ('alice':B <-> 'example':B <-> 'com':B) & "
                                  "('refund':A)")


@pytest.mark.parametrize(("body", "query", "expected"), [
    ("Hello,\n\nthe   invoice is late.", "invoice", "Hello, the invoice is late."),
    ("a " * 200 + "invoice here", "invoice", "…" + " ".join(["a"] * 20) + " invoice here"),
    ("no match here", "subject:x", "no match here"),
    ("b " * 200, "zzz", " ".join(["b"] * 80) + "…"),
])
def test_a_snippet_shows_the_first_word_asked_for(body: str, query: str, expected: str) -> None:
    assert snippet(body, parse_query(query).phrases) == expected


def test_a_cursor_is_a_row_id_and_anything_else_is_not_read() -> None:
    assert parse_cursor("42") == 42 and parse_cursor(str(2**63 - 1)) == 2**63 - 1
    for bad in ("", "abc", "0", "-1", "1.5", " 7", "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV", str(2**63), "1" * 20):
        assert parse_cursor(bad) is None, bad


def test_every_operator_is_explained_to_people() -> None:
    from mailnode.search.query import _OPERATORS, FILTER_HELP

    written = " ".join(how for how, _ in FILTER_HELP)
    assert [op for op in _OPERATORS if f"{op}:" not in written] == []
    assert all(what.strip() for _, what in FILTER_HELP)
