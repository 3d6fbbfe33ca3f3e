"""Doctor checks for transactional mail: the provider breaker, people whose notices may reach nobody, and a
system sender whose own domain is paused.

spec/transactional.md §2 (the breaker's state and the quota reading belong in doctor, since a node out of
mail cannot mail anyone), §4 (an address that exists but is unverified is surfaced: a notice to an
address nobody receives is silence that reads like everything is fine) and §1 (system mail comes from a
system sender, ideally on a domain other than the customers', so that a domain pause does not silence the
notice that reports it: ``system_sender_paused`` says when it would; ``system_sender_missing`` says when
there is no system sender at all).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from mailnode.doctor.findings import Concern, Finding, Item, Severity, not_observed
from mailnode.errors import MailnodeError
from mailnode.governance import pauses, provider_io
from mailnode.governance.provider import BreakerState, breaker_state, quota_alert
from mailnode.node import Node
from mailnode.outbound.realtime import system_sender
from mailnode.schema.directory import users
from mailnode.schema.directory_contacts import contact_addresses


def unverified_contact_addresses(node: Node, org_id: str | None) -> Finding:
    """Users whose notices go to a contact address nobody has verified (or who have none)."""
    name = "unverified_contact_addresses"
    if org_id is None:
        return Finding(name, Severity.REPORT, False, "no organisation: the node is not initialised",
                       "Run mailnode init.")
    with node.read() as conn:
        rows = conn.execute(select(users.c.id, users.c.email, contact_addresses.c.address, contact_addresses.c.verified)
                            .select_from(users.outerjoin(contact_addresses, contact_addresses.c.user_id == users.c.id))
                            .where(users.c.org_id == org_id).order_by(users.c.id)).all()
    unverified = [{"user_id": r.id, "address": r.address} for r in rows if r.address is not None and not r.verified]
    missing = [{"user_id": r.id, "email": r.email} for r in rows if r.address is None]
    data = {"unverified": unverified, "without_contact_address": missing, "users": len(rows)}
    # Each person is an item: a person sees their own line, an administrator everyone's (GET /api/users).
    items = tuple([Item(Concern("user", u["user_id"]), f"{u['address']} ({u['user_id']}) is not verified", u,
                        "unverified") for u in unverified]
                  + [Item(Concern("user", u["user_id"]), f"{u['email']} ({u['user_id']}) has set no contact address",
                          u, "without_contact_address") for u in missing])
    if unverified:
        return Finding(name, Severity.DEGRADED, False,
                       f"{len(unverified)} user(s) get notices at an address nobody verified; they may be told nothing",
                       "Each of them verifies it: POST /api/me/contact-email, then POST /api/me/contact-email/verify.",
                       data, items=items, lead="notices may reach nobody: ")
    return Finding(name, Severity.REPORT, True,
                   f"every contact address of {len(rows) - len(missing)} user(s) is verified; "
                   f"{len(missing)} user(s) have set none", data=data, items=items)


def provider_breaker(node: Node, org_id: str | None) -> Finding:
    """The provider breaker of every transport that has answered, and the day's quota reading."""
    name = "provider_breaker"
    now = node.clock.now()
    limits = provider_io.limits_of(node.settings)
    with node.read() as conn:
        statuses = provider_io.read_all(conn)
    data = {"providers": [provider_io.to_json(s, now, limits) for s in statuses]}
    if not statuses:
        return not_observed(name, "no transport has answered yet, so there is no provider reading", data=data)
    shut = [s for s in statuses if breaker_state(s, now) is BreakerState.SHUT]
    if shut:
        s = shut[0]
        return Finding(name, Severity.DEGRADED, False,
                       f"the {s.transport} provider is paused ({s.pause_kind.value if s.pause_kind else 'unknown'}, "
                       f"{s.pause_error}) until {s.unavailable_until}; "
                       "deferrable mail waits, realtime mail answers 503",
                       "A quota reopens by itself; a systemic pause needs the key or domain fixed "
                       "(GET /api/provider-status).", data)
    if any(quota_alert(s, now, limits) for s in statuses):
        return Finding(name, Severity.DEGRADED, False, "the day's provider quota reading is above the alert percent",
                       "Expect realtime mail to stop at the reserve; raise the plan or spread the sending.", data)
    return Finding(name, Severity.REPORT, True, "the provider takes mail", data=data)


SYSTEM_SENDER_MISSING = "system_sender_missing"
SYSTEM_SENDER_PAUSED = "system_sender_paused"


