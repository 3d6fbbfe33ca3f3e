"""Authentication-Results: real header shapes from the corpus, trust, the cap and the fallback."""

from __future__ import annotations

import pytest

from mailnode import budgets
from mailnode.ingress.authresults import Parser, parse_header, verdicts

# Values taken from corpus files (named in the ids), unfolded.
OFFICE365 = (
    "spf=pass (sender IP is 104.47.124.246) smtp.helo=APC01-HK2-obe.outbound.protection.outlook.com; "
    "outlook.com; dkim=none (message not signed) header.d=none;outlook.com; dmarc=pass action=none "
    "header.from=outlook.com;"
)
YAHOO_OLD = (
    "mta4014.mail.gq1.yahoo.com  from=yahoo.com; domainkeys=neutral (no sig);  from=yahoo.com; dkim=pass (ok)"
)
ARF18 = "dmarc=fail (p=none; dis=none) header.from=example.org"
HANDMADE = (
    "spf=pass smtp.mailfrom=example.com; dkim=pass (2048-bit key; unprotected) header.d=example.com; "
    "dmarc=success(p=REJECT)"
)
ARF23 = (
    "example.com; spf=pass (sender IP is 203.0.113.245; identity alignment result is pass and alignment "
    "mode is relaxed) smtp.mailfrom=sironeko@example.com; dkim=pass (identity alignment result is pass "
    "and alignment mode is relaxed) header.d=example.com; x-hmca=pass header.id=sironeko@example.com"
)
ARF19 = (
    "126.example.com; dkim=fail (signature error: RSA verify failed) header.d=ietf.org; dkim=permerror "
    "(signature verify error: message body does not hash to bh value) header.d=example.net; "
    "spf=pass smtp.mailfrom=sironeko@neko.example.com"
)
GMAIL = (
    "mx.example.com;\r\n       dkim=pass header.i=@example.com header.s=20161025 header.b=RJNz7oaY;\r\n"
    "       spf=pass (example.com: domain of dummy@example.com designates 209.85.220.41 as permitted "
    "sender) smtp.mailfrom=dummy@example.com;\r\n       dmarc=pass (p=NONE sp=QUARANTINE dis=NONE) "
    "header.from=example.com"
)
SES = "nijo.example.jp; sender-id=pass header.from=MAILER-DAEMON@email-bounces.amazonses.com"


@pytest.mark.parametrize(
    ("value", "parser", "authserv_id", "methods"),
    [
        pytest.param(
            GMAIL,
            Parser.AUTHRES,
            "mx.example.com",
            [("dkim", "pass"), ("spf", "pass"), ("dmarc", "pass")],
            id="is-not-bounce-02 folded",
        ),
        pytest.param(
            ARF23,
            Parser.AUTHRES,
            "example.com",
            [("spf", "pass"), ("dkim", "pass"), ("x-hmca", "pass")],
            id="arf-23 x-hmca",
        ),
        pytest.param(
            ARF19,
            Parser.AUTHRES,
            "126.example.com",
            [("dkim", "fail"), ("dkim", "permerror"), ("spf", "pass")],
            id="arf-19 two dkim",
        ),
        pytest.param(SES, Parser.AUTHRES, "nijo.example.jp", [("sender-id", "pass")], id="amazonses-01"),
        pytest.param(
            OFFICE365,
            Parser.LENIENT,
            None,
            [("spf", "pass"), ("dkim", "none"), ("dmarc", "pass")],
            id="office365-04 no id",
        ),
        pytest.param(
            YAHOO_OLD,
            Parser.LENIENT,
            "mta4014.mail.gq1.yahoo.com",
            [("domainkeys", "neutral"), ("dkim", "pass")],
            id="yahoo-07 old",
        ),
        pytest.param(ARF18, Parser.LENIENT, None, [("dmarc", "fail")], id="arf-18 no id"),
        pytest.param(
            HANDMADE,
            Parser.LENIENT,
            None,
            [("spf", "pass"), ("dkim", "pass"), ("dmarc", "success")],
            id="handmade no id",
        ),
        pytest.param("", Parser.SKIPPED, None, [], id="arf-02 empty"),
    ],
)
def test_real_header_shapes(value: str, parser: Parser, authserv_id: str | None, methods: list) -> None:
    parsed = parse_header(value)
    assert parsed.parser is parser
    assert parsed.authserv_id == authserv_id
    assert [(item.method, item.result) for item in parsed.results] == methods
    assert (parsed.error is None) == (parser is Parser.AUTHRES)


def test_a_method_is_never_taken_as_the_authserv_id() -> None:
    assert parse_header(HANDMADE).authserv_id is None


@pytest.mark.parametrize(
    ("values", "trusted", "expected"),
    [
        ([GMAIL], ["MX.example.com"], ("pass", "pass", "pass")),
        ([GMAIL], ["other.example"], (None, None, None)),
        # No authserv-id: never trusted, whatever it claims.
        ([OFFICE365], ["outlook.com"], (None, None, None)),
        ([HANDMADE], ["example.com", "spf"], (None, None, None)),
        # An unregistered result word is not a verdict (and never "fail").
        (
            ["mx.example.com; dmarc=success header.from=a.example; spf=hardfail"],
            ["mx.example.com"],
            (None, None, None),
        ),
        # dkim: any pass wins; otherwise the first registered word.
        ([ARF19], ["126.example.com"], (None, "pass", "fail")),
        (
            ["mx.example.com; dkim=fail; dkim=pass header.d=a.example"],
            ["mx.example.com"],
            (None, None, "pass"),
        ),
        # The first trusted header decides per method; an untrusted one above it is ignored.
        (
            [ARF23, "mx.example.com; spf=softfail", "mx.example.com; spf=pass"],
            ["mx.example.com"],
            (None, "softfail", None),
        ),
        ([], ["mx.example.com"], (None, None, None)),
    ],
)
def test_verdicts_trust_only_listed_authserv_ids(
    values: list[str], trusted: list[str], expected: tuple
) -> None:
    found = verdicts(values, trusted)
    assert (found.dmarc, found.spf, found.dkim) == expected


def test_over_the_cap_is_not_parsed() -> None:
    padding = "x" * budgets.AUTH_RESULTS_MAX_BYTES
    value = f"mx.example.com; spf=pass smtp.mailfrom=a.example ({padding})"
    parsed = parse_header(value)
    assert parsed.parser is Parser.SKIPPED and parsed.error == "too_long"
    assert parsed.raw == value
    assert verdicts([value], ["mx.example.com"]).spf is None


def test_deep_comment_nesting_falls_back_instead_of_raising() -> None:
    # authres recurses per nested comment and raises RecursionError, which is not an AuthResError.
    depth = budgets.AUTH_RESULTS_MAX_BYTES // 4
    value = "mx.example.com; spf=pass " + "(" * depth + ")" * depth + " smtp.mailfrom=a.example"
    parsed = parse_header(value)
    assert parsed.parser is Parser.LENIENT
    assert parsed.error is not None and "RecursionError" in parsed.error
    assert verdicts([value], ["mx.example.com"]).spf == "pass"
