"""Authentication-Results (RFC 8601) parsing and the dmarc / spf / dkim verdicts a node trusts.

``parse_header(value)`` reads one field value and never raises. It tries ``authres`` first
(``authres.all_features()``, which knows DMARC), and falls back to the lenient reader in this module
when authres raises (it does on Office 365 and old Yahoo shapes, on headers without an
authserv-id, and with ``RecursionError``/``TypeError`` on hostile input; see
``../shared/spec/libraries.md`` §3). A value over ``budgets.AUTH_RESULTS_MAX_BYTES`` is not parsed at
all, because authres takes superlinear time on long input. The raw value is always kept.

``verdicts(values, trusted_ids)`` keeps only headers whose authserv-id is one of ``trusted_ids``
(RFC 8601 §5: a header anyone upstream could have written is not evidence) and returns the RFC 8601
result words. An unregistered result word is never turned into ``fail``: it yields ``None``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import authres

from mailnode import budgets

#: Result words per method: RFC 8601 §2.7.1 (dkim), §2.7.2 (spf), RFC 7489 §11.2 (dmarc).
RESULT_WORDS: dict[str, frozenset[str]] = {
    "dkim": frozenset({"none", "pass", "fail", "policy", "neutral", "temperror", "permerror"}),
    "spf": frozenset({"none", "neutral", "pass", "fail", "softfail", "temperror", "permerror", "policy"}),
    "dmarc": frozenset({"none", "pass", "fail", "temperror", "permerror"}),
}


#: RFC 8601 §2.2 Keyword (letters, digits, hyphens), as a result word is written.
_KEYWORD = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class Parser(enum.StrEnum):
    """Which reader produced a :class:`AuthResults` (a closed vocabulary).

    ``authres``: the authres library; ``lenient``: this module's fallback after authres raised;
    ``skipped``: not parsed (over the length cap, or empty).
    """

    AUTHRES = "authres"
    LENIENT = "lenient"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class MethodResult:
    """One resinfo: ``method`` (lower case, e.g. ``spf``), ``result`` (lower case word as written),
    and ``properties`` as ``("ptype.property", value)`` pairs (e.g. ``("header.d", "example.org")``)."""

    method: str
    result: str
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AuthResults:
    """One parsed Authentication-Results field.

    ``raw``: the unfolded value as received; ``authserv_id``: lower case, ``None`` when the header
    has none (such a header is never trusted); ``results``: the resinfos in order; ``parser``: who read
    it; ``error``: why authres (or the cap) refused it, ``None`` when authres parsed it.
    """

    raw: str
    authserv_id: str | None
    results: tuple[MethodResult, ...]
    parser: Parser
    error: str | None


@dataclass(frozen=True)
class AuthVerdicts:
    """The verdicts a node records: each an RFC 8601 result word or ``None``.

    ``None`` means no trusted header gave a registered word for that method (no trusted header at
    all, the method absent, or an unregistered word such as ``success``). ``trusted`` counts the
    headers whose authserv-id was trusted.
    """

    dmarc: str | None
    spf: str | None
    dkim: str | None
    trusted: int


def unfold(value: str) -> str:
    """Join a folded header value into one line (RFC 5322 §2.2.3) and strip it."""
    return re.sub(r"\r?\n(?=[ \t])", "", value).replace("\r", "").replace("\n", "").strip()


def _strip_comments(text: str) -> str:
    """Remove RFC 5322 comments (nested, with quoted-pairs), keeping quoted strings; iterative."""
    out: list[str] = []
    depth = 0
    quoted = False
    escaped = False
    for char in text:
        if escaped:
            escaped = False
            if depth == 0:
                out.append(char)
            continue
        if char == "\\":
            escaped = True
            if depth == 0:
                out.append(char)
            continue
        if quoted:
            out.append(char)
            if char == '"':
                quoted = False
            continue
        if char == "(":
            depth += 1
            continue
        if char == ")" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(" ")
            continue
        if depth == 0:
            if char == '"':
                quoted = True
            out.append(char)
    return "".join(out)


def _lenient(value: str) -> tuple[str | None, tuple[MethodResult, ...]]:
    """Read ``method=result ptype.prop=value`` resinfos from any ';'-separated shape.

    The first segment is the authserv-id when its first token holds no ``=`` (anything after the
    id in that segment, such as a version or Yahoo's ``from=...``, is ignored); otherwise the header
    has no authserv-id (Office 365 and the handmade case start with ``spf=pass``).
    """
    segments = [segment.strip() for segment in _strip_comments(value).split(";")]
    authserv_id: str | None = None
    if segments and segments[0]:
        first_token = segments[0].split()[0]
        if "=" not in first_token:
            authserv_id = first_token.lower()
            segments = segments[1:]
    results: list[MethodResult] = []
    for segment in segments:
        tokens = segment.split()
        if not tokens or "=" not in tokens[0]:
            continue
        method, _, result = tokens[0].partition("=")
        method = method.split("/", 1)[0].strip().lower()
        result = result.strip().strip('"').lower()
        # A result is a keyword (RFC 8601 §2.2); Yahoo's stray "from=yahoo.com" is not a resinfo.
        if not method or not _KEYWORD.match(result):
            continue
        properties = []
        for token in tokens[1:]:
            name, eq, prop_value = token.partition("=")
            if eq and "." in name:
                properties.append((name.lower(), prop_value.strip('"')))
        results.append(MethodResult(method=method, result=result, properties=tuple(properties)))
    return authserv_id, tuple(results)


def _from_authres(value: str) -> tuple[str | None, tuple[MethodResult, ...]]:
    """Parse with authres (raises whatever authres raises)."""
    header = authres.all_features().parse_value(value)
    results = []
    for item in header.results:
        properties = tuple(
            (f"{prop.type}.{prop.name}".lower(), str(prop.value)) for prop in (item.properties or [])
        )
        results.append(
            MethodResult(
                method=str(item.method).lower(), result=str(item.result).lower(), properties=properties
            )
        )
    authserv_id = str(header.authserv_id).lower() if header.authserv_id else None
    return authserv_id, tuple(results)


def parse_header(value: str) -> AuthResults:
    """Parse one Authentication-Results value (the text after the colon); never raises.

    Args:
        value: the field value, folded or not, as a ``str``.

    Returns:
        An :class:`AuthResults`. ``parser`` is ``skipped`` with ``error="too_long"`` when the value
        is over ``budgets.AUTH_RESULTS_MAX_BYTES`` UTF-8 bytes, or ``error="empty"`` for an empty
        value; ``lenient`` with authres's exception text as ``error`` when authres raised.
    """
    raw = unfold(str(value))
    if len(raw.encode("utf-8", "surrogateescape")) > budgets.AUTH_RESULTS_MAX_BYTES:
        return AuthResults(raw=raw, authserv_id=None, results=(), parser=Parser.SKIPPED, error="too_long")
    if not raw:
        return AuthResults(raw=raw, authserv_id=None, results=(), parser=Parser.SKIPPED, error="empty")
    try:
        authserv_id, results = _from_authres(raw)
    except Exception as exc:  # noqa: BLE001 - authres raises SyntaxError, RecursionError, TypeError... (spec §3)
        error = f"{type(exc).__name__}: {exc}"
        authserv_id, results = _lenient(raw)
        return AuthResults(
            raw=raw, authserv_id=authserv_id, results=results, parser=Parser.LENIENT, error=error
        )
    return AuthResults(raw=raw, authserv_id=authserv_id, results=results, parser=Parser.AUTHRES, error=None)


def _word(method: str, results: Iterable[MethodResult]) -> str | None:
    """The registered result word for ``method`` in one header; for dkim any ``pass`` wins."""
    words = [item.result for item in results if item.method == method and item.result in RESULT_WORDS[method]]
    if not words:
        return None
    if method == "dkim" and "pass" in words:
        return "pass"
    return words[0]


def verdicts(values: Sequence[str], trusted_ids: Iterable[str]) -> AuthVerdicts:
    """The dmarc, spf and dkim verdicts from the headers a node trusts.

    Args:
        values: the raw Authentication-Results values in header order (top first: the one the
            nearest server added).
        trusted_ids: authserv-ids this node trusts (compared case-insensitively), typically its own
            MX names.

    Returns:
        :class:`AuthVerdicts`; for each method, the word from the first trusted header that has a
        registered word for it, else ``None``.
    """
    trusted = {item.strip().lower() for item in trusted_ids if item.strip()}
    parsed = [parse_header(value) for value in values]
    kept = [item for item in parsed if item.authserv_id is not None and item.authserv_id in trusted]
    found: dict[str, str | None] = {}
    for method in RESULT_WORDS:
        found[method] = next((word for item in kept if (word := _word(method, item.results))), None)
    return AuthVerdicts(dmarc=found["dmarc"], spf=found["spf"], dkim=found["dkim"], trusted=len(kept))
