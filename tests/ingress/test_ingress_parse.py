"""parse_message over the whole corpus, the handmade crash shapes, and arbitrary bytes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mailnode import budgets
from mailnode.ingress import bounds
from mailnode.ingress.parse import ParsedMessage, decode_words, parse_message
from tests.corpus import CORPUS, message_files, read_jsonl

MALFORMED = {record["file"]: record for record in read_jsonl("malformed/expected.jsonl")}
HANDMADE = read_jsonl("malformed/handmade/cases.jsonl")


def _stdlib_complained(record: dict) -> bool:
    """Whether CPython reported an error or a defect for this file in any version."""
    return any(seen["errors"] or seen["defects"] for seen in record["python_stdlib_observed"].values())


@pytest.mark.parametrize("path", message_files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_message_parses_or_carries_a_parse_error(path: Path) -> None:
    parsed = parse_message(path.read_bytes())
    assert isinstance(parsed, ParsedMessage)
    # parse_error is exactly the joined defects: present when anything went wrong, absent otherwise.
    assert (parsed.parse_error is None) == (parsed.defects == ())
    # Every text field is storable as UTF-8 JSON: no lone surrogates from raw 8-bit headers.
    json.dumps([parsed.subject, parsed.from_ and parsed.from_.name, parsed.headers]).encode("utf-8")
    if path.parent.name == "malformed" and _stdlib_complained(MALFORMED[path.name]):
        assert parsed.parse_error is not None


@pytest.mark.parametrize("case", HANDMADE, ids=lambda c: c["file"])
def test_handmade_shapes_record_the_header_and_keep_the_rest(case: dict) -> None:
    raw = (CORPUS / "malformed" / "handmade" / case["file"]).read_bytes()
    parsed = parse_message(raw)
    assert parsed.parse_error is not None
    assert case["header"].lower() in parsed.parse_error.lower()
    # The other headers are still usable.
    assert parsed.from_ is not None and parsed.from_.address == "sender@example.com"
    assert parsed.subject
    assert parsed.message_id


def test_exchange_bracketed_message_id_is_kept_as_written() -> None:
    parsed = parse_message((CORPUS / "malformed/handmade/exchange-bracketed-message-id.eml").read_bytes())
    assert parsed.message_id == "[83c48ddd0f6a4d3c=@example.com]"


def test_trailing_comma_keeps_the_address_and_records_the_defect() -> None:
    parsed = parse_message((CORPUS / "malformed/handmade/cc-trailing-comma.eml").read_bytes())
    assert [item.address for item in parsed.cc] == ["someone@example.com"]
    assert any(defect.startswith("Cc:") for defect in parsed.defects)


@pytest.mark.parametrize("name", ["to-comment-colon.eml", "to-lone-quote.eml"])
def test_unreadable_to_gives_no_addresses_not_an_empty_one(name: str) -> None:
    parsed = parse_message((CORPUS / "malformed/handmade" / name).read_bytes())
    assert parsed.to == ()
    assert [item.address for item in parsed.recipients] == []


def test_bad_encoded_subject_still_decodes() -> None:
    parsed = parse_message((CORPUS / "malformed/bad_encoded_subject.eml").read_bytes())
    assert parsed.subject is not None and "=?" not in parsed.subject
    assert any(defect.startswith("Subject:") for defect in parsed.defects)


def test_bad_date_is_none_and_recorded() -> None:
    parsed = parse_message((CORPUS / "malformed/bad_date_header.eml").read_bytes())
    assert parsed.date is None
    assert any(defect.startswith("Date: the date could not be read") for defect in parsed.defects)
    assert parsed.from_ is not None and parsed.from_.address == "infoz@reactive-outpost.com"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Tue, 11 Jun 2024 19:11:34 +0900", datetime(2024, 6, 11, 10, 11, 34, tzinfo=UTC)),
        ("Tue, 11 Jun 2024 10:11:34 -0000", datetime(2024, 6, 11, 10, 11, 34, tzinfo=UTC)),
        ("not a date", None),
        # Valid as written, but out of range once moved to UTC.
        ("Fri, 31 Dec 9999 23:59:59 -1200", None),
    ],
)
def test_date_is_aware_utc(header: str, expected: datetime | None) -> None:
    parsed = parse_message(f"From: a@example.com\r\nDate: {header}\r\n\r\nx\r\n".encode())
    assert parsed.date == expected
    assert parsed.from_ is not None and parsed.from_.address == "a@example.com"
    assert (expected is None) == any(defect.startswith("Date:") for defect in parsed.defects)
    if parsed.date is not None:
        assert parsed.date.utcoffset() is not None


def test_rfc2047_subject_references_and_in_reply_to() -> None:
    raw = (
        b"From: =?UTF-8?B?w4lsb2RpZQ==?= <elodie@example.com>\r\n"
        b"To: bob@example.org\r\n"
        b"Subject: =?UTF-8?Q?caf=C3=A9?= ok\r\n"
        b"Message-ID: <m3@example.com>\r\n"
        b"In-Reply-To: <m2@example.com>\r\n"
        b"References: <m1@example.com>\r\n <m2@example.com>\r\n"
        b"\r\nbody\r\n"
    )
    parsed = parse_message(raw)
    assert parsed.subject == "café ok"
    assert parsed.from_ is not None and parsed.from_.name == "Élodie"
    assert parsed.references == ("m1@example.com", "m2@example.com")
    assert parsed.in_reply_to == ("m2@example.com",)
    assert parsed.message_id == "m3@example.com"
    assert parsed.parse_error is None


def test_unknown_encoded_word_charset_falls_back() -> None:
    text, problem = decode_words("=?none?Q?hello?= world")
    assert text.startswith("hello") and problem is not None


def test_encoded_display_name_with_a_comma_stays_one_address() -> None:
    parsed = parse_message(b"To: =?utf-8?Q?Doe=2C_John?= <john@example.com>\r\n\r\nx\r\n")
    assert [(item.name, item.address) for item in parsed.to] == [("Doe, John", "john@example.com")]


def test_raw_8bit_header_becomes_text() -> None:
    parsed = parse_message("From: Zoë <zoe@example.com>\r\nSubject: Grüße\r\n\r\nx\r\n".encode())
    assert parsed.subject == "Grüße"
    assert parsed.from_ is not None and parsed.from_.name == "Zoë"


def test_utf7_lone_surrogate_in_subject_is_replaced() -> None:
    parsed = parse_message(b"From: a@example.com\r\nSubject: =?utf-7?Q?+2AA-?= x\r\n\r\nx\r\n")
    assert parsed.subject is not None
    parsed.subject.encode("utf-8")
    assert any(defect.startswith("Subject:") for defect in parsed.defects)


def test_impossible_base64_word_keeps_the_raw_subject() -> None:
    parsed = parse_message(b"From: a@example.com\r\nSubject: =?utf-8?B?000000000?=\r\n\r\nx\r\n")
    assert parsed.subject == "=?utf-8?B?000000000?="
    assert "Subject: an encoded word could not be decoded; the value is kept as received" in parsed.defects
    assert parsed.from_ is not None


def test_raw_latin1_header_is_replaced_and_recorded() -> None:
    parsed = parse_message(b"From: a@example.com\r\nSubject: caf\xe9\r\n\r\nx\r\n")
    assert parsed.subject == "caf\ufffd"
    assert any(defect.startswith("Subject:") for defect in parsed.defects)
    assert parsed.from_ is not None and parsed.from_.address == "a@example.com"


def test_body_that_is_not_utf8_either_is_replaced() -> None:
    parsed = parse_message(
        b"From: a@example.com\r\nContent-Type: text/plain; charset=x-no-such\r\n\r\ncaf\xe9\r\n"
    )
    assert parsed.text_body is not None and "caf\ufffd" in parsed.text_body
    assert parsed.from_ is not None


def test_a_parser_failure_becomes_a_parse_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise IndexError("parser bug")

    monkeypatch.setattr(bounds, "BytesFeedParser", broken)
    parsed = parse_message(b"From: a@example.com\r\n\r\nx\r\n")
    assert parsed.parse_error == "message: the message structure could not be read; the raw message keeps it"
    assert parsed.from_ is None


def test_body_with_unknown_charset_is_decoded_as_utf8() -> None:
    raw = "Content-Type: text/plain; charset=x-no-such\r\n\r\nnaïve\r\n".encode()
    parsed = parse_message(raw)
    assert parsed.text_body is not None and "naïve" in parsed.text_body
    assert any(defect.startswith("body:") for defect in parsed.defects)


def test_text_body_prefers_plain_part_and_counts_attachments() -> None:
    raw = (
        b"From: a@example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
        b"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nhello\r\n"
        b"--b\r\nContent-Type: application/octet-stream\r\n"
        b'Content-Disposition: attachment; filename="invoice.pdf.exe"\r\n\r\nMZ\r\n'
        b'--b\r\nContent-Type: application/pdf; name="report.pdf"\r\n\r\n%PDF\r\n'
        b"--b--\r\n"
    )
    parsed = parse_message(raw)
    assert parsed.text_body is not None and parsed.text_body.strip() == "hello"
    assert parsed.attachments.count == 2
    assert parsed.attachments.dangerous == 1


def test_automation_headers_are_exposed() -> None:
    raw = b"From: a@example.com\r\nList-Id: <x.example.com>\r\nPrecedence: bulk\r\nSubject: s\r\n\r\nx\r\n"
    parsed = parse_message(raw)
    assert dict(parsed.automation_headers) == {"list-id": "<x.example.com>", "precedence": "bulk"}


def test_defects_are_capped() -> None:
    broken = b"".join(b"Subject: =?none?Q?x?=\r\n" for _ in range(budgets.PARSE_DEFECTS_MAX * 3))
    parsed = parse_message(b"From: a@example.com\r\n" + broken + b"\r\nx\r\n")
    assert parsed.defects[-1].endswith("more defects")
    assert len(parsed.defects) <= budgets.PARSE_DEFECTS_MAX + 1


HEADER_NAMES = st.sampled_from(
    [
        "To",
        "Cc",
        "From",
        "Message-ID",
        "References",
        "Content-Type",
        "Date",
        "Subject",
        "Authentication-Results",
        "Content-Transfer-Encoding",
        "Content-Disposition",
        "X-Other",
    ]
)
HEADER_VALUES = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_parse_message_never_raises_on_arbitrary_bytes(raw: bytes) -> None:
    assert isinstance(parse_message(raw), ParsedMessage)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(HEADER_NAMES, HEADER_VALUES), max_size=8), st.binary(max_size=300))
def test_parse_message_never_raises_on_hostile_headers(headers: list[tuple[str, str]], body: bytes) -> None:
    raw = b"".join(f"{name}: {value}\r\n".encode("utf-8", "surrogateescape") for name, value in headers)
    assert isinstance(parse_message(raw + b"\r\n" + body), ParsedMessage)


ENCODED_WORDS = st.builds(
    lambda charset, enc, text: f"=?{charset}?{enc}?{text}?=",
    st.sampled_from(["utf-8", "utf-7", "utf-16", "none", "iso-8859-1", "x-unknown", ""]),
    st.sampled_from(["Q", "B", "q", "b", "X"]),
    st.text(alphabet="+-=_/ABCDEFabcdef0123456789?\u00e9", max_size=20),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(ENCODED_WORDS, HEADER_VALUES), max_size=5))
def test_decode_words_never_raises(pieces: list[str]) -> None:
    text, _problem = decode_words(" ".join(pieces))
    text.encode("utf-8")
