"""Bounds on parsing one message, decided before the standard library's parsers see it.

The stdlib's structured header parser (``policy.default.header_factory``) is quadratic in RFC 2047 encoded
words and in address-list entries, its message parser keeps a Python object per line and recurses once per
nested part, and ``walk()`` recurses the same way (issue 14 item 1: a 2.1 MB Subject of 100,000 encoded words
grew the process past 12 GB, a 669 KB To of 20,000 entries to 22 GB, a 5,000-deep multipart raised
RecursionError). So the bytes are measured first, by linear scans that allocate little, and each measure is
compared with its budget in ``budgets.py`` (``PARSE_*``):

- :func:`shape` measures the message: top-level header fields, lines, MIME parts.
- :func:`body_refusal` and :func:`mailnode.addresses.header_refusal` are pure decisions: ``None`` (read it)
  or a sentence naming the measure, its value and its limit.
- :func:`load` parses what the decisions allow: the first ``PARSE_HEADERS_MAX`` header fields, and the body only
  when it is within bounds; otherwise a headers-only message. Each thing left unread is a note in words.

Nothing here raises on the bytes' content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email import message_from_bytes
from email.feedparser import BytesFeedParser
from email.message import Message
from email.policy import compat32

from mailnode import budgets

#: The blank line that ends the header section (RFC 5322 §2.1).
_HEADER_END = re.compile(rb"\r?\n\r?\n")
#: The start of a header field: a line that does not begin with white space (RFC 5322 §2.2.3 folding).
_FIELD_START = re.compile(rb"^[^ \t\r\n]", re.MULTILINE)
#: A Content-Type field at the start of a line, any case.
_CONTENT_TYPE = re.compile(rb"^content-type[ \t]*:", re.MULTILINE | re.IGNORECASE)
#: A declared boundary parameter (RFC 2046 §5.1.1: 1 to 70 characters).
_BOUNDARY = re.compile(rb"boundary[ \t]*=[ \t]*\"?([^\"\s;]{1,70})", re.IGNORECASE)
#: A line that may be a boundary delimiter: ``--`` then up to 70 characters, optionally closed by ``--``.
_DELIMITER = re.compile(rb"^--([^\r\n]{1,74}?)[ \t]*\r?$", re.MULTILINE)


@dataclass(frozen=True)
class Shape:
    """What :func:`shape` measured.

    Fields:
        header_end: the offset of the blank line ending the top-level header section (``len(raw)`` if none).
        header_fields: top-level header fields, counted up to ``PARSE_HEADERS_MAX + 1``.
        header_cut: the offset where field number ``PARSE_HEADERS_MAX + 1`` starts, or ``None`` within budget.
        lines: line feeds in the whole message.
        mime_parts: the larger of ``Content-Type`` lines after the header section and delimiter lines of the
            declared boundaries, counted up to ``PARSE_MIME_PARTS_MAX + 1``.
    """

    header_end: int
    header_fields: int
    header_cut: int | None
    lines: int
    mime_parts: int


def _count(pattern: re.Pattern[bytes], data: bytes, cap: int, start: int = 0) -> int:
    """Matches of ``pattern`` in ``data`` from ``start``, counting stops past ``cap`` (so the scan is bounded)."""
    found = 0
    for _ in pattern.finditer(data, start):
        found += 1
        if found > cap:
            break
    return found


def _delimiters(raw: bytes, start: int, cap: int) -> int:
    """Lines after ``start`` that delimit a declared boundary (``--b`` or ``--b--``), counted up to ``cap + 1``.

    More distinct declared boundaries than ``cap`` answers ``cap + 1`` at once: each needs a part of its own.
    """
    boundaries: set[bytes] = set()
    for match in _BOUNDARY.finditer(raw):
        boundaries.add(match.group(1))
        if len(boundaries) > cap:
            return cap + 1
    if not boundaries:
        return 0
    found = 0
    for match in _DELIMITER.finditer(raw, start):
        token = match.group(1)
        if token in boundaries or (token.endswith(b"--") and token[:-2] in boundaries):
            found += 1
            if found > cap:
                break
    return found


def shape(raw: bytes) -> Shape:
    """Measure ``raw`` with linear scans; never raises. See :class:`Shape` for what each figure counts."""
    if raw.startswith((b"\n", b"\r\n")):  # no header section: the body starts at once
        header_end = 0
    elif (end_match := _HEADER_END.search(raw)) is not None:
        header_end = end_match.start() + (2 if raw[end_match.start():end_match.start() + 2] == b"\r\n" else 1)
    else:
        header_end = len(raw)
    fields = 0
    cut: int | None = None
    for match in _FIELD_START.finditer(raw, 0, header_end):
        fields += 1
        if fields > budgets.PARSE_HEADERS_MAX:
            cut = match.start()
            break
    parts = max(_count(_CONTENT_TYPE, raw, budgets.PARSE_MIME_PARTS_MAX, header_end),
                _delimiters(raw, header_end, budgets.PARSE_MIME_PARTS_MAX))
    return Shape(header_end=header_end, header_fields=fields, header_cut=cut, lines=raw.count(b"\n"),
                 mime_parts=parts)


def body_refusal(measured: Shape) -> str | None:
    """Why the body must not be read into parts, in words, or ``None`` when it may be (pure)."""
    if measured.lines > budgets.PARSE_LINES_MAX:
        return f"it has {measured.lines:,} lines (the limit is {budgets.PARSE_LINES_MAX:,})"
    if measured.mime_parts > budgets.PARSE_MIME_PARTS_MAX:
        return f"it has more than {budgets.PARSE_MIME_PARTS_MAX:,} MIME parts"
    return None


@dataclass(frozen=True)
class Loaded:
    """A message parsed within bounds: the compat32 ``message``, the ``notes`` on what was left unread (as
    defect texts), and whether the body was read into parts (``body_read``)."""

    message: Message
    notes: tuple[str, ...]
    body_read: bool


def load(raw: bytes) -> Loaded:
    """Parse ``raw`` with compat32 within the ``PARSE_*`` budgets.

    Header fields past ``PARSE_HEADERS_MAX`` are cut from what the parser sees; a body past
    :func:`body_refusal` is not handed to it (the message is then its headers and an empty body). The raw
    bytes are the caller's and keep everything. Raises only what the stdlib parser raises on bounded input.
    """
    measured = shape(raw)
    notes: list[str] = []
    head = raw[:measured.header_end]
    if measured.header_cut is not None:
        head = raw[:measured.header_cut]
        notes.append(f"message: it has more than {budgets.PARSE_HEADERS_MAX:,} header fields; those past the "
                     "first were not read (the raw message keeps them)")
    refusal = body_refusal(measured)
    if refusal is not None:
        notes.append(f"body: not read because {refusal}; the raw message keeps it")
        return Loaded(message_from_bytes(head + b"\r\n", policy=compat32), tuple(notes), body_read=False)
    return Loaded(_parse_in_chunks(head, memoryview(raw)[measured.header_end:]), tuple(notes), body_read=True)


def _parse_in_chunks(head: bytes, body: memoryview) -> Message:
    """compat32's parse of ``head`` then ``body``, fed ``PARSE_FEED_CHUNK_BYTES`` at a time.

    The same parse as ``message_from_bytes(head + body)`` without its copies: handed all at once, the stdlib
    decodes the whole message to one string and splits all of it into lines before parsing (174 MB of growth
    for 25 MB of short lines, against 52 MB fed in chunks; docs/performance.md).
    """
    parser = BytesFeedParser(policy=compat32)
    parser.feed(head)
    step = budgets.PARSE_FEED_CHUNK_BYTES
    for start in range(0, len(body), step):
        parser.feed(bytes(body[start:start + step]))
    return parser.close()
