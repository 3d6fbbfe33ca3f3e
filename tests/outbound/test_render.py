"""Rendering: header table, Bcc never written, References bounded, injection refused, same input same bytes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email import message_from_bytes
from email.policy import default as default_policy

import pytest

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.outbound.render import bound_references, make_message_id, normalise_body, render, sha256_hex

from .conftest import MANIFEST_ID, make_message


def headers_of(raw: bytes) -> list[tuple[str, str]]:
    return [(k, str(v)) for k, v in message_from_bytes(raw, policy=default_policy).items()]


def test_reply_headers_in_order() -> None:
    raw = render(make_message(auto_submitted="auto-replied"))
    assert headers_of(raw) == [
        ("From", "Acme Support <support@acme.test>"),
        ("To", "ann@example.test"),
        ("Cc", "cat@example.invalid"),
        ("Subject", "Re: your order"),
        ("Date", "Mon, 30 Nov 2026 09:30:00 +0000"),
        ("Message-ID", f"<{MANIFEST_ID}@acme.test>"),
        ("In-Reply-To", "<parent@example.test>"),
        ("References", "<root@example.test> <parent@example.test>"),
        ("Auto-Submitted", "auto-replied"),
        ("MIME-Version", "1.0"),
        ("Content-Type", 'text/plain; charset="utf-8"'),
        ("Content-Transfer-Encoding", "7bit"),
    ]
    assert b"\r\n\r\nHello Ann,\r\nit ships today.\r\n" in raw
    assert b"\n" not in raw.replace(b"\r\n", b"")


@pytest.mark.parametrize(
    ("overrides", "present", "absent"),
    [
        ({"in_reply_to": None, "references": ()}, [], ["In-Reply-To", "References"]),
        ({"cc": ()}, [], ["Cc"]),
        ({"to": (), "cc": ()}, [], ["To", "Cc"]),
        ({"auto_submitted": None}, [], ["Auto-Submitted"]),
        ({"auto_submitted": "auto-generated"}, ["Auto-Submitted"], []),
        ({"from_name": None}, ["From"], []),
    ],
)
def test_optional_headers(overrides: dict, present: list[str], absent: list[str]) -> None:
    names = [k for k, _ in headers_of(render(make_message(**overrides)))]
    assert all(n in names for n in present)
    assert not any(n in names for n in absent)
    assert "Bcc" not in names


def test_bcc_is_never_rendered() -> None:
    raw = render(make_message(bcc=("hidden@example.internal", "also@example.test")))
    assert b"Bcc" not in raw and b"hidden@example.internal" not in raw and b"also@example.test" not in raw


def test_same_input_gives_same_bytes_and_date_is_utc() -> None:
    assert render(make_message()) == render(make_message())
    other_zone = make_message(date=datetime(2026, 11, 30, 10, 30, tzinfo=timezone(timedelta(hours=1))))
    assert render(other_zone) == render(make_message())


def test_non_ascii_is_encoded_for_a_7bit_path() -> None:
    raw = render(make_message(subject="Ré: commande", from_name="Équipe", body="Merci, ça part.\n" + "x" * 1200))
    assert max(raw) < 128
    assert all(len(line) <= 998 for line in raw.split(b"\r\n"))
    parsed = message_from_bytes(raw, policy=default_policy)
    assert parsed["Subject"] == "Ré: commande"
    assert parsed["From"].addresses[0].display_name == "Équipe"
    assert parsed.get_content().startswith("Merci, ça part.\r\n")


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"subject": "Hi\r\nBcc: eve@evil.test"}, "E_HEADER_INJECTION"),
        ({"subject": "Hi\nthere"}, "E_HEADER_INJECTION"),
        ({"from_name": "Acme\r\nX-Evil: 1"}, "E_HEADER_INJECTION"),
        ({"to": ("ann@example.test\r\nBcc: eve@evil.test",)}, "E_HEADER_INJECTION"),
        ({"cc": ("cat@example.invalid\n",)}, "E_HEADER_INJECTION"),
        ({"in_reply_to": "<p@x>\r\nX-Evil: 1"}, "E_HEADER_INJECTION"),
        ({"references": ("<r@x>\r\nX-Evil: 1",)}, "E_HEADER_INJECTION"),
        ({"message_id": "<a@b>\nX: y"}, "E_HEADER_INJECTION"),
        ({"in_reply_to": "no-brackets@x"}, "E_HEADER_MALFORMED"),
        ({"references": ("<with space@x>",)}, "E_HEADER_MALFORMED"),
        ({"message_id": "snd_1@acme.test"}, "E_HEADER_MALFORMED"),
        ({"auto_submitted": "auto-notified"}, "E_HEADER_MALFORMED"),
        ({"date": datetime(2026, 11, 30, 9, 30)}, "E_HEADER_MALFORMED"),
        ({"to": (), "cc": (), "bcc": ()}, "E_HEADER_MALFORMED"),
    ],
)
def test_bad_header_values_are_refused(overrides: dict, code: str) -> None:
    with pytest.raises(MailnodeError) as caught:
        render(make_message(**overrides))
    assert (caught.value.code, caught.value.status) == (code, 422)


def test_message_id_is_the_send_id_at_the_sending_domain() -> None:
    assert make_message_id(MANIFEST_ID, "Acme.TEST") == f"<{MANIFEST_ID}@acme.test>"
    with pytest.raises(MailnodeError):
        make_message_id(MANIFEST_ID, "acme.test\r\nX: y")


def ids(n: int) -> list[str]:
    return [f"<m{i}@x>" for i in range(n)]


@pytest.mark.parametrize(
    ("chain", "limit", "expected"),
    [
        ([], 20, []),
        (ids(3), 20, ids(3)),
        (ids(20), 20, ids(20)),
        (ids(21), 20, [ids(21)[0], *ids(21)[2:]]),
        (ids(50), 20, [ids(50)[0], *ids(50)[31:]]),
        (ids(5), 1, ids(1)),
        (ids(5), 0, []),
        (["<a@x>", "<b@x>", "<a@x>", "<c@x>"], 20, ["<a@x>", "<b@x>", "<c@x>"]),
        (["<a@x>", "<b@x>", "<b@x>", "<c@x>", "<d@x>"], 3, ["<a@x>", "<c@x>", "<d@x>"]),
    ],
)
def test_references_keep_the_root_and_the_newest(chain: list[str], limit: int, expected: list[str]) -> None:
    assert list(bound_references(chain, limit)) == expected


def test_render_bounds_references_to_the_budget() -> None:
    chain = tuple(ids(40))
    parsed = message_from_bytes(render(make_message(references=chain)), policy=default_policy)
    refs = str(parsed["References"]).split()
    assert len(refs) == budgets.SEND_REFERENCES_EMITTED_MAX
    assert refs[0] == chain[0] and refs[-1] == chain[-1]


@pytest.mark.parametrize(
    ("typed", "normalised"),
    [
        ("a\nb", "a\r\nb"),
        ("a \t\nb  ", "a\r\nb"),
        ("a\r\nb\r\n", "a\r\nb\r\n"),
        ("a\rb", "a\r\nb"),
        ("  indented\n", "  indented\r\n"),
        ("x\u00a0\n", "x\u00a0\r\n"),
        ("", ""),
    ],
)
def test_normalise_body(typed: str, normalised: str) -> None:
    assert normalise_body(typed) == normalised


def test_sha256_hex() -> None:
    assert sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256_hex("é") == sha256_hex("é".encode())
