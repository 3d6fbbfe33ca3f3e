"""The words the web pages show for the reading vocabularies: an attachment's danger, why a message is
automated, and why one of our own sends is (its ``Auto-Submitted`` value). The conversation page and the
queue's rows (``templates/queue/_rows.html``) read the same tables. Pure, total over their vocabularies (a
test generated from each checks it); a value never seen fails closed with words that say so."""

from __future__ import annotations

from mailnode.ingress.attachments import Danger
from mailnode.ingress.classify import Reason

#: What an attachment's danger means to the person about to open it. Total over ``Danger``.
DANGER_WORDS: dict[Danger, str] = {
    Danger.EXECUTABLE: "This is a program: opening it runs it on your computer. Open it only if you expected it.",
    Danger.SCRIPT: "This is a script: a double click runs it. Open it only if you expected it.",
    Danger.DISGUISED: "This is a program wearing a document's name. Do not open it.",
}

#: Why a message is automated (or may not be answered automatically), in words. Total over ``Reason``.
AUTOMATED_WORDS: dict[Reason, str] = {
    Reason.NULL_SENDER: "Sent with an empty return path: a machine's notice; a reply reaches nobody.",
    Reason.DELIVERY_REPORT: "A delivery report about mail the node sent.",
    Reason.FEEDBACK_REPORT: "A complaint report from a mailbox provider.",
    Reason.AUTO_SUBMITTED: "Marked Auto-Submitted by its sender: written by a machine.",
    Reason.VACATION_MARKER: "An out-of-office or auto-reply.",
    Reason.PRECEDENCE: "Marked as bulk or list mail (Precedence).",
    Reason.LIST_HEADER: "Mail from a mailing list (it carries List- headers).",
    Reason.AUTO_RESPONSE_SUPPRESS: "Its sender asked for no automatic replies.",
    Reason.SYSTEM_SENDER: "Sent by a mail system address (such as MAILER-DAEMON).",
    Reason.OWN_ADDRESS: "Sent from one of this mailbox's own addresses.",
    Reason.NOT_ADDRESSED: "This mailbox is not named in its To, Cc or Bcc.",
}


#: Why one of our own sends is automated: its ``Auto-Submitted`` value, in words. Total over
#: ``outbound.render.AUTO_SUBMITTED_VALUES`` (a test checks it).
SEND_AUTOMATED_WORDS: dict[str, str] = {
    "auto-replied": "An automatic answer (a Butler's reply), marked Auto-Submitted: auto-replied.",
    "auto-generated": "A notice the node wrote by itself, marked Auto-Submitted: auto-generated.",
}


def danger_words(value: str | None) -> str | None:
    """The warning for an attachment's ``danger`` (None when it has none); unknown values fail closed."""
    if value is None:
        return None
    try:
        return DANGER_WORDS[Danger(value)]
    except ValueError:
        return f"mailnode flagged this attachment ({value!r}) for a reason it does not know; do not open it."


def automated_words(value: str | None) -> str | None:
    """Why a message is automated, in words (None when it is not); unknown values say so."""
    if value is None:
        return None
    try:
        return AUTOMATED_WORDS[Reason(value)]
    except ValueError:
        return f"Marked automated for a reason mailnode does not know ({value!r})."


def send_automated_words(value: str | None) -> str | None:
    """Why one of our sends is automated (its ``Auto-Submitted`` value), in words (None when it is not);
    unknown values say so."""
    if value is None:
        return None
    found = SEND_AUTOMATED_WORDS.get(value)
    if found is None:
        return f"Marked automated for a reason mailnode does not know ({value!r})."
    return found
