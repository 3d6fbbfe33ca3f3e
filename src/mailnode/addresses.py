"""Recipient validation and normalisation (syntax only, no network), and the guards on caller text.

Every address that will appear in a header or an SMTP envelope passes through ``normalise_address``
before anything is stored; a recipient may carry a display name (``"Alice Müller" <alice@example.com>``,
``parse_recipient``): the stdlib parses the RFC 5322 §3.4 mailbox (RFC 6532 UTF-8 allowed in the phrase),
and the address part goes through the same check. Validation is email-validator's syntax check (RFC 5322 §3.4.1
addr-spec, RFC 5321 §4.1.2 limits as the library applies them) with deliverability checks off, so nothing here
touches DNS. Domains come back IDNA-encoded (A-labels) and lower-cased (spec/outbound.md Part A 15);
the local part is kept as written, since RFC 5321 §2.4 lets the receiving host give it meaning.

Caller text is judged by two pure functions before anything is stored (issue 9): ``header_fault`` for a
value that becomes a header (a line break by ``str.splitlines``, a control character but HT, a lone
surrogate) and ``body_fault`` for a body (NUL, a lone surrogate). ``FAULT_CODES`` maps each fault to its
stable code; ``reject_header_injection`` and ``reject_body_fault`` raise it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from email.headerregistry import HeaderRegistry
from enum import StrEnum
from typing import Any

import email_validator
from email_validator import EmailNotValidError, validate_email

from mailnode import budgets
from mailnode.errors import MailnodeError, invalid

#: Special-use names (RFC 6761, RFC 2606) that a private relay may route and that tests use. The
#: library refuses every name in ``email_validator.SPECIAL_USE_DOMAIN_NAMES``; its documented way to
#: accept some is to remove them from that list (its ``test_environment`` flag only frees ``test``).
#: ``example`` and ``internal`` are not on the library's list and need nothing. ``localhost``,
#: ``local`` (mDNS), ``onion`` and ``arpa`` stay refused: no relay delivers mail to them.
ACCEPTED_SPECIAL_USE_DOMAINS: tuple[str, ...] = ("test", "invalid")

for _name in ACCEPTED_SPECIAL_USE_DOMAINS:
    # The list is module state read at call time; removing our names is idempotent across imports.
    while _name in email_validator.SPECIAL_USE_DOMAIN_NAMES:
        email_validator.SPECIAL_USE_DOMAIN_NAMES.remove(_name)

#: Every character ``str.splitlines`` ends a line at: LF, VT, FF, CR, FS, GS, RS, NEL (U+0085), LINE SEPARATOR
#: (U+2028) and PARAGRAPH SEPARATOR (U+2029). In a header each would start another header or the body
#: (RFC 5322 §2.2), and Python's ``email`` refuses them all when it renders ("Header values may not contain
#: linefeed or carriage return characters").
LINE_BREAKS: frozenset[str] = frozenset("\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029")
#: The one control character a header value may hold: HT, which RFC 5322 §2.2 allows in a field body as
#: white space (WSP) and which renders unchanged.
HEADER_CONTROLS_ALLOWED: frozenset[str] = frozenset("\t")


class TextFault(StrEnum):
    """Why caller text cannot be stored or rendered (a closed vocabulary; ``FAULT_CODES`` is total over it).

    - ``line_break``: a character ``str.splitlines`` breaks on, in a header value.
    - ``control``: a control character (Unicode category Cc) other than HT in a header value, or NUL in a body
      (RFC 5322 §2.2, §2.3: text carries no NUL; PostgreSQL cannot store one).
    - ``surrogate``: a lone UTF-16 surrogate (category Cs; JSON ``"\\ud800"`` decodes to one): not a character,
      so it has no UTF-8 form and the text cannot be written anywhere.
    """

    LINE_BREAK = "line_break"
    CONTROL = "control"
    SURROGATE = "surrogate"


#: The code each fault is refused with (422): a header fault is an injection attempt whatever it is made of;
#: a surrogate is malformed text wherever it stands.
FAULT_CODES: dict[TextFault, str] = {
    TextFault.LINE_BREAK: "E_HEADER_INJECTION",
    TextFault.CONTROL: "E_HEADER_INJECTION",
    TextFault.SURROGATE: "E_TEXT_MALFORMED",
}


@dataclass(frozen=True)
class Fault:
    """The first offending character of a value: ``kind``, the character itself and its 0-based ``position``."""

    kind: TextFault
    character: str
    position: int

    @property
    def codepoint(self) -> str:
        """The character as ``U+XXXX``."""
        return f"U+{ord(self.character):04X}"

    @property
    def name(self) -> str:
        """The character's Unicode name, or its category for one without (most controls)."""
        return unicodedata.name(self.character, f"a {unicodedata.category(self.character)} character")


