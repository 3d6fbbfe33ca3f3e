"""The search query language: a string in, a typed ``SearchQuery`` out, or a refusal naming the token. Pure.

Grammar (in the style of Gmail's and Postal's search boxes): terms separated by white space, all of which
must match (AND). A term is a word, a ``"quoted phrase"``, or ``field:value`` where the value may be
quoted (``subject:"late invoice"``). Words match whole words (``search.documents.words``), case-folded,
without stemming, in any language.

========================  ===========================================================================
``word``, ``"a phrase"``  the words (in order, adjacent, for a phrase) in the subject, the addresses or
                          the body
``from:``                 the words in the sender (name or address: ``from:alice``,
                          ``from:alice@example.com``)
``to:``                   the words in a recipient (delivered-to, To or Cc; a send's To, Cc or Bcc)
``subject:``              the words in the subject
``mailbox:``              a mailbox, by id (``mbx_...``) or by name (case-insensitive)
``is:``                   ``unassigned`` | ``mine`` | ``open`` | ``closed`` (a message's case, read live) |
                          ``automated``
``has:``                  ``attachment``
``state:``                a send's state (``outbound.states.SendState``; sends only)
``before:`` ``after:``    a date, ``YYYY-MM-DD`` or ``YYYY/MM/DD``, UTC: ``before:`` is before that day
                          begins, ``after:`` from that day on (inclusive, as Gmail reads it)
========================  ===========================================================================

A repeated ``mailbox:`` or ``state:`` means any of its values (a row is in one mailbox and one state);
every other repeated filter must hold too. ``state:`` matches sends only; ``is:unassigned|mine|open|closed``
match messages only (a send has no case of its own).

Refusals are 422 with the offending ``token`` and its ``position`` (0-based character offset) in
``detail``: ``E_SEARCH_QUERY_EMPTY``, ``E_SEARCH_QUERY_TOO_LONG`` and ``E_SEARCH_TOO_MANY_TERMS`` (budgets
``SEARCH_QUERY_MAX_CHARS``, ``SEARCH_QUERY_MAX_TERMS``), ``E_SEARCH_QUOTE_UNTERMINATED``,
``E_SEARCH_OPERATOR_UNKNOWN``, ``E_SEARCH_VALUE_MISSING``, ``E_SEARCH_VALUE_UNKNOWN`` (``is:``, ``has:``,
``state:``), ``E_SEARCH_DATE_INVALID``, ``E_SEARCH_TERM_HAS_NO_WORDS`` and ``E_SEARCH_NEGATION_UNSUPPORTED``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from enum import StrEnum

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.search.documents import words
from mailnode.vocabulary.send_states import SendState


class Field(StrEnum):
    """Where a word must occur: anywhere, or in one field (the FTS5 column, the tsvector weight)."""

    ANY = "any"
    FROM = "from"
    TO = "to"
    SUBJECT = "subject"


class CaseIs(StrEnum):
    """``is:`` values about a message's case."""

    UNASSIGNED = "unassigned"
    MINE = "mine"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True)
class Phrase:
    """Words that must occur together, in order, in ``field``."""

    field: Field
    words: tuple[str, ...]


@dataclass(frozen=True)
class SearchQuery:
    """A parsed query; every condition must hold.

    Attributes:
        phrases: full-text conditions (a single word is a phrase of one).
        mailboxes: ``mailbox:`` values as typed (an id or a name; ``search.run`` resolves them).
        case_is: ``is:unassigned|mine|open|closed`` (messages only).
        automated: ``is:automated``; has_attachment: ``has:attachment``.
        states: ``state:`` values (sends only).
        before: results strictly before this instant (UTC); after: at or after it.
    """

    phrases: tuple[Phrase, ...] = ()
    mailboxes: tuple[str, ...] = ()
    case_is: frozenset[CaseIs] = field(default_factory=frozenset)
    automated: bool = False
    has_attachment: bool = False
    states: frozenset[SendState] = field(default_factory=frozenset)
    before: datetime | None = None
    after: datetime | None = None


_FIELDS = {"from": Field.FROM, "to": Field.TO, "subject": Field.SUBJECT}
_OPERATORS = ("from", "to", "subject", "mailbox", "is", "has", "state", "before", "after")

