"""``outbound.mail_fields`` as tables, no database: the custom header allowlist, tags, metadata and the
body rule; and ``render`` writing Reply-To, the allowed headers and HTML-only mail."""

from __future__ import annotations

from email import message_from_bytes
from email.policy import default as default_policy

import pytest

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.outbound.mail_fields import (
    check_extras,
    check_headers,
    check_metadata,
    check_tags,
    header_allowed,
    is_metadata_entry,
    is_tag,
)
from mailnode.outbound.render import render
from tests.outbound.conftest import make_message


@pytest.mark.parametrize(("name", "written"), [
    ("List-Unsubscribe", "List-Unsubscribe"),
    ("list-unsubscribe-post", "List-Unsubscribe-Post"),
    ("X-Order-Id", "X-Order-Id"),
    ("x-campaign", "x-campaign"),
    ("X-", None),
    ("X-Mailnode-Notice", None),
    ("X-Original-To", None),
    ("X-Forwarded-For", None),
    ("X-Envelope-From", None),
    ("X-Spam-Status", None),
    ("X-Authenticated-Sender", None),
    ("X-MS-Exchange-Organization-SCL", None),
    ("X-Google-Original-From", None),
    ("X-SES-CONFIGURATION-SET", None),
    ("X-PM-Message-Stream", None),
    ("X-SMTPAPI", None),
    ("From", None), ("Sender", None), ("Bcc", None), ("Reply-To", None), ("Return-Path", None),
    ("DKIM-Signature", None), ("Received", None), ("Authentication-Results", None), ("Message-ID", None),
    ("Content-Type", None), ("MIME-Version", None), ("List-Id", None),
    ("X-Bad:Name", None), ("X-Bad Name", None), ("X-Ünicode", None), ("", None),
])
def test_the_header_allowlist(name: str, written: str | None) -> None:
    assert header_allowed(name) == written


def _code(call: object) -> str:
    with pytest.raises(MailnodeError) as caught:
        call()  # type: ignore[operator]
    return caught.value.code


def test_headers_are_refused_whole_for_one_bad_one() -> None:
    assert check_headers({"X-A": "1", "list-unsubscribe": "<mailto:u@x.test>"}) == (
        ("X-A", "1"), ("List-Unsubscribe", "<mailto:u@x.test>"))
    assert _code(lambda: check_headers({"X-A": "1", "Sender": "x@y.test"})) == "E_MAIL_HEADER_NOT_ALLOWED"
    assert _code(lambda: check_headers({"X-A": "1", "x-a": "2"})) == "E_MAIL_HEADER_NOT_ALLOWED"
    assert _code(lambda: check_headers({"X-A": "1\r\nBcc: x@y.test"})) == "E_HEADER_INJECTION"
    assert _code(lambda: check_headers({"X-A": "1\x00"})) == "E_HEADER_INJECTION"
    assert _code(lambda: check_headers({"X-A": "x" * (budgets.MAIL_HEADER_VALUE_MAX_CHARS + 1)})) == \
        "E_MAIL_HEADER_TOO_LONG"
    many = {f"X-H{i}": "v" for i in range(budgets.MAIL_HEADERS_MAX + 1)}
    assert _code(lambda: check_headers(many)) == "E_MAIL_TOO_MANY_HEADERS"
    assert len(check_headers(dict(list(many.items())[:-1]))) == budgets.MAIL_HEADERS_MAX


def test_tags() -> None:
    assert check_tags(["a", "b", "a"]) == ("a", "b")
    assert check_tags([f"t{i % budgets.MAIL_TAGS_MAX}" for i in range(50)]) == tuple(
        f"t{i}" for i in range(budgets.MAIL_TAGS_MAX))
    assert _code(lambda: check_tags([f"t{i}" for i in range(budgets.MAIL_TAGS_MAX + 1)])) == "E_MAIL_TOO_MANY_TAGS"
    for bad in ("", "two words", "x" * (budgets.MAIL_TAG_MAX_CHARS + 1), "a\nb", "é"):
        assert _code(lambda bad=bad: check_tags([bad])) == "E_MAIL_TAG_INVALID"
        assert not is_tag(bad)
    assert is_tag("campaign:2026/12") and is_tag("x" * budgets.MAIL_TAG_MAX_CHARS)


def test_metadata() -> None:
    assert check_metadata({"b": "2", "a": "1"}) == (("a", "1"), ("b", "2"))
    assert check_metadata({}) == ()
    too_many = {f"k{i}": "v" for i in range(budgets.MAIL_METADATA_MAX_KEYS + 1)}
    assert _code(lambda: check_metadata(too_many)) == "E_MAIL_METADATA_TOO_LARGE"
    assert _code(lambda: check_metadata({"k" * 21: "v"})) == "E_MAIL_METADATA_TOO_LARGE"
    assert _code(lambda: check_metadata({"k": "v" * 81})) == "E_MAIL_METADATA_TOO_LARGE"
    assert check_metadata({"k" * 20: "v" * 80}) == (("k" * 20, "v" * 80),)
    for key in ("", "a:b", "a b"):
        assert _code(lambda key=key: check_metadata({key: "v"})) == "E_MAIL_METADATA_INVALID"
    assert _code(lambda: check_metadata({"k": "v\r\n"})) == "E_MAIL_METADATA_INVALID"
    assert is_metadata_entry("order_id", "42 (a, b)") and not is_metadata_entry("order_id", "4\x002")


def test_a_mail_needs_text_or_html() -> None:
    assert _code(lambda: check_extras(None, (), (), (), (), text_part=False, html=None)) == "E_MAIL_BODY_MISSING"
    assert check_extras(None, (), (), (), (), text_part=False, html="<p>x</p>").tags == ()
    assert _code(lambda: check_extras("A\r\nBcc: x@y.test", (), (), (), (), text_part=True, html=None)) == \
        "E_HEADER_INJECTION"


def test_render_writes_reply_to_the_allowed_headers_and_html_alone() -> None:
    raw = render(make_message(reply_to=(("help@example.test", "Help Desk"),), extra_headers=(("X-Order-Id", "42"),),
                              html="<p>Hi</p>", plain=False))
    msg = message_from_bytes(raw, policy=default_policy)
    assert str(msg["Reply-To"]) == "Help Desk <help@example.test>"
    assert msg["X-Order-Id"] == "42"
    assert msg.get_content_type() == "text/html"
    # render re-checks what it writes: a header outside the allowlist never reaches the bytes.
    with pytest.raises(MailnodeError) as caught:
        render(make_message(extra_headers=(("Bcc", "spy@remote.test"),)))
    assert caught.value.code == "E_HEADER_MALFORMED"
    with pytest.raises(MailnodeError) as caught:
        render(make_message(plain=False))
    assert caught.value.code == "E_HEADER_MALFORMED"
