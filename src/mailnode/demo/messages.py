"""The demo's messages: real corpus files shipped in ``demo/data/``, and what the node should make of each.

The files are byte-for-byte copies (``data/README.md`` names each one's source and licence). Two things
happen to them on the way out, and only on the way out: line endings become CRLF, because SMTP carries
lines that way (RFC 5321 §2.3.8) and the listener refuses bare LF; and the correspondent's second message
gets ``In-Reply-To`` and ``References`` naming the node's acknowledgement, because the corpus holds no
pair of messages that thread and threading is what that step shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

#: The mailbox keys the demo creates (``front`` is ``alice@example.com``, ``billing`` is ``billing@...``).
FRONT = "front"
BILLING = "billing"

#: The stop reasons of the two demo Butlers (``programs.py``), which the demo expects on their runs.
ACK_QUIET_REASON = "an automatic reply is refused for this message"
TRIAGE_LEAVE_REASON = "written by a person: left in the queue for the team"


@dataclass(frozen=True)
class RunExpectation:
    """What one Butler's run over a message should end as: its state, reason and effect rows.

    ``effects`` is the list of ``(node_id, outcome, reason)`` the run's effect rows must equal.
    """

    state: str
    reason: str | None
    effects: tuple[tuple[str, str, str | None], ...]


@dataclass(frozen=True)
class DemoMessage:
    """One message of the demo: its file, its SMTP envelope and the outcome the node should reach.

    ``mailbox`` is ``FRONT`` or ``BILLING``. ``automated`` and ``reply_refusal`` are the classifier's
    reason tokens (or None); ``parse_error`` says whether a parse error must be recorded. ``ack`` and
    ``triage`` are the expected runs of the two Butlers, None when no run may exist (no Butler listens
    on the billing mailbox).
    """

    key: str
    file: str
    what: str
    mail_from: str
    mailbox: str
    automated: str | None
    reply_refusal: str | None
    parse_error: bool
    ack: RunExpectation | None
    triage: RunExpectation | None


_PROPOSED = RunExpectation("awaiting_release", "butler_release_required",
                           (("reply", "ok", None), ("propose", "ok", "butler_release_required")))
_QUIET = RunExpectation("stopped", ACK_QUIET_REASON, ())
_LEFT = RunExpectation("stopped", TRIAGE_LEAVE_REASON, ())
_CLEARED = RunExpectation("finished", None, (("take", "ok", None), ("close", "ok", None)))

#: The first five messages, sent in this order before anything is released.
ARRIVALS: tuple[DemoMessage, ...] = (
    DemoMessage("question", "question.eml", "a person's question", "bob@example.net", FRONT,
                None, None, False, _PROPOSED, _LEFT),
    DemoMessage("auto-reply", "auto-reply.eml", "an out-of-office auto-reply", "bob@example.net", FRONT,
                "auto_submitted", "auto_submitted", False, _QUIET, _CLEARED),
    DemoMessage("bounce", "bounce.eml", "a Postfix bounce (DSN)", "", FRONT,
                "null_sender", "null_sender", False, _QUIET, _CLEARED),
    DemoMessage("list", "list.eml", "a mailing-list newsletter", "news@shop.example.net", FRONT,
                "list_header", "list_header", False, _QUIET, _CLEARED),
    DemoMessage("malformed", "malformed.eml", "a malformed message (To: (c):)", "sender@example.com", BILLING,
                None, "not_addressed", True, None, None),
)

#: The correspondent's answer to the node's acknowledgement, sent after the release.
REPLY = DemoMessage("reply", "reply.eml", "the correspondent's reply", "bob@example.net", FRONT,
                    None, None, False, _PROPOSED, _LEFT)

#: Every message, in the order they are sent.
ALL: tuple[DemoMessage, ...] = (*ARRIVALS, REPLY)


def read(message: DemoMessage) -> bytes:
    """The file's exact bytes, from the installed package."""
    return resources.files("mailnode.demo").joinpath("data", message.file).read_bytes()


def for_smtp(raw: bytes) -> bytes:
    """``raw`` with every line ending CRLF (RFC 5321 §2.3.8), as it must travel in SMTP DATA."""
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def threaded(raw: bytes, parent_message_id: str) -> bytes:
    """``raw`` with ``In-Reply-To`` and ``References`` naming ``parent_message_id`` (``<...>``) put first.

    Raises ``ValueError`` for an id that is not one ``<...>`` token, so no header can be injected.
    """
    token = parent_message_id.strip()
    if not (token.startswith("<") and token.endswith(">")) or any(c in token for c in "\r\n "):
        raise ValueError(f"not a Message-ID token: {parent_message_id!r}")
    headers = f"In-Reply-To: {token}\r\nReferences: {token}\r\n".encode("ascii")
    return headers + for_smtp(raw)