#: The words a search box explains to a person, in the grammar's order: ``(how it is written, what it
#: finds)``; one entry for plain words and phrases, then one per operator (total over ``_OPERATORS``,
#: ``tests/search/test_search_query.py``). Pages show this list beside the box (``web.queue``).
FILTER_HELP: tuple[tuple[str, str], ...] = (
    ('word  "a phrase"', ("Messages and sends with all those words (a phrase: in that order) in the subject, "
                          "an address or the text. Every term must match; case does not matter.")),
    ("from:alice", "The sender's name or address holds the word (from:alice@example.com for one address)."),
    ("to:bob", "A recipient's name or address holds the word (delivered-to, To or Cc; a send's To, Cc, Bcc)."),
    ('subject:"late invoice"', "The subject holds the words."),
    ("mailbox:Support", "In that mailbox, by name or id (the queue searches its own mailbox unless you say)."),
    ("is:unassigned  is:mine  is:open  is:closed  is:automated",
     "A message whose case is now unassigned, yours, open or closed; or mail the node found automated."),
    ("has:attachment", "With at least one attachment."),
    ("state:held  state:awaiting  state:withheld …", "A send in that state (sends only)."),
    ("before:2026-03-01", "Before that day began (UTC)."),
    ("after:2026-03-01", "On or after that day (UTC)."),
)
_IS_VALUES = tuple(c.value for c in CaseIs) + ("automated",)
_HAS_VALUES = ("attachment",)
#: ``name:`` at the start of a term: letters only, so ``10:30`` and ``http://`` read differently.
_OPERATOR = re.compile(r"([A-Za-z]+):")
_DATE = re.compile(r"(\d{4})[-/](\d{2})[-/](\d{2})")


@dataclass(frozen=True)
class _Token:
    text: str  # the term as typed
    position: int
    name: str | None  # the operator, lower-cased, or None for a word or phrase
    value: str  # unquoted
    quoted: bool


def _refuse(code: str, what: str, why: str, fix: str, token: str, position: int) -> MailnodeError:
    return MailnodeError(code=code, what=what, why=why, fix=fix, status=422,
                         detail={"token": token[:100], "position": position})


def _quoted(text: str, start: int, token_start: int) -> tuple[str, int]:
    """The quoted string opening at ``text[start] == '"'`` and the index after its closing quote."""
    end = text.find('"', start + 1)
    if end < 0:
        raise _refuse("E_SEARCH_QUOTE_UNTERMINATED", f"The quote opened at {start} is never closed.",
                      "A quoted phrase runs to the next double quote, and this one has none.",
                      'Close the phrase with a double quote ("...").', text[token_start:], token_start)
    return text[start + 1:end], end + 1


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start = i
        name = None
        m = _OPERATOR.match(text, i)
        if m is not None:
            name = m.group(1).lower()
            i = m.end()
        if i < n and text[i] == '"':
            value, i = _quoted(text, i, start)
            quoted = True
        else:
            j = i
            while j < n and not text[j].isspace():
                j += 1
            value, i, quoted = text[i:j], j, False
        out.append(_Token(text[start:i], start, name, value, quoted))
    return out


def _words_of(t: _Token) -> tuple[str, ...]:
    found = tuple(words(t.value))
    if not found:
        raise _refuse("E_SEARCH_TERM_HAS_NO_WORDS", f"{t.text[:100]!r} holds no letter or digit to search for.",
                      "Search matches words (runs of letters and digits); punctuation alone matches nothing.",
                      "Search for a word, or drop the term.", t.text, t.position)
    return found


def _date(t: _Token) -> datetime:
    m = _DATE.fullmatch(t.value)
    day = None
    if m is not None:
        try:
            day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            day = None
    if day is None:
        raise _refuse("E_SEARCH_DATE_INVALID", f"{t.text[:100]!r} is not a date.",
                      f"{t.name}: takes a calendar day, YYYY-MM-DD or YYYY/MM/DD, read in UTC.",
                      f"Write it as {t.name}:2026-03-01.", t.text, t.position)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _vocabulary(t: _Token, allowed: tuple[str, ...]) -> str:
    value = t.value.lower()
    if value not in allowed:
        raise _refuse("E_SEARCH_VALUE_UNKNOWN", f"{t.text[:100]!r}: {t.name}: does not take {t.value[:60]!r}.",
                      f"{t.name}: takes one of a closed list of values.",
                      f"Use {t.name}: with one of: " + ", ".join(allowed) + ".", t.text, t.position)
    return value


