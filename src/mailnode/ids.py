"""Typed-prefix ULID identifiers (``<prefix>_<26 Crockford base32>``), minted and validated here.

The prefixes are a closed registry (``PREFIXES``, spec/outbound.md §8.4 plus mailnode's own). An id
is validated where it enters (a path parameter, a request body, a CLI argument); a malformed or
wrong-kind id raises ``E_ID_MALFORMED`` (422). Butler run ids are ``<btv id>-<trigger key>`` and are
not ULIDs.
"""

from __future__ import annotations

import re

from ulid import ULID

from mailnode.errors import invalid

#: Every prefix mailnode mints, with the entity it names.
PREFIXES: dict[str, str] = {
    "org": "organisation",
    "usr": "user",
    "tm": "team",
    "tmm": "team membership",
    "tok": "API token",
    "app": "application",
    "mbx": "mailbox",
    "mba": "mailbox address",
    "dom": "domain",
    "rt": "relationship tuple",
    "aud": "audit entry",
    "rcpt": "ingress receipt",
    "msg": "message",
    "cnv": "conversation",
    "cas": "case",
    "nte": "case note",
    "dft": "draft",
    "snd": "send manifest",
    "srp": "send recipient",
    "sev": "send recipient event",
    "sup": "suppression",
    "pol": "policy",
    "plv": "policy version",
    "pst": "policy stage",
    "apr": "approval",
    "ast": "approval stage",
    "apd": "approval decision",
    "dpz": "domain pause",
    "hld": "legal hold",
    "hlf": "legal hold lift request",
    "sgr": "supervised grant",
    "ntf": "notice",
    "btl": "Butler",
    "btv": "Butler version",
    "bpz": "Butler pause",
    "bre": "Butler run effect",
    "brp": "Butler replay",
    "vfc": "verification code",
    "log": "log entry",
    "wss": "web session",
    "wsa": "sign-in attempt",
    "whe": "webhook endpoint",
    "whd": "webhook delivery",
    "wha": "webhook attempt",
    "evt": "webhook event",
}

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: The 26 Crockford base32 characters of a ULID (its spec: no I, L, O or U), as a regular expression.
ULID_PATTERN = "[0-9A-HJKMNP-TV-Z]{26}"
_ID_RE = re.compile(rf"^([a-z]{{2,4}})_({ULID_PATTERN})$")


def id_pattern(prefix: str) -> str:
    """The anchored regular expression of a ``prefix`` id (``^msg_[0-9A-HJKMNP-TV-Z]{26}$``), as the API's
    document states it; ``prefix`` must be in ``PREFIXES`` (a typo is a programming error: ``KeyError``)."""
    if prefix not in PREFIXES:
        raise KeyError(f"unknown id prefix {prefix!r}")
    return f"^{prefix}_{ULID_PATTERN}$"


#: Every prefix's pattern, derived once from ``PREFIXES``.
ID_PATTERNS: dict[str, str] = {p: id_pattern(p) for p in PREFIXES}


def new_id(prefix: str) -> str:
    """Mint ``<prefix>_<ULID>``; ``prefix`` must be in ``PREFIXES`` (a typo is a programming error)."""
    if prefix not in PREFIXES:
        raise KeyError(f"unknown id prefix {prefix!r}")
    return f"{prefix}_{ULID()}"


def sibling_id(prefix: str, of: str) -> str:
    """``<prefix>_`` followed by the ULID of the id ``of`` (``rcpt_X`` gives ``msg_X``): an entity made once
    from another carries its time and order. ``prefix`` must be in ``PREFIXES``; ``of`` must be a well-formed
    id (either mistake is a programming error: ``KeyError``, ``ValueError``).

    A message's id is its receipt's (``ingress.materialise``), so messages sort in the order they arrived
    even when concurrent materialisations finish in another order; the queue lists newest first by id.
    """
    if prefix not in PREFIXES:
        raise KeyError(f"unknown id prefix {prefix!r}")
    m = _ID_RE.match(of)
    if not m or m.group(1) not in PREFIXES:
        raise ValueError(f"{of!r} is not an id")
    return f"{prefix}_{m.group(2)}"


def is_id(value: object, prefix: str | None = None) -> bool:
    """True when ``value`` is a well-formed id (of ``prefix`` when given)."""
    if not isinstance(value, str):
        return False
    m = _ID_RE.match(value)
    if not m or m.group(1) not in PREFIXES:
        return False
    return prefix is None or m.group(1) == prefix


def parse_id(value: object, prefix: str, field: str = "id") -> str:
    """Return ``value`` when it is a well-formed ``prefix`` id, else raise ``E_ID_MALFORMED`` (422)."""
    if is_id(value, prefix):
        return str(value)
    entity = PREFIXES.get(prefix, prefix)
    raise invalid(
        "E_ID_MALFORMED",
        f"{field} {value!r} is not a {entity} id.",
        f"A {entity} id looks like {prefix}_ followed by 26 Crockford base32 characters.",
        "Copy the id from the listing that returned it (for example GET /api/mailboxes).",
        field=field,
        value=str(value)[:100],
        expected_prefix=prefix,
    )


def prefix_of(value: str) -> str | None:
    """The prefix of a well-formed id, else None."""
    m = _ID_RE.match(value) if isinstance(value, str) else None
    return m.group(1) if m else None
