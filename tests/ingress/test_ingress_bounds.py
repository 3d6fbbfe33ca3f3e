"""The parsing budgets, decided before the stdlib parsers run (issue 14 item 1), as tables."""

from __future__ import annotations

from email import message_from_bytes
from email.message import Message
from email.policy import compat32
from pathlib import Path

import pytest

from mailnode import budgets
from mailnode.ingress import bounds
from mailnode.ingress.parse import parse_message
from tests.corpus import message_files

W = budgets.PARSE_HEADER_ENCODED_WORDS_MAX
A = budgets.PARSE_ADDRESS_LIST_ENTRIES_MAX
L = budgets.PARSE_HEADER_STRUCTURED_MAX_CHARS
T = budgets.PARSE_HEADERS_TOTAL_CHARS


@pytest.mark.parametrize(("value", "address_list", "spent", "expected"), [
    ("hello", False, 0, None),
    (" ".join(["=?utf-8?Q?a?="] * W), False, 0, None),
    (" ".join(["=?utf-8?Q?a?="] * (W + 1)), False, 0,
     f"it holds {W + 1:,} encoded words (the limit is {W:,})"),
    (", ".join(f"u{i}@x.test" for i in range(A)), True, 0, None),
    (", ".join(f"u{i}@x.test" for i in range(A + 1)), True, 0,
     f"it lists {A + 1:,} addresses (the limit is {A:,})"),
    (", ".join(f"u{i}@x.test" for i in range(A + 1)), False, 0, None),  # not an address list: no count
    ("x" * L, False, 0, None),
    ("x" * (L + 1), False, 0, f"it is {L + 1:,} characters long (the limit is {L:,})"),
    ("x" * 10, False, T - 10, None),
    ("x" * 11, False, T - 10, f"the message's headers already used the {T:,} characters one message may have read"),
])
def test_header_refusal(value: str, address_list: bool, spent: int, expected: str | None) -> None:
    assert bounds.header_refusal(value, address_list=address_list, spent_chars=spent) == expected


@pytest.mark.parametrize(("lines", "parts", "expected"), [
    (10, 3, None),
    (budgets.PARSE_LINES_MAX, budgets.PARSE_MIME_PARTS_MAX, None),
    (budgets.PARSE_LINES_MAX + 1, 0, (f"it has {budgets.PARSE_LINES_MAX + 1:,} lines (the limit is "
                                      f"{budgets.PARSE_LINES_MAX:,})")),
    (10, budgets.PARSE_MIME_PARTS_MAX + 1, f"it has more than {budgets.PARSE_MIME_PARTS_MAX:,} MIME parts"),
])
def test_body_refusal(lines: int, parts: int, expected: str | None) -> None:
    shape = bounds.Shape(header_end=0, header_fields=1, header_cut=None, lines=lines, mime_parts=parts)
    assert bounds.body_refusal(shape) == expected


def _multipart(parts: int) -> bytes:
    body = b"".join(b"--b\r\nContent-Type: text/plain\r\n\r\npart\r\n" for _ in range(parts))
    return (b"From: a@x.test\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" + body + b"--b--\r\n")


def test_shape_counts_header_fields_lines_and_parts() -> None:
    raw = _multipart(3)
    shape = bounds.shape(raw)
    assert shape.header_fields == 2 and shape.header_cut is None
    assert shape.lines == raw.count(b"\n")
    assert shape.mime_parts == 4  # three typed parts, four delimiter lines (the closing one included)
    assert raw[shape.header_end:].startswith(b"\r\n--b")


def test_a_body_within_its_budget_is_read_and_one_past_it_is_not() -> None:
    within = parse_message(_multipart(budgets.PARSE_MIME_PARTS_MAX // 2 - 1))
    assert within.parse_error is None and within.text_body == "part"
    past = parse_message(_multipart(budgets.PARSE_MIME_PARTS_MAX + 1))
    assert past.text_body is None and past.from_ is not None and past.from_.address == "a@x.test"
    assert past.parse_error == (f"body: not read because it has more than {budgets.PARSE_MIME_PARTS_MAX:,} MIME "
                                "parts; the raw message keeps it")


def test_header_fields_past_the_budget_are_not_read() -> None:
    extra = b"".join(b"X-Filler-%d: v\r\n" % i for i in range(budgets.PARSE_HEADERS_MAX + 5))
    parsed = parse_message(b"From: a@x.test\r\nSubject: kept\r\n" + extra + b"To: late@x.test\r\n\r\nbody\r\n")
    assert parsed.subject == "kept" and parsed.to == ()
    assert len(parsed.headers) == budgets.PARSE_HEADERS_MAX
    assert parsed.text_body == "body\r\n"
    assert parsed.defects[0].startswith(f"message: it has more than {budgets.PARSE_HEADERS_MAX:,} header fields")


def test_a_long_references_keeps_the_root_and_the_newest() -> None:
    refs = " ".join(f"<r{i}@x.test>" for i in range(500))
    parsed = parse_message(f"From: a@x.test\r\nReferences: {refs}\r\n\r\nx\r\n".encode())
    keep = budgets.PARSE_REFERENCES_MAX
    assert parsed.references == ("r0@x.test", *(f"r{i}@x.test" for i in range(500 - keep + 1, 500)))
    assert f"References: it lists 500 message ids; the first and the newest {keep - 1} were read" in parsed.parse_error


def test_a_message_id_longer_than_a_line_is_not_read() -> None:
    long_id = "x" * (budgets.PARSE_MSG_ID_MAX_CHARS + 1) + "@x.test"
    parsed = parse_message(f"From: a@x.test\r\nMessage-ID: <{long_id}>\r\nIn-Reply-To: <{long_id}>\r\n"
                           "\r\nx\r\n".encode())
    assert parsed.message_id is None and parsed.in_reply_to == ()
    assert (f"Message-ID: 1 message ids longer than {budgets.PARSE_MSG_ID_MAX_CHARS:,} characters were not read"
            in parsed.defects)


@pytest.mark.parametrize(("raw", "end"), [
    (b"A: 1\r\nB: 2\r\n\r\nbody\r\n", 12),
    (b"A: 1\nB: 2\n\nbody\n", 10),
    (b"\r\nbody\r\n", 0),  # no header section
    (b"A: 1\r\n", 6),  # no body
])
def test_shape_finds_the_end_of_the_header_section(raw: bytes, end: int) -> None:
    assert bounds.shape(raw).header_end == end


def _tree(message: Message) -> list[object]:
    return [(part.get_content_type(), None if part.is_multipart() else part.get_payload(), part.items(),
             [type(d).__name__ for d in part.defects]) for part in message.walk()]


@pytest.mark.parametrize("path", message_files(), ids=lambda p: p.name)
def test_parsing_in_chunks_is_the_whole_parse(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 7-byte chunks split CRLFs, boundaries and header lines everywhere; the parse must not notice.
    monkeypatch.setattr(budgets, "PARSE_FEED_CHUNK_BYTES", 7)
    raw = path.read_bytes()
    assert _tree(bounds.load(raw).message) == _tree(message_from_bytes(raw, policy=compat32))