def _class_of(chars: list[str]) -> re.Pattern[str]:
    return re.compile("[" + "".join(re.escape(c) for c in chars) + "]")


def _is_header_fault(ch: str) -> bool:
    category = unicodedata.category(ch)
    return ch in LINE_BREAKS or category == "Cs" or (category == "Cc" and ch not in HEADER_CONTROLS_ALLOWED)


#: One pass over a value finds the first faulty character; built from the definitions above, not typed by hand.
_HEADER_FAULTY = _class_of([chr(c) for c in range(0x10000) if _is_header_fault(chr(c))])
_BODY_FAULTY = _class_of(["\x00"] + [chr(c) for c in range(0xD800, 0xE000)])


def _kind(ch: str) -> TextFault:
    if unicodedata.category(ch) == "Cs":
        return TextFault.SURROGATE
    return TextFault.LINE_BREAK if ch in LINE_BREAKS else TextFault.CONTROL


def header_fault(value: str) -> Fault | None:
    """The first character of ``value`` a header may not carry, or None. Pure.

    Refused: every ``LINE_BREAKS`` character (``line_break``), every other control character (Unicode Cc:
    U+0000-U+001F, U+007F-U+009F) but HT (``control``), every lone surrogate (``surrogate``). Everything else
    passes, format characters included (an emoji's ZERO WIDTH JOINER is one); RFC 2047 encodes it.
    """
    found = _HEADER_FAULTY.search(value)
    if found is None:
        return None
    return Fault(_kind(found.group()), found.group(), found.start())


def body_fault(value: str) -> Fault | None:
    """The first character of a body that cannot be stored, or None. Pure.

    Refused: NUL (``control``; RFC 5322 §2.3 text has none, and PostgreSQL cannot store it) and lone
    surrogates (``surrogate``). Line breaks of every kind and other controls (a form feed, a tab) are text.
    """
    found = _BODY_FAULTY.search(value)
    if found is None:
        return None
    return Fault(_kind(found.group()), found.group(), found.start())


@dataclass(frozen=True)
class NormalisedAddress:
    """A validated recipient.

    Attributes:
        address: ``local@domain`` with the domain in A-labels, lower-cased; what headers and envelopes use.
        local_part: the local part as written (case kept).
        domain: the A-label, lower-cased domain.
        key: ``address`` lower-cased; two recipients with the same key are the same recipient row.
        display_name: the name shown beside the address in a header (``Alice Müller``), or None.
    """

    address: str
    local_part: str
    domain: str
    display_name: str | None = None

    @property
    def key(self) -> str:
        """The de-duplication key: the whole address lower-cased."""
        return self.address.lower()


def reject_header_injection(field: str, value: str) -> str:
    """Return ``value`` unchanged when ``header_fault`` finds nothing; else raise its code (422).

    ``field`` names the header (``Subject``, ``To`` ...) for the error. Applied to every value that will
    become a header, so a caller cannot smuggle a second header or a body in (RFC 5322 §2.2).

    Raises ``E_HEADER_INJECTION`` for a line break or a control character, ``E_TEXT_MALFORMED`` for a lone
    surrogate; ``detail`` carries ``field``, ``character`` (``U+XXXX``), ``position`` and the first 200
    characters of ``value``.
    """
    fault = header_fault(value)
    if fault is not None:
        raise text_fault_error(field, value, fault)
    return value


