"""The two Butler programs the demo publishes on the front-desk mailbox (documents per docs/butlers.md).

``acknowledge`` drafts and proposes a reply to mail a person wrote, and stops on mail that may not be
answered automatically (``event.reply_refusal`` names why). ``triage`` takes and closes the case of
automated mail (bounces, lists, auto-replies) so it leaves the team's queue, and leaves a person's mail
where it is.
"""

from __future__ import annotations

from typing import Any

from mailnode.demo.messages import ACK_QUIET_REASON, TRIAGE_LEAVE_REASON


def _document(name: str, owner: str, address: str, actions: list[str], entry: str,
              nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "mailnode/v1", "kind": "Butler",
        "metadata": {"name": name, "owner": owner},
        "capabilities": [{"action": a, "resource": f"mailbox:{address}"} for a in actions],
        "trigger": {"event": "mail.received", "mailbox": address},
        "entry": entry, "nodes": nodes,
    }


def acknowledge(address: str) -> dict[str, Any]:
    """The acknowledgement Butler for the mailbox at ``address`` (needs ``send.propose``)."""
    return _document("acknowledge", "team:front-desk", address, ["send.propose"], "may_reply", [
        {"id": "may_reply", "type": "guard", "when": "event.reply_refusal == null",
         "then": "reply", "otherwise": "quiet"},
        {"id": "reply", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "Re: ${event.subject}",
         "body": "Thank you for your message. Somebody from the front desk will answer it within a working day.",
         "inReplyTo": "${event.message_id}", "as": "ack", "next": "propose"},
        {"id": "propose", "type": "mail.send.propose", "draft": "${steps.ack.id}", "next": None},
        {"id": "quiet", "type": "stop", "reason": ACK_QUIET_REASON},
    ])


def triage(address: str) -> dict[str, Any]:
    """The triage Butler for the mailbox at ``address`` (needs ``send.propose``, which claims and closes)."""
    return _document("triage", "team:front-desk", address, ["send.propose"], "is_automated", [
        {"id": "is_automated", "type": "guard", "when": "event.automated != null",
         "then": "take", "otherwise": "leave"},
        {"id": "take", "type": "case.assign", "caseId": "${event.case_id}", "assignee": "${butler.id}",
         "next": "close"},
        {"id": "close", "type": "case.close", "caseId": "${event.case_id}", "next": None},
        {"id": "leave", "type": "stop", "reason": TRIAGE_LEAVE_REASON},
    ])
