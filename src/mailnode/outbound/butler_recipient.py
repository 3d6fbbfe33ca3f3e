"""Who a Butler's reply goes to: the parent delivery's envelope sender, or a stable refusal. Pure.

Seed 003 "Who a Butler's reply goes to"; spec/butler.md §5.3 and Part A §9. A ``draft`` node names no
recipient: the one recipient is the triggering delivery's return path (``event.return_path``, the SMTP
reverse path), never the ``From:`` or ``Reply-To:`` header, which are content the sender chose. When no
safe recipient exists the run ends ``failed`` with one of these codes and no draft is written:

- ``E_BUTLER_NO_PARENT_DELIVERY``: the run was not started by a delivery;
- ``E_BUTLER_PARENT_HAS_NO_RETURN_PATH``: the delivery has no message id, or a null or empty return
  path (a bounce, ``MAIL FROM:<>``; RFC 3834 §2 forbids answering it), or the classifier says so;
- ``E_BUTLER_REPLY_WOULD_LOOP``: the return path is the delivered-to address (or the trigger carries
  none to compare), or the classifier found it is one of the mailbox's own addresses;
- ``E_BUTLER_REPLY_REFUSED``: any other ``event.reply_refusal`` (a list, an auto-reply, ...), named
  in ``detail.reason``.

An author avoids all four by guarding on ``event.reply_refusal == null`` before drafting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mailnode.errors import MailnodeError

#: The trigger event whose runs have a parent delivery.
DELIVERY_EVENT = "mail.received"
#: ``reply_refusal`` tokens that mean "there is no return path" and "it is our own address".
_NO_RETURN_PATH_TOKENS = frozenset({"null_sender"})
_LOOP_TOKENS = frozenset({"own_address"})

_FIX = ("Guard the draft node on the delivery: {\"type\": \"guard\", \"when\": \"event.reply_refusal == null\", ...} "
        "(docs/butlers.md, the acknowledgement example).")


class ReplyRefused(MailnodeError):
    """No safe recipient for a Butler's reply; ``code`` is one of the module's four codes."""


def _refuse(code: str, what: str, why: str, **detail: Any) -> ReplyRefused:
    return ReplyRefused(code=code, what=what, why=why, fix=_FIX, status=422, detail=detail)


def reply_recipient(trigger_event: str, facts: Mapping[str, Any]) -> str:
    """The address a Butler's reply is sent to: the parent delivery's return path.

    ``facts`` is the run's ``event.*`` set. Raises ``ReplyRefused`` with the codes in the module
    docstring, checked in that order.
    """
    if trigger_event != DELIVERY_EVENT:
        raise _refuse("E_BUTLER_NO_PARENT_DELIVERY", f"A {trigger_event} run has no delivery to reply to.",
                      "A reply goes to the envelope sender of the delivery that started the run.",
                      trigger_event=trigger_event)
    return_path = str(facts.get("return_path") or "").strip()
    refusal = facts.get("reply_refusal")
    if not facts.get("message_id") or return_path in ("", "<>") or refusal in _NO_RETURN_PATH_TOKENS:
        raise _refuse("E_BUTLER_PARENT_HAS_NO_RETURN_PATH", "The delivery has no return path to reply to.",
                      "A null reverse path (a bounce) must not be answered automatically (RFC 3834 §2), "
                      "and From: or Reply-To: are never used instead.", message_id=facts.get("message_id"))
    mailbox_address = str(facts.get("mailbox_address") or "").strip().lower()
    if not mailbox_address or return_path.lower() == mailbox_address or refusal in _LOOP_TOKENS:
        raise _refuse("E_BUTLER_REPLY_WOULD_LOOP", f"The return path {return_path} is this mailbox's own address.",
                      "A reply to the mailbox's own address would be delivered back to it and trigger the Butler again "
                      "(RFC 3834 §2).", return_path=return_path, mailbox_address=mailbox_address or None)
    if refusal is not None:
        raise _refuse("E_BUTLER_REPLY_REFUSED", f"An automatic reply to this delivery is refused: {refusal}.",
                      "The inbound classifier found the message automated or not addressed to the mailbox "
                      "(RFC 3834, RFC 5230).", reason=refusal)
    return return_path
