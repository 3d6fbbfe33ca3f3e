"""The doctor's governance checks: the rate breakers, domain pauses, and whether delivery can be seen at all.

- ``send_breakers``: every reading, tripped or not. Degraded when one is tripped, or when a rate is
  unarmed although the node is blind (``delivery_visibility``'s own predicate); a transport that by
  design reports nothing (``file``) makes it a ``report`` that says so. Never a reassuring 0 %: an
  unarmed rate prints no percentage.
- ``domain_paused``: each pause in force, its reason, its age and the lift route (degraded: mail is not
  leaving and somebody has to know, though nothing is broken).
- ``domain_pause_pending``: undecided pause requests (a report; spec/outbound.md Part A 13).
- ``delivery_visibility``: blind when recipients were handed over more than
  ``budgets.DELIVERY_SILENCE_SECONDS`` ago and no attributed event was ever recorded; *not observed*
  (``findings.not_observed``: report, not ok) for ``file``, which no signal can reach, and while there is
  neither an attributed event nor a hand-over old enough; ok only once an attributed event exists.
- ``delivery_attribution``: unattributed events (``manifest_id`` NULL) with the usual cause in the fix;
  *not observed* while no event was ever recorded (never "every event is attributed" over zero events).

Each check takes ``(node, org_id)`` and returns one ``Finding``; they read, never write.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from mailnode import budgets
from mailnode.doctor.findings import NODE, Concern, Finding, Item, Severity, listed, not_observed
from mailnode.governance import breakers, pauses
from mailnode.node import Node
from mailnode.schema.outbound import send_recipient_events, send_recipients


def _no_org(name: str) -> Finding:
    return Finding(name, Severity.REPORT, False, "no organisation: the node is not initialised", "Run mailnode init.")


def _visibility(node: Node, org_id: str) -> dict[str, Any]:
    """The blindness predicate's facts: hand-overs old enough to have been answered, attributed events ever."""
    cutoff = node.clock.now() - timedelta(seconds=budgets.DELIVERY_SILENCE_SECONDS)
    r = send_recipients.c
    e = send_recipient_events.c
    with node.read() as conn:
        row = conn.execute(select(
            select(func.count()).select_from(send_recipients)
            .where(r.org_id == org_id, r.submission_state == breakers.HANDED_OVER, r.submission_state_at <= cutoff)
            .scalar_subquery().label("old_handovers"),
            select(func.count()).select_from(send_recipient_events)
            .where(e.org_id == org_id, e.manifest_id.is_not(None)).scalar_subquery().label("attributed"),
            select(func.count()).select_from(send_recipient_events)
            .where(e.org_id == org_id, e.manifest_id.is_(None)).scalar_subquery().label("unattributed"),
        )).one()
    signals = breakers.delivery_signals_of(node.settings.transport)
    old, attributed = int(row.old_handovers or 0), int(row.attributed or 0)
    return {"old_handovers": old, "attributed_events": attributed, "unattributed_events": int(row.unattributed or 0),
            "delivery_signals": signals, "transport": node.settings.transport,
            "blind": old > 0 and attributed == 0}


def visibility_finding(v: dict[str, Any]) -> Finding:
    """``delivery_visibility`` from ``_visibility``'s facts (pure).

    ``v``: ``old_handovers`` (recipients handed over more than ``budgets.DELIVERY_SILENCE_SECONDS`` ago),
    ``attributed_events`` (ever), ``delivery_signals`` (``webhook | dsn | none``), ``transport``, ``blind``.
    Not observed (report, not ok) for a transport that reports nothing by design, and while there is
    neither an attributed event nor a hand-over old enough to have been answered; degraded when blind;
    ok only with at least one attributed event.
    """
    name = "delivery_visibility"
    if v["delivery_signals"] == "none":
        return not_observed(name,
                            f"the {v['transport']} transport reports no deliveries by design: no delivery, bounce or "
                            "complaint signal can come, so the bounce and complaint breakers stay unarmed",
                            "To see deliveries, use the smtp transport (DSNs to the VERP address) or resend "
                            "(webhooks): set MAILNODE_TRANSPORT.", v)
    if v["blind"]:
        channel = ("no DSN has come back to the VERP return path" if v["delivery_signals"] == "dsn"
                   else "no provider webhook event has been attributed")
        return Finding(name, Severity.DEGRADED, False,
                       f"blind: {v['old_handovers']} recipients were handed over more than "
                       f"{budgets.DELIVERY_SILENCE_SECONDS // 60} minutes ago and {channel}",
                       "Check that bounces reach this node (the bounce domain's MX points here) or that the provider's "
                       "webhook is subscribed to POST /api/webhooks/resend.", {**v, "observed": True})
    if v["attributed_events"] == 0:
        return not_observed(name,
                            "no delivery event has been attributed to a send yet and no recipient was handed over "
                            f"more than {budgets.DELIVERY_SILENCE_SECONDS // 60} minutes ago, so whether delivery "
                            "signals reach this node is not known yet", data=v)
    return Finding(name, Severity.DEGRADED, True,
                   f"{v['attributed_events']} attributed delivery events; {v['old_handovers']} recipients handed over "
                   "long enough ago to have been answered", data={**v, "observed": True})


