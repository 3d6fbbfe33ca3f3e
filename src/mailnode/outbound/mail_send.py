"""Turn an application's mail request into a ``SealRequest``: whose mailbox the ``from`` address is, and the
decoded attachments (issue 20, "The send").

``POST /api/mail`` and each item of ``POST /api/mail/batch`` call ``seal_request``; the seal then judges
every field (``outbound.seal``, ``outbound.mail_fields``). ``from`` is one mailbox, bare
(``support@example.org``) or with a display name (``Support <support@example.org>``); it names the sending
mailbox by its address, so ``mailbox_id`` may be left out. An address that is no mailbox's, or one of a
mailbox the caller may not send from, answer alike (404 ``E_MAY_NOT_SEND_FROM_ADDRESS``), so a caller
learns nothing of mailboxes it cannot use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, func, select

from mailnode.addresses import parse_recipient
from mailnode.authz import holds
from mailnode.errors import MailnodeError, invalid, not_found
from mailnode.node import Node
from mailnode.outbound.content import decode_attachment
from mailnode.outbound.mail_fields import body_missing
from mailnode.outbound.seal import SealRequest
from mailnode.schema.mail import mailbox_addresses, mailboxes


@dataclass(frozen=True)
class MailAsk:
    """One application mail as the API parsed it (plain data; nothing judged yet).

    Attributes:
        mail_class: ``realtime`` or ``deferrable`` (already checked by the caller).
        key: the idempotency key (already checked).
        mailbox_id: the sending mailbox, or None when ``from`` names it.
        from_: the From as given (``addr`` or ``Name <addr>``), or None.
        to, cc, bcc: recipients, each bare or with a display name.
        subject: the Subject.
        text: the text part, or None; an empty text is no text part.
        html: the HTML part, or None.
        attachments: ``(filename, content_type, base64 content)`` each.
        reply_to: Reply-To addresses.
        headers: custom headers by name.
        tags: labels; metadata: a small string map.
    """

    mail_class: str
    key: str
    subject: str
    mailbox_id: str | None = None
    from_: str | None = None
    to: Sequence[str] = ()
    cc: Sequence[str] = ()
    bcc: Sequence[str] = ()
    text: str | None = None
    html: str | None = None
    attachments: Sequence[tuple[str, str, str]] = ()
    reply_to: Sequence[str] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    tags: Sequence[str] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)


def may_not_send_from(address: str) -> MailnodeError:
    """404 ``E_MAY_NOT_SEND_FROM_ADDRESS``: no mailbox the caller may send from has ``address``."""
    return not_found("E_MAY_NOT_SEND_FROM_ADDRESS", f"You may not send from {address}.",
                     fix="Send from an address of a mailbox you hold send.propose on (GET /api/mailboxes lists "
                         "them), or ask an administrator for it (POST /api/access).", address=address)


@dataclass(frozen=True)
class Sender:
    """The sending mailbox and, when ``from`` was given, its address and display name."""

    mailbox_id: str
    address: str | None = None
    name: str | None = None


def resolve_sender(conn: Connection, *, org_id: str, principal_id: str, from_: str | None,
                   mailbox_id: str | None) -> Sender:
    """The mailbox ``from_`` names (one read and the authority check: two statements), or ``mailbox_id``.

    Raises ``E_MAIL_FROM_MISSING`` (422: neither given), what ``addresses.parse_recipient`` raises for a
    malformed ``from`` (422), ``E_MAY_NOT_SEND_FROM_ADDRESS`` (404: no mailbox of the organisation has the
    address, or the caller lacks ``send.propose`` on it) and ``E_MAIL_FROM_MISMATCH`` (422: ``mailbox_id``
    names another mailbox than ``from``'s).
    """
    if from_ is None:
        if mailbox_id is None:
            raise invalid("E_MAIL_FROM_MISSING", "The mail names no sender.",
                          "Mail goes out from a mailbox the caller may send from.",
                          'Send "from": "Name <address>" (an address of that mailbox) or "mailbox_id".')
        return Sender(mailbox_id)
    address = parse_recipient(from_, "from")
    row = conn.execute(select(mailbox_addresses.c.mailbox_id, mailbox_addresses.c.address)
                       .select_from(mailbox_addresses.join(mailboxes, mailboxes.c.id == mailbox_addresses.c.mailbox_id))
                       .where(mailboxes.c.org_id == org_id,
                              func.lower(mailbox_addresses.c.address) == address.key)).first()
    if row is None or not holds(conn, org_id, principal_id, "send.propose", "mailbox", row.mailbox_id):
        raise may_not_send_from(address.address)
    if mailbox_id is not None and mailbox_id != row.mailbox_id:
        raise invalid("E_MAIL_FROM_MISMATCH", f"{address.address} is not an address of mailbox {mailbox_id}.",
                      "from and mailbox_id name the sender twice; they must name the same mailbox.",
                      "Send from alone, or a mailbox_id whose address from is.",
                      address=address.address, mailbox_id=mailbox_id)
    return Sender(str(row.mailbox_id), str(row.address), address.display_name)


def seal_request(node: Node, *, org_id: str, principal_id: str, ask: MailAsk,
                 senders: dict[tuple[str | None, str | None], Sender] | None = None) -> SealRequest:
    """The ``SealRequest`` for ``ask``: the sender resolved (``resolve_sender``), the attachments decoded.

    ``senders`` remembers the senders already resolved within one request (a batch names the same ``from``
    a hundred times; the seal checks the authority again for each mail, so a remembered sender grants nothing).

    Raises ``E_MAIL_BODY_MISSING`` (422: no text and no HTML), ``resolve_sender``'s codes and
    ``E_ATTACHMENT_MALFORMED`` (422: content that is not base64, naming the attachment's index). The rest is
    judged by the seal.
    """
    text = ask.text or None
    if text is None and ask.html is None:
        raise body_missing()
    sender = None if senders is None else senders.get((ask.from_, ask.mailbox_id))
    if sender is None:
        with node.read() as conn:
            sender = resolve_sender(conn, org_id=org_id, principal_id=principal_id, from_=ask.from_,
                                    mailbox_id=ask.mailbox_id)
        if senders is not None:
            senders[(ask.from_, ask.mailbox_id)] = sender
    attachments = tuple(decode_attachment(i, name, ctype, content, field="content")
                        for i, (name, ctype, content) in enumerate(ask.attachments))
    return SealRequest(mailbox_id=sender.mailbox_id, sender_address=sender.address, from_name=sender.name,
                       to=tuple(ask.to), cc=tuple(ask.cc), bcc=tuple(ask.bcc), subject=ask.subject,
                       body=text or "", text_part=text is not None, html=ask.html, attachments=attachments,
                       reply_to=tuple(ask.reply_to), headers=tuple(ask.headers.items()), tags=tuple(ask.tags),
                       metadata=tuple(ask.metadata.items()), mail_class=ask.mail_class, idempotency_key=ask.key)
