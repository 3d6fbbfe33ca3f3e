"""Recipient validation: syntax only, special-use domains accepted, IDNA and case, injection refused."""

from __future__ import annotations

import pytest

from mailnode.addresses import normalise_address, reject_header_injection
from mailnode.errors import MailnodeError


@pytest.mark.parametrize(
    ("given", "address", "domain"),
    [
        ("ann@example.com", "ann@example.com", "example.com"),
        ("Ann.Lee@EXAMPLE.COM", "Ann.Lee@example.com", "example.com"),
        ("ann@host.test", "ann@host.test", "host.test"),
        ("ann@host.example", "ann@host.example", "host.example"),
        ("ann@host.invalid", "ann@host.invalid", "host.invalid"),
        ("ann@mail.corp.internal", "ann@mail.corp.internal", "mail.corp.internal"),
        ("bounces+srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B@b.acme.test", "bounces+srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B@b.acme.test",
         "b.acme.test"),
        ("ann@Bücher.Example", "ann@xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("ann@xn--bcher-kva.example", "ann@xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("ann@ＥＸＡＭＰＬＥ.com", "ann@example.com", "example.com"),
        ("  ann@example.com ", "ann@example.com", "example.com"),
    ],
)
def test_valid_addresses_are_normalised(given: str, address: str, domain: str) -> None:
    result = normalise_address(given)
    assert (result.address, result.domain) == (address, domain)
    assert result.key == address.lower()


@pytest.mark.parametrize(
    "given",
    [
        "bad@@example.com",
        "no-at-sign",
        "ann@localhost",
        "ann@example",
        "ann@host.localhost",
        "ann@hidden.onion",
        "ann@printer.local",
        '"quoted local"@example.com',
        "ann@[192.0.2.1]",
        "Ann <ann@example.com>",
        "üser@example.com",
        "ann@exa mple.com",
        "ann@example.com,bob@example.com",
        "ann\u200b@example.com",
        "",
    ],
)
def test_malformed_addresses_are_refused_naming_the_address(given: str) -> None:
    with pytest.raises(MailnodeError) as caught:
        normalise_address(given, field="cc")
    err = caught.value
    assert (err.code, err.status) == ("E_ADDRESS_MALFORMED", 422)
    assert err.detail == {"field": "cc", "address": given}
    assert repr(given) in err.what


@pytest.mark.parametrize("given", ["ann@example.com\r\nBcc: eve@evil.test", "ann@example.com\n", "\rann@example.com",
                                   "ann@exa\x00mple.com"])
def test_line_breaks_are_header_injection(given: str) -> None:
    with pytest.raises(MailnodeError) as caught:
        normalise_address(given)
    assert (caught.value.code, caught.value.status) == ("E_HEADER_INJECTION", 422)


@pytest.mark.parametrize("value", ["Hello\r\nBcc: x@y.test", "Hello\nthere", "Hello\rthere", "nul\x00"])
def test_header_values_with_line_breaks_are_refused(value: str) -> None:
    with pytest.raises(MailnodeError) as caught:
        reject_header_injection("Subject", value)
    assert caught.value.code == "E_HEADER_INJECTION"
    assert caught.value.detail["field"] == "Subject"


def test_clean_header_value_passes_unchanged() -> None:
    assert reject_header_injection("Subject", "Re: ça va? \t ok") == "Re: ça va? \t ok"
