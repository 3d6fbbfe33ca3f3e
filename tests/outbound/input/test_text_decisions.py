"""The pure decisions on caller text (issue 9): which characters a header value or a body may not carry, the
code each fault is refused with, and the size limits of a Subject, a body and a request, as tables."""

from __future__ import annotations

import sys

import pytest

from mailnode import budgets
from mailnode.addresses import (
    FAULT_CODES,
    LINE_BREAKS,
    TextFault,
    body_fault,
    header_fault,
    normalise_address,
    reject_header_injection,
)
from mailnode.api.body_limit import request_too_large
from mailnode.errors import MailnodeError
from mailnode.outbound.render import OutboundMessage, render
from mailnode.outbound.seal import body_too_large, check_composition, subject_too_long

#: Every character the outsider's report named, and the rest of what ``str.splitlines`` breaks on.
LINE_BREAK_TABLE = [
    ("\r", "U+000D"), ("\n", "U+000A"), ("\x0b", "U+000B"), ("\x0c", "U+000C"), ("\x1c", "U+001C"),
    ("\x1d", "U+001D"), ("\x1e", "U+001E"), ("\x85", "U+0085"), ("\u2028", "U+2028"), ("\u2029", "U+2029"),
]

HEADER_TABLE: list[tuple[str, TextFault | None, str | None]] = [
    # value, the fault, the character named
    ("Hi there", None, None),
    ("Hi\tthere", None, None),  # HT is white space in a field body (RFC 5322 §2.2)
    ("Grüße aus Köln", None, None),
    ("family \U0001f468\u200d\U0001f469\u200d\U0001f467", None, None),  # ZWJ (a format character) passes
    ("\u202eevil", None, None),  # bidi overrides are format characters: RFC 2047 encodes them
    ("Hi\u2028there", TextFault.LINE_BREAK, "U+2028"),
    ("Hi\u2029there", TextFault.LINE_BREAK, "U+2029"),
    ("Hi\x85there", TextFault.LINE_BREAK, "U+0085"),
    ("Hi\r\nBcc: x@y.test", TextFault.LINE_BREAK, "U+000D"),
    ("a\x00b", TextFault.CONTROL, "U+0000"),
    ("a\x01b", TextFault.CONTROL, "U+0001"),
    ("a\x1bb", TextFault.CONTROL, "U+001B"),
    ("a\x1fb", TextFault.CONTROL, "U+001F"),
    ("a\x7fb", TextFault.CONTROL, "U+007F"),
    ("a\x9fb", TextFault.CONTROL, "U+009F"),
    ("a\ud800b", TextFault.SURROGATE, "U+D800"),
    ("a\udfffb", TextFault.SURROGATE, "U+DFFF"),
    ("first \x01 then \n", TextFault.CONTROL, "U+0001"),  # the first offender is the one named
]


@pytest.mark.parametrize(("value", "kind", "character"), HEADER_TABLE)
def test_header_fault_table(value: str, kind: TextFault | None, character: str | None) -> None:
    fault = header_fault(value)
    if kind is None:
        assert fault is None
        return
    assert fault is not None and fault.kind is kind and fault.codepoint == character
    assert value[fault.position] == fault.character


def test_a_header_refuses_exactly_what_splitlines_breaks_on_every_control_but_ht_and_every_surrogate() -> None:
    """Exhaustive over Unicode: the decision and its definition agree on every code point."""
    import unicodedata

    assert {chr(c) for c in range(sys.maxunicode + 1) if len(f"a{chr(c)}b".splitlines()) > 1} == LINE_BREAKS
    for c in range(sys.maxunicode + 1):
        ch = chr(c)
        category = unicodedata.category(ch)
        expected = ch in LINE_BREAKS or category == "Cs" or (category == "Cc" and ch != "\t")
        assert (header_fault(f"a{ch}b") is not None) is expected, f"U+{c:04X}"


BODY_TABLE: list[tuple[str, TextFault | None]] = [
    ("Hello,\r\nline two\n\n\u2028para\x0c page\t tab\x1b esc", None),  # text may break lines and hold controls
    ("a\x00b", TextFault.CONTROL),
    ("a\ud83db", TextFault.SURROGATE),
    ("\U0001f600 whole emoji", None),
]


@pytest.mark.parametrize(("value", "kind"), BODY_TABLE)
def test_body_fault_table(value: str, kind: TextFault | None) -> None:
    fault = body_fault(value)
    assert (fault.kind if fault else None) is kind


def test_every_fault_has_a_code_and_header_faults_are_injection() -> None:
    assert set(FAULT_CODES) == set(TextFault)
    assert FAULT_CODES[TextFault.LINE_BREAK] == FAULT_CODES[TextFault.CONTROL] == "E_HEADER_INJECTION"
    assert FAULT_CODES[TextFault.SURROGATE] == "E_TEXT_MALFORMED"


