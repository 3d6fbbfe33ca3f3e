"""What application mail carries beside a correspondence send: custom headers, tags, metadata and Reply-To,
each judged before anything is read or stored (issue 20, "The send").

Pure. ``outbound.seal`` calls ``check_fields`` with the rest of its checks, so nothing is half-written.

Custom headers are an allowlist, not a denylist of the dangerous ones: a header is taken when it is
``List-Unsubscribe`` or ``List-Unsubscribe-Post`` (RFC 2369 §3.2, RFC 8058 §3.1: what bulk senders must
carry) or an ``X-`` extension header (RFC 822's user-defined fields) outside ``REFUSED_X_PREFIXES``. Every
other name is refused ``E_MAIL_HEADER_NOT_ALLOWED`` (422), because the renderer writes From, To, Cc, Subject,
Date, Message-ID, the threading and MIME headers itself, and a caller's copy of one of them would change who
the mail is from, where replies go, where it is delivered or how it is authenticated (``Sender``,
``Return-Path``, ``DKIM-Signature``, ``Received``, ``Authentication-Results`` ...). The refused ``X-``
prefixes are those mail systems read as routing, authentication, spam verdicts or provider instructions
(``X-Original-To``, ``X-Spam-Status``, ``X-MS-Exchange-Organization-*``, ``X-SES-*``, ``X-PM-*``, this
node's own ``X-Mailnode-*``...). A value is one line: a line break or control character is
``E_HEADER_INJECTION`` (422, ``addresses.reject_header_injection``). Tags and metadata never reach the
receiver: they are the application's own labels, shown by ``GET /api/mail`` and filtered on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.headerregistry import Address

from mailnode import budgets
from mailnode.addresses import NormalisedAddress, header_fault, parse_recipient, reject_header_injection
from mailnode.errors import MailnodeError, invalid

#: Custom headers allowed by name (lower-case -> the spelling written): RFC 2369 §3.2 and RFC 8058 §3.1.
LIST_HEADERS: dict[str, str] = {"list-unsubscribe": "List-Unsubscribe",
                                "list-unsubscribe-post": "List-Unsubscribe-Post"}

#: ``X-`` headers refused (lower-case prefixes): receivers, relays and providers read these as routing,
#: authentication, spam verdicts or sending instructions, so a caller's copy could misroute or mislabel mail.
REFUSED_X_PREFIXES: tuple[str, ...] = (
    "x-mailnode-",          # this node's own
    "x-original-", "x-forwarded-", "x-envelope-", "x-sender", "x-receiver", "x-rcpt-to", "x-delivered-to",
    "x-originating-ip", "x-real-ip",   # routing and the path the mail took
    "x-auth", "x-dkim", "x-arc", "x-spf", "x-google-dkim",   # authentication
    "x-spam", "x-virus", "x-ham-report", "x-barracuda", "x-proofpoint", "x-mimecast",   # verdicts
    "x-ms-exchange-", "x-microsoft-antispam", "x-forefront-", "x-google-", "x-gm-",   # hosted mail's own
    "x-ses-", "x-pm-", "x-mailgun-", "x-smtpapi", "x-mc-", "x-mailjet-", "x-resend-", "x-postmark-",   # providers
)

#: An RFC 5322 §3.6.8 field name: printable US-ASCII but colon.
_FIELD_NAME = re.compile(r"^[\x21-\x39\x3b-\x7e]+$")
#: A tag: letters, digits and ``_ - . : /`` (no space, so ``?tag=`` needs no quoting rules).
_TAG = re.compile(r"^[A-Za-z0-9_.:/-]+$")
#: A metadata key: letters, digits and ``_ - .`` (no colon: ``?metadata=key:value`` splits on the first one).
_METADATA_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


def is_tag(value: str) -> bool:
    """Whether ``value`` could be a tag (``check_tags``' rule). Pure."""
    return 0 < len(value) <= budgets.MAIL_TAG_MAX_CHARS and bool(_TAG.match(value))


def is_metadata_entry(key: str, value: str) -> bool:
    """Whether ``key`` and ``value`` could be a metadata entry (``check_metadata``' rules). Pure."""
    return (0 < len(key) <= budgets.MAIL_METADATA_KEY_MAX_CHARS and bool(_METADATA_KEY.match(key))
            and len(value) <= budgets.MAIL_METADATA_VALUE_MAX_CHARS and header_fault(value) is None)


def header_allowed(name: str) -> str | None:
    """The spelling to write for custom header ``name``, or None when it is not allowed (module docstring).

    Case-insensitive; ``X-`` headers keep the caller's spelling. Pure; total over strings.
    """
    if not _FIELD_NAME.match(name):
        return None
    lower = name.lower()
    if lower in LIST_HEADERS:
        return LIST_HEADERS[lower]
    if lower.startswith("x-") and len(lower) > 2 and not lower.startswith(REFUSED_X_PREFIXES):
        return name
    return None


def _limit(code: str, limit_name: str, limit: int, observed: int, why: str, fix: str) -> MailnodeError:
    return MailnodeError(code=code, what=f"{limit_name} is {limit}; this mail has {observed}.", why=why, fix=fix,
                         status=422, detail={"limit_name": limit_name, "limit": limit, "observed": observed})


def check_headers(headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``headers`` as ``(name as written, value)`` pairs in the given order, refused whole when one is not fit.

    Raises ``E_MAIL_TOO_MANY_HEADERS`` (422, over ``budgets.MAIL_HEADERS_MAX``), ``E_MAIL_HEADER_NOT_ALLOWED``
    (422: a name outside the allowlist, or one named twice in different case), ``E_HEADER_INJECTION`` /
    ``E_TEXT_MALFORMED`` (422: a line break, control character or lone surrogate in a value) and
    ``E_MAIL_HEADER_TOO_LONG`` (422: a value over ``budgets.MAIL_HEADER_VALUE_MAX_CHARS``).
    """
    if len(headers) > budgets.MAIL_HEADERS_MAX:
        raise _limit("E_MAIL_TOO_MANY_HEADERS", "MAIL_HEADERS_MAX", budgets.MAIL_HEADERS_MAX, len(headers),
                     "Custom headers are written into every hand-over; a few are all a mail needs.",
                     "Send fewer custom headers.")
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, value in headers.items():
        written = header_allowed(name)
        if written is None or name.lower() in seen:
            raise invalid("E_MAIL_HEADER_NOT_ALLOWED", f"The header {name[:80]!r} cannot be set on application mail.",
                          "Only List-Unsubscribe, List-Unsubscribe-Post and X- headers that change neither routing "
                          "nor authentication are taken, each once; the node writes every other header itself.",
                          "Remove it, or carry the value in an X- header of your own (X-Order-Id).",
                          header=name[:80])
        seen.add(name.lower())
        reject_header_injection(f"headers.{written}", value)
        if len(value) > budgets.MAIL_HEADER_VALUE_MAX_CHARS:
            raise MailnodeError(code="E_MAIL_HEADER_TOO_LONG",
                                what=f"The {written} value has {len(value)} characters; "
                                     f"MAIL_HEADER_VALUE_MAX_CHARS is {budgets.MAIL_HEADER_VALUE_MAX_CHARS}.",
                                why="A header is one line of at most 998 characters (RFC 5322 §2.1.1).",
                                fix="Shorten the value.", status=422,
                                detail={"limit_name": "MAIL_HEADER_VALUE_MAX_CHARS",
                                        "limit": budgets.MAIL_HEADER_VALUE_MAX_CHARS, "observed": len(value),
                                        "header": written})
        out.append((written, value))
    return tuple(out)


def check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """``tags`` without repeats (first mention's place kept).

    Raises ``E_MAIL_TOO_MANY_TAGS`` (422, over ``budgets.MAIL_TAGS_MAX`` distinct tags) and
    ``E_MAIL_TAG_INVALID`` (422: empty, over ``budgets.MAIL_TAG_MAX_CHARS``, or a character outside letters,
    digits and ``_ - . : /``).
    """
    distinct = tuple(dict.fromkeys(tags))
    if len(distinct) > budgets.MAIL_TAGS_MAX:
        raise _limit("E_MAIL_TOO_MANY_TAGS", "MAIL_TAGS_MAX", budgets.MAIL_TAGS_MAX, len(distinct),
                     "Tags label a mail for filtering; a few suffice.", "Send fewer tags (put details in metadata).")
    for tag in distinct:
        if not tag or len(tag) > budgets.MAIL_TAG_MAX_CHARS or not _TAG.match(tag):
            raise invalid("E_MAIL_TAG_INVALID", f"The tag {tag[:80]!r} is not a tag.",
                          f"A tag is 1 to {budgets.MAIL_TAG_MAX_CHARS} letters, digits or _ - . : / "
                          "(MAIL_TAG_MAX_CHARS), so it can be filtered on with ?tag= as written.",
                          "Send a short label such as welcome or campaign:2026-12.", tag=tag[:80])
    return distinct


def check_metadata(metadata: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``metadata`` as ``(key, value)`` pairs sorted by key.

    Raises ``E_MAIL_METADATA_TOO_LARGE`` (422: over ``budgets.MAIL_METADATA_MAX_KEYS`` entries, a key over
    ``budgets.MAIL_METADATA_KEY_MAX_CHARS`` or a value over ``budgets.MAIL_METADATA_VALUE_MAX_CHARS``
    characters) and ``E_MAIL_METADATA_INVALID`` (422: an empty key or one with a character outside letters,
    digits and ``_ - .``; a value with a control character or lone surrogate).
    """
    if len(metadata) > budgets.MAIL_METADATA_MAX_KEYS:
        raise _limit("E_MAIL_METADATA_TOO_LARGE", "MAIL_METADATA_MAX_KEYS", budgets.MAIL_METADATA_MAX_KEYS,
                     len(metadata), "Metadata is a small map the application reads back and filters on.",
                     "Send fewer entries (keep an id and look the rest up in your own records).")
    for key, value in metadata.items():
        if len(key) > budgets.MAIL_METADATA_KEY_MAX_CHARS:
            raise _limit("E_MAIL_METADATA_TOO_LARGE", "MAIL_METADATA_KEY_MAX_CHARS",
                         budgets.MAIL_METADATA_KEY_MAX_CHARS, len(key), "A metadata key is a short name.",
                         "Shorten the key.")
        if len(value) > budgets.MAIL_METADATA_VALUE_MAX_CHARS:
            raise _limit("E_MAIL_METADATA_TOO_LARGE", "MAIL_METADATA_VALUE_MAX_CHARS",
                         budgets.MAIL_METADATA_VALUE_MAX_CHARS, len(value), "A metadata value is an id or a word.",
                         "Shorten the value (keep an id and look the rest up in your own records).")
        if not key or not _METADATA_KEY.match(key):
            raise invalid("E_MAIL_METADATA_INVALID", f"The metadata key {key[:40]!r} is not a key.",
                          "A key is letters, digits and _ - . (no colon: ?metadata=key:value splits on it).",
                          "Send keys such as order_id.", key=key[:40])
        if header_fault(value) is not None:
            raise invalid("E_MAIL_METADATA_INVALID", f"The metadata value of {key!r} holds a control character.",
                          "Metadata values are one line of printable text.", "Send printable text.", key=key)
    return tuple(sorted(metadata.items()))


def check_reply_to(values: Sequence[str]) -> tuple[NormalisedAddress, ...]:
    """The Reply-To addresses (RFC 5322 §3.6.2), each with its display name, repeats removed.

    Raises ``E_MAIL_TOO_MANY_REPLY_TO`` (422, over ``budgets.MAIL_REPLY_TO_MAX``) and what
    ``addresses.parse_recipient`` raises naming ``reply-to`` (``E_ADDRESS_MALFORMED``, ``E_HEADER_INJECTION``).
    """
    parsed = {a.key: a for a in (parse_recipient(v, "reply-to") for v in values)}
    if len(parsed) > budgets.MAIL_REPLY_TO_MAX:
        raise _limit("E_MAIL_TOO_MANY_REPLY_TO", "MAIL_REPLY_TO_MAX", budgets.MAIL_REPLY_TO_MAX, len(parsed),
                     "Replies go to a few addresses at most.", "Name fewer reply_to addresses.")
    return tuple(parsed.values())


def body_missing() -> MailnodeError:
    """422 ``E_MAIL_BODY_MISSING``: a mail with neither text nor HTML."""
    return invalid("E_MAIL_BODY_MISSING", "The mail has neither text nor html.",
                   "A mail says something: a text part, an HTML part, or both (multipart/alternative).",
                   "Send text, html, or both.")


@dataclass(frozen=True)
class Extras:
    """Application mail's own fields after ``check_extras``.

    Attributes:
        reply_to: the Reply-To addresses, normalised, with display names.
        headers: ``(name as written, value)`` custom headers.
        tags: distinct tags in the order given.
        metadata: ``(key, value)`` sorted by key.
    """

    reply_to: tuple[NormalisedAddress, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()

    def reply_to_written(self) -> list[str]:
        """Each Reply-To address as a request would give it (``Name <addr>`` or ``addr``)."""
        return [str(Address(display_name=a.display_name, addr_spec=a.address)) if a.display_name else a.address
                for a in self.reply_to]


def check_extras(from_name: str | None, reply_to: Sequence[str], headers: Sequence[tuple[str, str]],
                 tags: Sequence[str], metadata: Sequence[tuple[str, str]], *, text_part: bool,
                 html: str | None) -> Extras:
    """Judge every field of this module at once. Pure.

    Raises ``E_MAIL_BODY_MISSING`` (422, no text part and no HTML), ``E_HEADER_INJECTION`` for a From display
    name holding a line break, then what ``check_reply_to``, ``check_headers``, ``check_tags`` and
    ``check_metadata`` raise, in that order.
    """
    if not text_part and html is None:
        raise body_missing()
    if from_name is not None:
        reject_header_injection("from", from_name)
    return Extras(reply_to=check_reply_to(reply_to), headers=check_headers(dict(headers)), tags=check_tags(tags),
                  metadata=check_metadata(dict(metadata)))