def delivery_visibility(node: Node, org_id: str | None) -> Finding:
    """Can this node see what happens to the mail it hands over? (``visibility_finding``)"""
    if org_id is None:
        return _no_org("delivery_visibility")
    return visibility_finding(_visibility(node, org_id))


def attribution_finding(v: dict[str, Any]) -> Finding:
    """``delivery_attribution`` from ``_visibility``'s facts (pure): ``attributed_events`` and
    ``unattributed_events`` (ever). Degraded when any event names no send of this node; not observed
    (report, not ok) when no event was ever recorded; ok only when every recorded event is attributed."""
    name = "delivery_attribution"
    n = v["unattributed_events"]
    if n > 0:
        return Finding(name, Severity.DEGRADED, False,
                       f"{n} delivery events name no send of this node; they are kept and never counted by a breaker",
                       "Usually a delivery report about mail another system sent from the same domain, or a provider "
                       "webhook subscription covering a domain that also sends from elsewhere; narrow the subscription "
                       "or ignore reports for that traffic.", {**v, "observed": True})
    if v["attributed_events"] == 0:
        return not_observed(name, "no delivery event has been recorded, so none could be checked against this "
                            "node's sends", data=v)
    return Finding(name, Severity.DEGRADED, True,
                   f"every one of the {v['attributed_events']} recorded delivery events names one of this node's sends",
                   data={**v, "observed": True})


def delivery_attribution(node: Node, org_id: str | None) -> Finding:
    """Events this node could not tie to one of its sends, never counted by a breaker (``attribution_finding``)."""
    if org_id is None:
        return _no_org("delivery_attribution")
    return attribution_finding(_visibility(node, org_id))


def send_breakers(node: Node, org_id: str | None) -> Finding:
    """Every rate breaker's reading; never a reassuring zero without observations."""
    name = "send_breakers"
    if org_id is None:
        return _no_org(name)
    v = _visibility(node, org_id)
    with node.read() as conn:
        state = breakers.evaluate(conn, org_id=org_id, now=node.clock.now(), delivery_signals=v["delivery_signals"])
    data = {"breakers": [r.to_json() for r in state.readings]}
    # The organisation's breakers gate every mailbox's sends: whoever may see a mailbox sees them (GET /api/breakers).
    gate = Concern("mailboxes")
    lines = "; ".join(r.sentence for r in state.readings)
    tripped = [r for r in state.readings if r.tripped]
    unarmed = [r for r in state.readings if not r.armed]
    if tripped:
        return Finding(name, Severity.DEGRADED, False, lines,
                       "Sends wait until the window clears (GET /api/breakers shows when); find the cause of the "
                       f"{', '.join(r.breaker.value for r in tripped)} before raising a limit.", data, gate)
    if unarmed and v["delivery_signals"] == "none":
        return Finding(name, Severity.REPORT, True,
                       lines + f"; the {v['transport']} transport reports nothing, so the rates cannot arm", data=data,
                       concerns=gate)
    if unarmed and v["blind"]:
        return Finding(name, Severity.DEGRADED, False,
                       lines + "; the node is blind (see delivery_visibility), so these rates cannot fire",
                       "Make delivery signals reach the node (see delivery_visibility's fix).", data, gate)
    return Finding(name, Severity.REPORT, True, lines, data=data, concerns=gate)


def domain_paused(node: Node, org_id: str | None) -> Finding:
    """Each domain pause in force: a human decision currently stopping a customer's mail."""
    name = "domain_paused"
    if org_id is None:
        return _no_org(name)
    with node.read() as conn:
        rows = pauses.in_force(conn, org_id=org_id, now=node.clock.now())
    if not rows:
        return Finding(name, Severity.DEGRADED, True, "no sending domain is paused", concerns=NODE)
    items = [Item(Concern("domain", r["domain"]), f"{r['domain']} paused {r['age_seconds'] // 60} minutes ago: "
                  f"{r['reason']}", r, "pauses", f"POST /api/domain-pauses/{r['pause_id']}/lift") for r in rows]
    return listed(name, Severity.DEGRADED, False, items, concerns=NODE,
                  fix_lead="Mail from these domains is withheld; when the cause is dealt with, one administrator "
                  "lifts it: ")


def domain_pause_pending(node: Node, org_id: str | None) -> Finding:
    """Domain-pause requests nobody has decided yet (the domain keeps sending meanwhile)."""
    name = "domain_pause_pending"
    if org_id is None:
        return _no_org(name)
    with node.read() as conn:
        rows = pauses.pending_requests(conn, org_id=org_id)
    if not rows:
        return Finding(name, Severity.REPORT, True, "no domain-pause request is waiting")
    text = "; ".join(f"{r['domain']} asked by {r['requested_by']} at {r['requested_at']}: {r['reason']}" for r in rows)
    return Finding(name, Severity.REPORT, False, f"{len(rows)} undecided: {text}; the domains keep sending until "
                   "two other administrators approve",
                   "Administrators decide with POST /api/approvals/{id}/decide (GET /api/approvals lists them).",
                   {"requests": rows})


#: The governance checks in report order; ``doctor.checks.CHECKS`` includes them.
GOVERNANCE_CHECKS = {
    "send_breakers": send_breakers,
    "domain_paused": domain_paused,
    "domain_pause_pending": domain_pause_pending,
    "delivery_visibility": delivery_visibility,
    "delivery_attribution": delivery_attribution,
}