@pytest.mark.parametrize(("value", "character"), LINE_BREAK_TABLE)
def test_reject_header_injection_says_what_why_and_fix_naming_the_character(value: str, character: str) -> None:
    with pytest.raises(MailnodeError) as caught:
        reject_header_injection("Subject", f"Hi{value}there")
    err = caught.value
    assert (err.code, err.status) == ("E_HEADER_INJECTION", 422)
    assert character in err.what and err.why and "Subject" in err.fix
    assert err.detail["character"] == character and err.detail["position"] == 2


def test_an_address_with_a_separator_is_reported_as_injection_before_the_syntax_check() -> None:
    with pytest.raises(MailnodeError) as caught:
        normalise_address("ann@example.test\u2028", "to")
    assert caught.value.code == "E_HEADER_INJECTION"


def test_render_refuses_every_line_break_as_injection_not_a_crash() -> None:
    from datetime import UTC, datetime

    for value, _ in LINE_BREAK_TABLE:
        message = OutboundMessage(from_address="a@example.test", to=("b@example.test",), subject=f"x{value}y",
                                  date=datetime(2026, 1, 1, tzinfo=UTC), message_id="<snd_1@example.test>", body="hi")
        with pytest.raises(MailnodeError) as caught:
            render(message)
        assert caught.value.code == "E_HEADER_INJECTION"


LIMIT = budgets.SEND_SUBJECT_MAX_CHARS
BODY_LIMIT = budgets.SEND_BODY_MAX_BYTES


@pytest.mark.parametrize(("observed", "refused"), [(0, False), (LIMIT - 1, False), (LIMIT, False),
                                                   (LIMIT + 1, True), (1_000_000, True)])
def test_subject_limit_table(observed: int, refused: bool) -> None:
    err = subject_too_long(observed)
    assert (err is not None) is refused
    if err is not None:
        assert (err.code, err.status) == ("E_SUBJECT_TOO_LONG", 422)
        assert err.detail == {"limit_name": "SEND_SUBJECT_MAX_CHARS", "limit": LIMIT, "observed": observed}
        assert str(LIMIT) in err.what and str(LIMIT) in err.fix and err.why


@pytest.mark.parametrize(("observed", "refused"), [(0, False), (BODY_LIMIT, False), (BODY_LIMIT + 1, True),
                                                   (30 * 1024 * 1024, True)])
def test_body_limit_table(observed: int, refused: bool) -> None:
    err = body_too_large(observed)
    assert (err is not None) is refused
    if err is not None:
        assert (err.code, err.status) == ("E_BODY_TOO_LARGE", 413)
        assert err.detail == {"limit_name": "SEND_BODY_MAX_BYTES", "limit": BODY_LIMIT, "observed": observed}
        assert str(BODY_LIMIT) in err.what and str(BODY_LIMIT) in err.fix and err.why


@pytest.mark.parametrize(("observed", "declared", "refused"), [(0, True, False), (100, True, False),
                                                               (100, False, False), (101, True, True),
                                                               (101, False, True)])
def test_request_limit_table(observed: int, declared: bool, refused: bool) -> None:
    err = request_too_large(observed, 100, declared=declared)
    assert (err is not None) is refused
    if err is not None:
        assert (err.code, err.status) == ("E_REQUEST_TOO_LARGE", 413)
        assert err.detail == {"limit_name": "API_REQUEST_MAX_BYTES", "limit": 100, "observed": observed,
                              "declared": declared}


# The composition: what is refused first, and that the body is measured in UTF-8 bytes.
COMPOSITION_TABLE: list[tuple[str, str, str | None]] = [
    ("Hello", "Body", None),
    ("x" * LIMIT, "Body", None),
    ("x" * (LIMIT + 1), "Body", "E_SUBJECT_TOO_LONG"),
    ("x" * (LIMIT + 1) + "\n", "Body", "E_HEADER_INJECTION"),  # an injection attempt is reported as such
    ("Hello", "a\x00", "E_TEXT_MALFORMED"),
    ("Hello", "x" * BODY_LIMIT, None),
    ("Hello", "x" * (BODY_LIMIT + 1), "E_BODY_TOO_LARGE"),
    ("Hello", "é" * (BODY_LIMIT // 2), None),
    ("Hello", "é" * (BODY_LIMIT // 2 + 1), "E_BODY_TOO_LARGE"),  # under the limit in characters, over in bytes
    ("Hi\u2028", "x" * (BODY_LIMIT + 1), "E_HEADER_INJECTION"),
    ("Hello", "", None),
]


@pytest.mark.parametrize(("subject", "body", "code"), COMPOSITION_TABLE,
                         ids=[f"{len(s)}-{len(b)}-{c}" for s, b, c in COMPOSITION_TABLE])
def test_check_composition_table(subject: str, body: str, code: str | None) -> None:
    if code is None:
        check_composition(subject, body)
        return
    with pytest.raises(MailnodeError) as caught:
        check_composition(subject, body)
    assert caught.value.code == code
