"""Recipient validation and normalisation (syntax only, no network), and the header-injection guard.

Every address that will appear in a header or an SMTP envelope passes through ``normalise_address``
before anything is stored. Validation is email-validator's syntax check (RFC 5322 §3.4.1 addr-spec,
RFC 5321 §4.1.2 limits as the library applies them) with deliverability checks off, so nothing here
touches DNS. Domains come back IDNA-encoded (A-labels) and lower-cased (spec/outbound.md Part A 15);
the local part is kept as written, since RFC 5321 §2.4 lets the receiving host give it meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

import email_validator
from email_validator import EmailNotValidError, validate_email

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

#: Characters that end a header line (RFC 5322 §2.2: a field body may not contain CR or LF except as
#: folding, which mailnode does itself). NUL is refused too: no header may carry it (RFC 5322 §3.2.3).
_LINE_BREAKERS = ("\r", "\n", "\x00")


@dataclass(frozen=True)
class NormalisedAddress:
    """A validated recipient.

    Attributes:
        address: ``local@domain`` with the domain in A-labels, lower-cased; what headers and envelopes use.
        local_part: the local part as written (case kept).
        domain: the A-label, lower-cased domain.
        key: ``address`` lower-cased; two recipients with the same key are the same recipient row.
    """

    address: str
    local_part: str
    domain: str

    @property
    def key(self) -> str:
        """The de-duplication key: the whole address lower-cased."""
        return self.address.lower()


def reject_header_injection(field: str, value: str) -> str:
    """Return ``value`` unchanged when it holds no CR, LF or NUL; else raise ``E_HEADER_INJECTION`` (422).

    ``field`` names the header (``Subject``, ``To`` ...) for the error. Applied to every value that will
    become a header, so a caller cannot smuggle a second header or a body in (RFC 5322 §2.2).
    """
    if any(ch in value for ch in _LINE_BREAKERS):
        raise invalid(
            "E_HEADER_INJECTION",
            f"The {field} value contains a line break.",
            "A header value may not contain CR, LF or NUL: it would start another header or the body.",
            f"Remove the line breaks from {field} and send again.",
            field=field,
            value=value[:200],
        )
    return value


def normalise_address(value: str, field: str = "to") -> NormalisedAddress:
    """Validate one bare address (no display name) and return it normalised.

    Args:
        value: the address as given, e.g. ``"Ann@Bücher.Example"``.
        field: where it came from (``to``, ``cc``, ``bcc``, ``from``), named in errors.

    Returns:
        ``NormalisedAddress`` with the domain IDNA-encoded and lower-cased.

    Raises:
        ``E_HEADER_INJECTION`` (422) when the value holds CR, LF or NUL (checked first, so an injection
        attempt is reported as such); ``E_ADDRESS_MALFORMED`` (422) naming the address otherwise,
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


def _malformed(value: str, field: str, why: str) -> MailnodeError:
    return invalid(
        "E_ADDRESS_MALFORMED",
        f"The {field} address {value!r} is not a valid email address.",
        why,
        f"Correct the {field} address (a bare local@domain, no display name) and send again.",
        field=field,
        address=value[:320],
    )
