"""Hostile messages from issue 14 item 1, built on demand (none is stored in the repository).

Each returns the message's bytes with CRLF line endings, within ``budgets.MESSAGE_MAX_BYTES``.
"""

from __future__ import annotations

import hashlib


def subject_bomb(words: int = 100_000) -> bytes:
    """A ~2.1 MB message whose Subject is ``words`` folded ``=?utf-8?Q?=41=42?=`` encoded words."""
    folded = "\r\n ".join(["=?utf-8?Q?=41=42?="] * words)
    return (b"From: attacker@remote.test\r\nTo: support@example.test\r\nMessage-ID: <subject-bomb@remote.test>\r\n"
            b"Subject: " + folded.encode("ascii") + b"\r\n\r\nhello\r\n")


def to_bomb(entries: int = 20_000) -> bytes:
    """A ~670 KB message whose To holds ``entries`` ``=?utf-8?B?QUFB?= <uN@x.test>`` entries, folded."""
    to = ",\r\n ".join(f"=?utf-8?B?QUFB?= <u{i}@x.test>" for i in range(entries))
    return (b"From: attacker@remote.test\r\nTo: " + to.encode("ascii")
            + b"\r\nSubject: many recipients\r\nMessage-ID: <to-bomb@remote.test>\r\n\r\nhello\r\n")


def deep_multipart(depth: int = 5_000) -> bytes:
    """A message whose body nests ``depth`` ``multipart/mixed`` parts, one inside the next."""
    head = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"\r\n\r\n--b{i}\r\n' for i in range(depth))
    tail = "".join(f"\r\n--b{i}--\r\n" for i in reversed(range(depth)))
    return ("From: attacker@remote.test\r\nTo: support@example.test\r\nSubject: deep\r\n"
            "Message-ID: <deep-bomb@remote.test>\r\nMIME-Version: 1.0\r\n" + head
            + "Content-Type: text/plain\r\n\r\ndeep\r\n" + tail).encode("ascii")


def long_message_id(chars: int = 60_000) -> bytes:
    """A message whose Message-ID (and In-Reply-To) is one id of ``chars`` hex characters (incompressible, so a
    database index stores it whole), under the header budget."""
    long_id = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(chars // 64 + 1))[:chars]
    long_id += "@remote.test"
    return (f"From: attacker@remote.test\r\nTo: support@example.test\r\nSubject: long id\r\n"
            f"Message-ID: <{long_id}>\r\nIn-Reply-To: <{long_id}>\r\n\r\nhello\r\n").encode("ascii")


def long_text(lines: int = 390_000) -> bytes:
    """A message near ``MESSAGE_MAX_BYTES`` of short text lines, just under ``PARSE_LINES_MAX``: the largest body
    still read whole (about 25 MB of 64-character lines)."""
    line = b"The quick brown fox jumps over the lazy dog, again and again. ok\r\n"
    return (b"From: attacker@remote.test\r\nTo: support@example.test\r\nSubject: long text\r\n"
            b"Message-ID: <long-text@remote.test>\r\n\r\n" + line * lines)


def _html(subject: str, body: bytes) -> bytes:
    return (f"From: attacker@remote.test\r\nTo: support@example.test\r\nSubject: {subject}\r\n"
            f"Message-ID: <{subject.replace(' ', '-')}@remote.test>\r\nMIME-Version: 1.0\r\n"
            "Content-Type: text/html; charset=utf-8\r\n\r\n").encode("ascii") + body


def html_nesting(tags: int = 4_000_000) -> bytes:
    """An HTML-only message of ``tags`` unclosed ``<div>`` (24 MB on 100-tag lines): html5ever, under nh3, is
    quadratic in nesting (issue 15)."""
    line = b"<div>" * 100 + b"\r\n"
    return _html("html nesting", line * (tags // 100) + b"x\r\n")


def html_table(rows: int = 520_000) -> bytes:
    """An HTML-only message of ``rows`` two-cell table rows (about 23 MB, ten rows a line so that the body is
    read): inscriptis's costliest shape."""
    line = b"<tr><td>cell</td><td>another cell</td></tr>" * 10 + b"\r\n"
    return _html("html table", b"<table>\r\n" + line * (rows // 10) + b"</table>\r\n")