def reject_body_fault(field: str, value: str) -> str:
    """Return ``value`` unchanged when ``body_fault`` finds nothing; else raise ``E_TEXT_MALFORMED`` (422).

    ``field`` names the request field (``body``, ``text``) for the error.
    """
    fault = body_fault(value)
    if fault is not None:
        raise _malformed_text(field, value, fault)
    return value


def text_fault_error(field: str, value: str, fault: Fault) -> MailnodeError:
    """The 422 for ``fault`` in header ``field``: its ``FAULT_CODES`` code, naming the character."""
    code = FAULT_CODES[fault.kind]
    if code != "E_HEADER_INJECTION":
        return _malformed_text(field, value, fault)
    what = "a line break" if fault.kind is TextFault.LINE_BREAK else "a control character"
    return invalid(
        "E_HEADER_INJECTION",
        f"The {field} value contains {what}: {fault.codepoint} ({fault.name}) at position {fault.position}.",
        "A header value is one line of printable text: a line break (CR, LF or any other character "
        "str.splitlines breaks on, such as U+2028) would start another header or the body, and a control "
        "character has no place in a header (RFC 5322 §2.2).",
        f"Remove {fault.codepoint} from {field} (a space can stand in for a line break) and send again.",
        field=field,
        character=fault.codepoint,
        position=fault.position,
        value=_storable(value[:200]),
    )