def parse_query(text: str, *, max_chars: int = budgets.SEARCH_QUERY_MAX_CHARS,
                max_terms: int = budgets.SEARCH_QUERY_MAX_TERMS) -> SearchQuery:
    """Parse ``text`` (see the module docstring) into a ``SearchQuery``; raises the module's 422 codes, each
    naming the offending token and its position. Pure."""
    if len(text) > max_chars:
        raise MailnodeError(code="E_SEARCH_QUERY_TOO_LONG",
                            what=f"SEARCH_QUERY_MAX_CHARS is {max_chars}; this query has {len(text)} characters.",
                            why="The budget SEARCH_QUERY_MAX_CHARS bounds a search query.",
                            fix="Search with fewer or shorter terms.", status=422,
                            detail={"limit_name": "SEARCH_QUERY_MAX_CHARS", "limit": max_chars,
                                    "observed": len(text), "token": text[max_chars:max_chars + 100],
                                    "position": max_chars})
    tokens = _tokens(text)
    if not tokens:
        raise _refuse("E_SEARCH_QUERY_EMPTY", "The search query is empty.",
                      "A search needs at least one word, phrase or filter.",
                      "Pass q, e.g. q=invoice or q=from:alice is:open.", text, 0)
    if len(tokens) > max_terms:
        extra = tokens[max_terms]
        raise MailnodeError(code="E_SEARCH_TOO_MANY_TERMS",
                            what=f"SEARCH_QUERY_MAX_TERMS is {max_terms}; this query has {len(tokens)} terms.",
                            why="The budget SEARCH_QUERY_MAX_TERMS bounds the terms of one search.",
                            fix=f"Search with at most {max_terms} terms (a quoted phrase counts as one).",
                            status=422, detail={"limit_name": "SEARCH_QUERY_MAX_TERMS", "limit": max_terms,
                                                "observed": len(tokens), "token": extra.text[:100],
                                                "position": extra.position})
    phrases: list[Phrase] = []
    mailboxes: list[str] = []
    case_is: set[CaseIs] = set()
    states: set[SendState] = set()
    automated = has_attachment = False
    before: datetime | None = None
    after: datetime | None = None
    for t in tokens:
        if t.name is None:
            if t.value.startswith("-") and not t.quoted:
                raise _refuse("E_SEARCH_NEGATION_UNSUPPORTED", f"{t.text[:100]!r} asks to exclude a word.",
                              "Search does not exclude terms; every term must match.",
                              f'Drop the term, or quote it to search for the word: "{t.value[1:60]}".',
                              t.text, t.position)
            phrases.append(Phrase(Field.ANY, _words_of(t)))
            continue
        if t.name not in _OPERATORS:
            raise _refuse("E_SEARCH_OPERATOR_UNKNOWN", f"{t.name}: is not a search operator.",
                          "Search knows " + ", ".join(f"{o}:" for o in _OPERATORS) + "; anything else would be "
                          "silently read as words.",
                          f'Use one of those operators, or quote the term to search for it as words: "{t.text[:60]}".',
                          t.text, t.position)
        if not t.value.strip():
            raise _refuse("E_SEARCH_VALUE_MISSING", f"{t.name}: has no value.",
                          f"{t.name}: filters by the value written right after the colon.",
                          f"Write the value after the colon, with no space: {t.name}:value.", t.text, t.position)
        if t.name in _FIELDS:
            phrases.append(Phrase(_FIELDS[t.name], _words_of(t)))
        elif t.name == "mailbox":
            mailboxes.append(t.value.strip())
        elif t.name == "is":
            value = _vocabulary(t, _IS_VALUES)
            if value == "automated":
                automated = True
            else:
                case_is.add(CaseIs(value))
        elif t.name == "has":
            _vocabulary(t, _HAS_VALUES)
            has_attachment = True
        elif t.name == "state":
            states.add(SendState(_vocabulary(t, tuple(s.value for s in SendState))))
        elif t.name == "before":
            day = _date(t)
            before = day if before is None else min(before, day)
        else:
            day = _date(t)
            after = day if after is None else max(after, day)
    return SearchQuery(tuple(phrases), tuple(mailboxes), frozenset(case_is), automated, has_attachment,
                       frozenset(states), before, after)