def system_sender_missing_finding(sender: str | None, sender_error: MailnodeError | None) -> Finding:
    """Whether the node has a system sender at all (pure; spec/transactional.md §1).

    ``sender`` is the system sender's address, or None with ``sender_error`` (``E_SYSTEM_SENDER_MISSING``)
    when there is none. Degraded when there is none: notices and verification codes cannot be sealed;
    the fix is the error's own (``MAILNODE_SYSTEM_SENDER``).
    """
    name = SYSTEM_SENDER_MISSING
    if sender is not None:
        return Finding(name, Severity.DEGRADED, True, f"the system sender is {sender}, a mailbox address",
                       data={"system_sender": sender})
    what = sender_error.what if sender_error is not None else "There is no system sender."
    fix = sender_error.fix if sender_error is not None else "Set MAILNODE_SYSTEM_SENDER to an address of a mailbox."
    return Finding(name, Severity.DEGRADED, False,
                   f"{what} Notices and verification codes cannot be sealed at all.", fix,
                   {"system_sender": None, "code": sender_error.code if sender_error is not None else None})


def system_sender_pause_finding(sender: str | None, in_force: Sequence[dict[str, Any]]) -> Finding:
    """Whether the system sender's own domain is paused (pure).

    ``sender`` is the system sender's address, or None when there is none (then this is *not observed*:
    there is no domain to compare, and ``system_sender_missing`` is the finding that fails);
    ``in_force`` is ``governance.pauses.in_force``'s list (``pause_id``, ``domain``, ``reason``,
    ``age_seconds`` ...). The domain is the address's part after ``@``, lower-cased, as the seal's pause
    gate reads it. Degraded when a pause in force names it: every notice, the one reporting that pause
    included, and every verification code would be withheld.
    """
    name = SYSTEM_SENDER_PAUSED
    if sender is None:
        return not_observed(name, f"there is no system sender (see {SYSTEM_SENDER_MISSING}), so no domain of "
                            "its to compare with the pauses in force", data={"system_sender": None})
    domain = sender.rpartition("@")[2].lower()
    data: dict[str, Any] = {"system_sender": sender, "domain": domain}
    paused = next((p for p in in_force if str(p.get("domain", "")).lower() == domain), None)
    if paused is None:
        return Finding(name, Severity.DEGRADED, True,
                       f"the system sender {sender} is on {domain}, which is not paused", data=data)
    return Finding(name, Severity.DEGRADED, False,
                   f"the system sender {sender} is on {domain}, which is paused ({paused.get('reason')}): every "
                   "notice, the one telling administrators of this pause included, and every verification code "
                   "is withheld at the seal, so people are told nothing",
                   "Set MAILNODE_SYSTEM_SENDER to an address of a mailbox on a domain that is not paused "
                   "(GET /api/mailboxes lists them) and restart, or lift the pause: "
                   f"POST /api/domain-pauses/{paused.get('pause_id')}/lift.",
                   {**data, "pause_id": paused.get("pause_id"), "reason": paused.get("reason")})


def _system_sender(node: Node, org_id: str) -> tuple[str | None, MailnodeError | None]:
    """The system sender's address, or None and the ``MailnodeError`` that says why there is none."""
    with node.read() as conn:
        try:
            return system_sender(conn, org_id, node.settings).address, None
        except MailnodeError as exc:
            # E_SYSTEM_SENDER_MISSING: reported as system_sender_missing, with the error's own fix.
            return None, exc


def system_sender_missing(node: Node, org_id: str | None) -> Finding:
    """Whether there is a system sender to seal notices from (``system_sender_missing_finding``)."""
    if org_id is None:
        return Finding(SYSTEM_SENDER_MISSING, Severity.REPORT, False, "no organisation: the node is not initialised",
                       "Run mailnode init.")
    return system_sender_missing_finding(*_system_sender(node, org_id))


def system_sender_paused(node: Node, org_id: str | None) -> Finding:
    """The system sender's domain against the domain pauses in force (``system_sender_pause_finding``)."""
    if org_id is None:
        return Finding(SYSTEM_SENDER_PAUSED, Severity.REPORT, False, "no organisation: the node is not initialised",
                       "Run mailnode init.")
    sender, _ = _system_sender(node, org_id)
    with node.read() as conn:
        in_force = pauses.in_force(conn, org_id=org_id, now=node.clock.now())
    return system_sender_pause_finding(sender, in_force)


#: The transactional-mail checks in report order; ``doctor.checks.CHECKS`` includes them.
NOTIFY_CHECKS = {
    "provider_breaker": provider_breaker,
    "unverified_contact_addresses": unverified_contact_addresses,
    SYSTEM_SENDER_MISSING: system_sender_missing,
    SYSTEM_SENDER_PAUSED: system_sender_paused,
}
