"""Doctor checks for transactional mail: the provider breaker, and people whose notices may reach nobody.

spec/transactional.md §2 (the breaker's state and the quota reading belong in doctor, since a node out of
mail cannot mail anyone) and §4 (an address that exists but is unverified is surfaced: a notice to an
address nobody receives is silence that reads like everything is fine).
"""

from __future__ import annotations

from sqlalchemy import select

from mailnode.directory.tables import users
from mailnode.doctor.findings import Finding, Severity
from mailnode.node import Node
from mailnode.notify import provider_io
from mailnode.notify.provider import BreakerState, breaker_state, quota_alert
from mailnode.notify.tables import contact_addresses


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
    if unverified:
        return Finding(name, Severity.DEGRADED, False,
                       f"{len(unverified)} user(s) get notices at an address nobody verified; they may be told nothing",
                       "Each of them verifies it: POST /api/me/contact-email, then POST /api/me/contact-email/verify.",
                       data)
    return Finding(name, Severity.REPORT, True,
                   f"every contact address of {len(rows) - len(missing)} user(s) is verified; "
                   f"{len(missing)} user(s) have set none", data=data)


def provider_breaker(node: Node, org_id: str | None) -> Finding:
    """The provider breaker of every transport that has answered, and the day's quota reading."""
    name = "provider_breaker"
    now = node.clock.now()
    limits = provider_io.limits_of(node.settings)
    with node.read() as conn:
        statuses = provider_io.read_all(conn)
    data = {"providers": [provider_io.to_json(s, now, limits) for s in statuses]}
    if not statuses:
        return Finding(name, Severity.REPORT, True, "no transport has answered yet: no provider reading", data=data)
    shut = [s for s in statuses if breaker_state(s, now) is BreakerState.SHUT]
    if shut:
        s = shut[0]
        return Finding(name, Severity.DEGRADED, False,
                       f"the {s.transport} provider is paused ({s.pause_kind.value if s.pause_kind else 'unknown'}, "
                       f"{s.pause_error}) until {s.unavailable_until}; deferrable mail waits, realtime mail answers 503",
                       "A quota reopens by itself; a systemic pause needs the key or domain fixed "
                       "(GET /api/provider-status).", data)
    if any(quota_alert(s, now, limits) for s in statuses):
        return Finding(name, Severity.DEGRADED, False, "the day's provider quota reading is above the alert percent",
                       "Expect realtime mail to stop at the reserve; raise the plan or spread the sending.", data)
    return Finding(name, Severity.REPORT, True, "the provider takes mail", data=data)


#: The transactional-mail checks in report order; ``doctor.checks.CHECKS`` includes them.
NOTIFY_CHECKS = {
    "provider_breaker": provider_breaker,
    "unverified_contact_addresses": unverified_contact_addresses,
}