def _storable(text: str) -> str:
    """``text`` with any lone surrogate as ``?``, so the error itself can be written as JSON."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _malformed_text(field: str, value: str, fault: Fault) -> MailnodeError:
    why = ("A lone UTF-16 surrogate is half of a character: it has no UTF-8 form, so the text cannot be "
           "stored or sent." if fault.kind is TextFault.SURROGATE else
           "Text carries no NUL (RFC 5322 §2.3), and the database cannot store one.")
    return invalid(
        "E_TEXT_MALFORMED",
        f"The {field} value contains {fault.codepoint} ({fault.name}) at position {fault.position}.",
        why,
        f"Remove {fault.codepoint} from {field} (send the whole character, or none) and send again.",
        field=field,
        character=fault.codepoint,
        position=fault.position,
    )


def normalise_address(value: str, field: str = "to") -> NormalisedAddress:
    """Validate one bare address (no display name) and return it normalised.

    Args:
        value: the address as given, e.g. ``"Ann@Bücher.Example"``.
        field: where it came from (``to``, ``cc``, ``bcc``, ``from``), named in errors.

    Returns:
        ``NormalisedAddress`` with the domain IDNA-encoded and lower-cased.

    Raises:
        ``E_HEADER_INJECTION`` (422) when the value holds a line break or a control character, and
        ``E_TEXT_MALFORMED`` (422) for a lone surrogate (both checked first, so an injection attempt is
        reported as such); ``E_ADDRESS_MALFORMED`` (422) naming the address otherwise,
        including internationalised local parts (SMTPUTF8, RFC 6531), which the transports do not offer.
    """
    if not isinstance(value, str):
        raise _malformed(repr(value), field, "An address must be a string.")
    reject_header_injection(field, value)
    try:
        checked = validate_email(
            value.strip(),
            check_deliverability=False,
            allow_smtputf8=False,
            allow_display_name=False,
            allow_quoted_local=False,
            allow_domain_literal=False,
        )
    except EmailNotValidError as exc:
        raise _malformed(value, field, str(exc)) from exc
    # ascii_email is set because SMTPUTF8 is refused above; an absent one would be a library change.
    ascii_address = checked.ascii_email
    if not ascii_address:
        raise _malformed(value, field, "The address has no ASCII form.")
    local, _, domain = ascii_address.rpartition("@")
    domain = domain.lower()
    return NormalisedAddress(address=f"{local}@{domain}", local_part=local, domain=domain)


#: Parses one header's worth of addresses the way the stdlib reads a received To: (RFC 5322 §3.4).
_HEADERS = HeaderRegistry()


def parse_recipient(value: str, field: str = "to") -> NormalisedAddress:
    """Validate one recipient, bare (``alice@example.com``) or with a display name, and return it normalised.

    A display name may be quoted (``"Müller, Alice" <alice@example.com>``), plain UTF-8
    (``Alice Müller <alice@example.com>``, RFC 6532 §3.2) or RFC 2047 encoded words; it comes back decoded in
    ``display_name`` (None when absent or empty) and is encoded again on the way out (``outbound.render``).
    The value must be exactly one mailbox: a list (``a@x, b@y``), a group (``team: a@x;``) or anything the
    stdlib parser reports a defect for (``x <a@b> y``) is refused. The address part gets
    ``normalise_address``'s check.

    Raises ``E_HEADER_INJECTION`` / ``E_TEXT_MALFORMED`` (422) for a line break, control character or lone
    surrogate anywhere in ``value`` (checked first) or in the decoded display name, ``E_ADDRESS_MALFORMED``
    (422) otherwise.
    """
    if not isinstance(value, str):
        raise _malformed(repr(value), field, "An address must be a string.")
    reject_header_injection(field, value)
    if "<" not in value and '"' not in value and "=?" not in value:
        return normalise_address(value, field)
    try:
        header = _HEADERS(field, value.strip())
    except ValueError as exc:
        # The stdlib refuses a display name whose encoded words decode to CR or LF: an injection attempt.
        raise invalid("E_HEADER_INJECTION", f"The {field} value's display name decodes to a line break.",
                      "An RFC 2047 encoded word that decodes to CR or LF would start another header when the "
                      "name is written out (RFC 5322 §2.2).",
                      f"Remove the encoded line break from the {field} display name and send again.",
                      field=field, value=_storable(value[:200])) from exc
    groups: tuple[Any, ...] = getattr(header, "groups", ())
    if header.defects or len(groups) != 1 or groups[0].display_name is not None or len(groups[0].addresses) != 1:
        raise _malformed(value, field, "A recipient is one mailbox: an address, or a display name followed by "
                                       "the address in angle brackets (RFC 5322 §3.4).")
    mailbox = groups[0].addresses[0]
    bare = normalise_address(mailbox.addr_spec, field)
    name = mailbox.display_name.strip()
    if name:
        reject_header_injection(field, name)
    return NormalisedAddress(bare.address, bare.local_part, bare.domain, name or None)


def _malformed(value: str, field: str, why: str) -> MailnodeError:
    return invalid(
        "E_ADDRESS_MALFORMED",
        f"The {field} address {value!r} is not a valid email address.",
        why,
        f"Correct the {field} address (local@domain, optionally after a display name: "
        f"\"Alice Example\" <alice@example.com>) and send again.",
        field=field,
        address=value[:320],
    )


def header_refusal(value: str, *, address_list: bool, spent_chars: int) -> str | None:
    """Why a header value must be kept as received instead of decoded and parsed, or ``None`` (pure).

    Args:
        value: the unfolded value as received.
        address_list: whether it is read as an address list (To, Cc, From...).
        spent_chars: header characters this message already had decoded and parsed.
    """
    words = value.count("=?")
    if words > budgets.PARSE_HEADER_ENCODED_WORDS_MAX:
        return f"it holds {words:,} encoded words (the limit is {budgets.PARSE_HEADER_ENCODED_WORDS_MAX:,})"
    if address_list:
        addresses = value.count("@")
        if addresses > budgets.PARSE_ADDRESS_LIST_ENTRIES_MAX:
            return f"it lists {addresses:,} addresses (the limit is {budgets.PARSE_ADDRESS_LIST_ENTRIES_MAX:,})"
    if len(value) > budgets.PARSE_HEADER_STRUCTURED_MAX_CHARS:
        return f"it is {len(value):,} characters long (the limit is {budgets.PARSE_HEADER_STRUCTURED_MAX_CHARS:,})"
    if spent_chars + len(value) > budgets.PARSE_HEADERS_TOTAL_CHARS:
        return (f"the message's headers already used the {budgets.PARSE_HEADERS_TOTAL_CHARS:,} characters "
                "one message may have read")
    return None
