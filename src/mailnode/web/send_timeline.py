"""A send's timeline in words, from the facts the send page reads (pure: no database, no clock).

The facts are the send as ``outbound.reads.get_send`` shapes it (recipients and their events) and the audit
entries about it (``outbound.reads.send_audit``). Each step says what happened, when and who did it, in the
node's words: ``sealed``, ``awaiting`` + reason, ``released``, ``handed_over`` per recipient, delivery and
provider events with the remote server's words, ``withheld`` + reason. Nothing is invented: a step the
records do not hold is not shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mailnode.vocabulary.send_states import words_for


@dataclass(frozen=True)
class Step:
    """One line of the timeline.

    Attributes:
        at: ISO 8601 UTC.
        kind: the node's word for the step (``sealed``, ``awaiting``, ``released``, ``handed_over``, an event
            type such as ``bounced``, ``withheld`` ...), also the CSS hook.
        title: the step in a few words.
        words: the sentence under it (the reason in words, the remote server's words), or "".
        actor: who did it (a person's name, ``Butler btl_...``, ``the node``), or "".
        recipient: the recipient address it concerns, or "".
    """

    at: str
    kind: str
    title: str
    words: str = ""
    actor: str = ""
    recipient: str = ""


def _iso(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value or "")


def actor_words(actor_id: str | None, actor_kind: str, names: dict[str, str]) -> str:
    """Who acted, in words: a person's name, ``Butler <id>``, ``application <id>``, or ``the node``. Pure."""
    if actor_id is None:
        return "the node"
    if actor_id in names:
        return names[actor_id]
    kind = {"user": "person", "butler": "Butler", "application": "application"}.get(actor_kind, actor_kind)
    return f"{kind} {actor_id}"


def _gate_words(state: str | None, reason: str | None) -> str:
    return words_for(state, reason) if state else ""


def _audit_step(e: dict[str, Any], names: dict[str, str]) -> Step | None:
    """The step an audit entry records, or None for one the timeline does not show."""
    d = e["detail"]
    at, who = _iso(e["at"]), actor_words(e["actor_id"], e["actor_kind"], names)
    action = e["action"]
    if action == "send.sealed":
        state, reason = d.get("state"), d.get("state_reason")
        title = f"Sealed: {state}" + (f" ({reason})" if reason else "")
        words = _gate_words(state, reason)
        if state == "awaiting":
            words = f"Waited on the {d.get('gate', 'gate')} gate: {words}"
        return Step(at, "sealed", title, words, who)
    if action == "send.released":
        frm = d.get("from") or d.get("reason") or ""
        return Step(at, "released", "Released" + (f" from {frm}" if frm else ""),
                    f"Now {d['to']}." if d.get("to") else "", who)
    if action == "send.rate_limited":
        reason = d.get("reason")
        figure = f"{d.get('breaker')} breaker: {d.get('observed')} of limit {d.get('limit')} in " \
                 f"{d.get('window_seconds')} s" + (f"; asked again at {d['recheck_at']}" if d.get("recheck_at") else "")
        return Step(at, "awaiting", f"awaiting ({reason})", f"{_gate_words('awaiting', reason)} {figure}.", who)
    if action == "send.provider_unavailable":
        return Step(at, "awaiting", "awaiting (provider_unavailable)", str(d.get("evidence") or ""), who)
    if action == "send.withheld":
        reason = d.get("reason")
        words = _gate_words("withheld", reason)
        if d.get("evidence"):
            words = f"{words} {d['evidence']}".strip()
        return Step(at, "withheld", f"withheld ({reason})" if reason else "withheld", words, who)
    if "attempts" in d and "recipients" in d:
        # A dispatch pass's result (``send.<state>``): the attempt, the recipients by state, the last error.
        state = action.removeprefix("send.")
        counts = ", ".join(f"{n} {k}" for k, n in sorted((d.get("recipients") or {}).items()))
        words = f"Attempt {d['attempts']}; recipients: {counts}." + (f" {d['last_error']}" if d.get("last_error")
                                                                     else "")
        return Step(at, state, f"Dispatch: {state}", words, who)
    if action == "send.cancelled":
        return Step(at, "cancelled", "Cancelled", f"It was {d.get('from')}" +
                    (f" ({d['from_reason']})" if d.get("from_reason") else "") + " and had not left.", who)
    if action == "send.retried":
        return Step(at, "retried", "Retried (retry-effect)", f"Back to held from {d.get('from')} ({d.get('basis')}).",
                    who)
    if action == "send.resent":
        return Step(at, "resent", "Sealed as a resend (resend-may-duplicate)",
                    f"Resend of {d.get('resend_of')}: {d.get('reason', '')}", who)
    if action == "send.claim_recovered":
        return Step(at, "claim_recovered", "Claim recovered", "A lapsed hand-over claim was taken back by the "
                    "sweeper.", who)
    # Any other entry about the send: its action as recorded, and whatever reason or evidence it carries.
    said = " ".join(str(d[k]) for k in ("reason", "evidence", "last_error", "text") if d.get(k))
    return Step(at, action.removeprefix("send."), action, said, who)


def _event_words(e: dict[str, Any]) -> str:
    detail = e.get("detail") if isinstance(e.get("detail"), dict) else {}
    parts = []
    if e.get("status"):
        parts.append(f"status {e['status']}")
    if e.get("bounce_type"):
        parts.append(f"{e['bounce_type']} bounce")
    said = (detail or {}).get("diagnostic")
    if said:
        parts.append(f"the remote server said: “{said}”")
    parts.append(f"source {e.get('source')}")
    return "; ".join(parts) + "."


def timeline(send: dict[str, Any], audit: list[dict[str, Any]], names: dict[str, str]) -> list[Step]:
    """The send's steps, oldest first (ties keep the order: audit, hand-overs, events). Pure.

    ``send`` is ``get_send``'s shape; ``audit`` is ``send_audit``'s; ``names`` maps person ids to names.
    A send sealed before its audit entry existed still shows ``sealed`` from ``sealed_at``.
    """
    steps: list[Step] = []
    for e in audit:
        step = _audit_step(e, names)
        if step is not None:
            steps.append(step)
    if not any(s.kind == "sealed" for s in steps) and send.get("sealed_at"):
        steps.insert(0, Step(send["sealed_at"], "sealed", "Sealed", ""))
    for r in send.get("recipients", []):
        if r["submission_state"] == "handed_over" and r.get("submission_state_at"):
            ids = [f"transport id {r['transport_message_id']}" if r.get("transport_message_id") else "",
                   f"provider id {r['provider_message_id']}" if r.get("provider_message_id") else ""]
            steps.append(Step(r["submission_state_at"], "handed_over", f"handed_over to the transport ({r['kind']})",
                              "; ".join(i for i in ids if i), recipient=r["address"]))
        elif r["submission_state"] in ("refused", "suppressed", "outcome_unknown") and r.get("submission_state_at"):
            why = r.get("suppression_reason") or r.get("last_error") or ""
            steps.append(Step(r["submission_state_at"], r["submission_state"], r["submission_state"], str(why),
                              recipient=r["address"]))
    for e in send.get("events", []):
        steps.append(Step(e["received_at"] or "", e["event_type"], e["event_type"], _event_words(e),
                          recipient=e.get("recipient") or ""))
    return sorted(steps, key=lambda s: s.at)
