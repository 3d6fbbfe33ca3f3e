"""The canonical form of a Butler document (RFC 8785, JCS) and the two digests over a version.

spec/butler.md Part A §2 and §2 "Canonical form". ``canonical_json`` writes the *parsed* document
(``ButlerDocument.to_json()``) with the ``rfc8785`` package: keys sorted by UTF-16 code units, no
whitespace, numbers in their shortest ECMAScript form, so fractional numbers and ``null`` inside a
``validate`` schema survive. ``ast_sha256`` is over those bytes; ``source_sha256`` is over the source
exactly as submitted, so reformatting a source changes the second and not the first.

What JCS cannot write raises ``NotCanonical``: NaN and the infinities (RFC 8785 §3.2.2.3), integers
beyond ±(2^53 - 1) (RFC 8785 §3.2.2.3 / RFC 7493 §2.2) and lone surrogates. The checker turns these
into ``E_BUTLER_NOT_CANONICAL`` findings, each naming the JSON Pointer of the value
(``non_canonical_values``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import rfc8785

from mailnode import budgets


class NotCanonical(ValueError):
    """The value has no RFC 8785 form; ``reason`` is the library's message."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes (UTF-8) of ``value`` (JSON data: dict, list, str, int, float, bool, None).

    Raises:
        NotCanonical: NaN, ±Infinity, an integer beyond ±(2^53 - 1), a lone surrogate, a non-string key.
    """
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise NotCanonical(str(exc)) from exc


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def ast_sha256(document_json: Any) -> str:
    """SHA-256 (hex) of the canonical bytes of a parsed document's JSON. Raises ``NotCanonical``."""
    return sha256_hex(canonical_json(document_json))


def source_bytes(source: str | bytes) -> bytes | None:
    """The bytes a source digest is taken over: bytes as given, text as UTF-8; None if text is not encodable."""
    if isinstance(source, bytes):
        return source
    try:
        return source.encode("utf-8")
    except UnicodeEncodeError:
        return None


def source_sha256(source: str | bytes) -> str | None:
    """SHA-256 (hex) of the source as submitted (text as UTF-8); None for text with lone surrogates."""
    data = source_bytes(source)
    return None if data is None else sha256_hex(data)


@dataclass(frozen=True)
class Offence:
    """One value JCS cannot write: its JSON Pointer (RFC 6901) and the reason in words."""

    pointer: str
    reason: str


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def non_canonical_values(value: Any) -> list[Offence]:
    """Every value under ``value`` that RFC 8785 refuses, by JSON Pointer, in document order.

    Used to name the place of a ``NotCanonical`` failure; the walk is iterative, so depth is free.
    """
    found: list[Offence] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        pointer, item = stack.pop()
        found.extend(_offences_of(pointer, item))
        children: Iterator[tuple[str, Any]]
        if isinstance(item, dict):
            children = ((f"{pointer}/{_escape(str(k))}", v) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            children = ((f"{pointer}/{i}", v) for i, v in enumerate(item))
        else:
            continue
        stack.extend(reversed(list(children)))
    return found


def _offences_of(pointer: str, item: Any) -> list[Offence]:
    if isinstance(item, bool) or item is None:
        return []
    if isinstance(item, float) and not math.isfinite(item):
        return [Offence(pointer, f"{item!r} is not a JSON number (NaN and the infinities have no RFC 8785 form)")]
    if isinstance(item, int) and abs(item) > budgets.JSON_SAFE_INTEGER_MAX:
        return [
            Offence(
                pointer,
                f"the integer {item} is beyond ±(2^53 - 1) = {budgets.JSON_SAFE_INTEGER_MAX}, "
                "which JSON numbers do not carry exactly",
            )
        ]
    if isinstance(item, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in item):
        return [Offence(pointer, "the string holds a lone surrogate, which is not Unicode text")]
    if isinstance(item, dict):
        return [
            Offence(f"{pointer}/{_escape(str(k))}", f"the key {k!r} holds a lone surrogate")
            for k in item
            if isinstance(k, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in k)
        ]
    return []
