"""A message's defects are sentences a person reads (issue 14 item 6): the header, then what is wrong with it,
never a Python exception's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mailnode.ingress.parse import parse_message, unreadable_words
from tests.corpus import message_files

#: A Python exception or stdlib defect class name, as a reader must never see it.
CLASS_NAME = re.compile(r"\b\w*(Error|Exception|Defect)\b")


@pytest.mark.parametrize(("header", "expected"), [
    ('To: "', 'To: the address list could not be read: a quoted string is never closed'),
    ("To: (c):", ("To: the address list could not be read: a group (name: addresses;) that has no name or is "
                  "not closed with ';'")),
    ("Message-ID: <[abc123=@example.org]>", ("Message-ID: the message id could not be read: square brackets, "
                                             "which a message id may not hold (RFC 5322 §3.6.4)")),
    ("Content-Type: text/plain; name*", "Content-Type: its parameters could not be read: a parameter has no value"),
])
def test_an_unreadable_header_is_named_in_words(header: str, expected: str) -> None:
    parsed = parse_message(f"From: a@example.com\r\n{header}\r\n\r\nx\r\n".encode())
    assert parsed.parse_error is not None
    assert expected in parsed.defects
    assert not CLASS_NAME.search(parsed.parse_error), parsed.parse_error


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("to", '"', "the address list could not be read: a quoted string is never closed"),
    ("cc", "a@b (note", "the address list could not be read: a comment in parentheses is never closed"),
    ("from", "<a@b", "the address list could not be read: an angle bracket is never closed"),
    ("to", "(c):", ("the address list could not be read: a group (name: addresses;) that has no name or is not "
                    "closed with ';'")),
    ("message-id", "<[x=@y]>", ("the message id could not be read: square brackets, which a message id may not "
                                "hold (RFC 5322 §3.6.4)")),
    ("date", "soon", "the date could not be read: its syntax is not valid"),
    ("content-type", "text/plain; name*", "its parameters could not be read: a parameter has no value"),
    ("x-other", "?", "the value could not be read: its syntax is not valid"),
])
def test_unreadable_words_table(key: str, value: str, expected: str) -> None:
    assert unreadable_words(key, value) == expected


@pytest.mark.parametrize("path", message_files(), ids=lambda p: p.name)
def test_no_corpus_parse_error_names_a_python_class(path: Path) -> None:
    parsed = parse_message(path.read_bytes())
    assert not CLASS_NAME.search(parsed.parse_error or ""), parsed.parse_error
