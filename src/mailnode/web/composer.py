"""The composer: reply, reply-all, forward and a new message; drafts that save themselves; and, after Send,
what the gates decided in words (issue 16, "The composer").

The composer opens filled in by ``outbound.compose`` (the recipients with their display names, ``Re:`` or
``Fwd:``, the quoted or forwarded original) exactly as ``POST /api/sends`` would fill the blanks. Sending
seals through ``outbound.submit.submit`` (the service behind ``POST /api/sends``) under an idempotency key
minted when the composer opened, so a second press of Send answers the first send. Drafts autosave through
``outbound.drafts``. Send leads to the send's page (``web.sends``). Refusals render their four parts.
"""

from __future__ import annotations

import base64
import secrets
from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from sqlalchemy import select

from mailnode import budgets
from mailnode.errors import invalid
from mailnode.mail import presence
from mailnode.outbound import drafts, submit
from mailnode.outbound.compose import Ask, compose
from mailnode.outbound.seal import SealRequest
from mailnode.schema.mail_messages import messages
from mailnode.schema.outbound import drafts as drafts_table
from mailnode.web.conversation import node_of
from mailnode.web.render import page
from mailnode.web.session import CsrfDep, PersonDep

router = APIRouter(include_in_schema=False)

Mode = Literal["reply", "reply_all", "forward", "new"]
#: The composer's modes and their headings.
MODES: dict[str, str] = {"reply": "Reply", "reply_all": "Reply to all", "forward": "Forward", "new": "New message"}


def split_addresses(value: str) -> list[str]:
    """Recipients typed in one field, split at commas and new lines outside quotes. Pure.

    ``"Doe, Jane" <jane@x.test>, bob@y.test`` gives two recipients; empty pieces are dropped.
    """
    out: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in value:
        if ch == '"':
            quoted = not quoted
        if ch in ",\n;" and not quoted:
            out.append("".join(current))
            current = []
            continue
        current.append(ch)
    out.append("".join(current))
    return [p.strip() for p in out if p.strip()]


def _mode(value: str) -> Mode:
    if value not in MODES:
        raise invalid("E_COMPOSER_MODE_UNKNOWN", f"The composer has no mode {value!r}.",
                      "A composer replies, replies to all, forwards or writes a new message.",
                      "Open it from a conversation's Reply, Reply all or Forward button, or New message.")
    return value  # type: ignore[return-value]


def _preview(request: Request, person: Any, mode: Mode, message_id: str | None, mailbox_id: str | None
             ) -> tuple[SealRequest, str]:
    """The composition ``POST /api/sends`` would fill in for ``mode`` (``compose``), and the original's block
    (the quote of a reply, the forwarded text), which the person's own text goes above."""
    node = node_of(request)
    p = person.principal
    if mode == "new" or message_id is None:
        if mailbox_id is None:
            raise invalid("E_COMPOSER_MAILBOX_MISSING", "A new message needs its mailbox.",
                          "Mail leaves from one of the organisation's mailboxes.",
                          "Open the composer from a mailbox's queue (New message).")
        return SealRequest(mailbox_id=mailbox_id, to=[], cc=[], bcc=[], subject="", body=""), ""
    with node.read() as conn:
        row = conn.execute(select(messages.c.mailbox_id).where(messages.c.id == message_id,
                                                               messages.c.org_id == p.org_id)).first()
    mbx = str(row.mailbox_id) if row is not None else (mailbox_id or "")
    asked = SealRequest(mailbox_id=mbx, to=[], cc=[], bcc=[], subject="", body="",
                        in_reply_to_message_id=message_id if mode != "forward" else None)
    filled = compose(node, org_id=p.org_id, author_id=p.principal_id, ask=Ask(
        request=asked, subject_given=False, reply_all=mode == "reply_all", quote=mode != "forward",
        forward_message_id=message_id if mode == "forward" else None))
    return filled, filled.body


@router.get("/compose", response_class=HTMLResponse)
def composer(request: Request, person: PersonDep, mode: str = "reply", message: str | None = None,
             mailbox: str | None = None, conversation: str | None = None) -> HTMLResponse:
    """The composer for ``mode`` answering or forwarding ``message`` (or a new message from ``mailbox``)."""
    m = _mode(mode)
    filled, original = _preview(request, person, m, message, mailbox)
    draft = None
    if m in ("reply", "reply_all") and message is not None:
        with node_of(request).read() as conn:
            draft = drafts.for_parent(conn, org_id=person.principal.org_id, author_id=person.principal.principal_id,
                                      in_reply_to_message_id=message)
    collision = None
    if conversation:
        node = node_of(request)
        with node.read() as conn:
            collision = presence.read_collision(conn, org_id=person.principal.org_id,
                                                principal_id=person.principal.principal_id,
                                                conversation_id=conversation, at=node.clock.now())
    return page(request, "conversation/composer.html", collision=collision, mode=m, heading=MODES[m], filled=filled,
                original=original, message_id=message, conversation_id=conversation, draft=draft,
                idempotency_key="composer-" + secrets.token_urlsafe(18),
                autosave_seconds=budgets.COMPOSER_AUTOSAVE_SECONDS,
                heartbeat_seconds=budgets.COMPOSER_PRESENCE_HEARTBEAT_SECONDS)


async def _attachments(files: list[UploadFile]) -> tuple[tuple[str, str, str], ...]:
    out = []
    for f in files:
        data = await f.read()
        if not f.filename and not data:
            # An empty file input posts one nameless, empty part: no attachment was chosen.
            continue
        out.append((f.filename or "attachment", f.content_type or "application/octet-stream",
                    base64.b64encode(data).decode("ascii")))
    return tuple(out)


@router.post("/compose")
async def send(request: Request, person: PersonDep, _: CsrfDep,
               mode: Annotated[str, Form()], mailbox_id: Annotated[str, Form()],
               idempotency_key: Annotated[str, Form()], to: Annotated[str, Form()] = "",
               cc: Annotated[str, Form()] = "", bcc: Annotated[str, Form()] = "",
               subject: Annotated[str, Form()] = "", body: Annotated[str, Form()] = "",
               message_id: Annotated[str, Form()] = "", quote: Annotated[str, Form()] = "",
               draft_id: Annotated[str, Form()] = "",
               files: Annotated[list[UploadFile], File()] = []) -> RedirectResponse:  # noqa: B006
    """Seal what the composer holds (``outbound.submit``) and show the send's page; retire its draft."""
    m = _mode(mode)
    node = node_of(request)
    p = person.principal
    c = submit.Composition(
        mailbox_id=mailbox_id, to=tuple(split_addresses(to)), cc=tuple(split_addresses(cc)),
        bcc=tuple(split_addresses(bcc)), subject=subject, body=body,
        in_reply_to_message_id=message_id if m in ("reply", "reply_all") and message_id else None,
        forward_message_id=message_id if m == "forward" and message_id else None,
        quote=m in ("reply", "reply_all") and bool(quote), attachments=await _attachments(files))
    done = submit.submit(node, org_id=p.org_id, author_id=p.principal_id, c=c, idempotency_key=idempotency_key)
    if draft_id:
        with node.begin() as conn:
            # The send was sealed from what the composer held; its draft is done. A draft already gone (a
            # replayed Send) is nothing to retire.
            t = drafts_table.c
            if conn.execute(select(t.id).where(t.id == draft_id, t.org_id == p.org_id,
                                               t.author_id == p.principal_id)).first() is not None:
                drafts.remove(conn, org_id=p.org_id, author_id=p.principal_id, at=node.clock.now(), draft_id=draft_id)
    return RedirectResponse(f"/sends/{done.send['id']}", status_code=303)


@router.post("/compose/draft")
def autosave(request: Request, person: PersonDep, _: CsrfDep, mailbox_id: Annotated[str, Form()],
             draft_id: Annotated[str, Form()] = "", message_id: Annotated[str, Form()] = "",
             mode: Annotated[str, Form()] = "reply", to: Annotated[str, Form()] = "",
             cc: Annotated[str, Form()] = "", bcc: Annotated[str, Form()] = "",
             subject: Annotated[str, Form()] = "", body: Annotated[str, Form()] = "") -> JSONResponse:
    """Save the composer's draft (create, then edit); ``{"draft_id", "saved_at"}``. Refusals are the
    drafts' four-part errors (JSON for the script, which shows them in words)."""
    node = node_of(request)
    p = person.principal
    values = {"to": split_addresses(to), "cc": split_addresses(cc), "bcc": split_addresses(bcc),
              "subject": subject, "body": body}
    with node.begin() as conn:
        if draft_id:
            d = drafts.edit(conn, org_id=p.org_id, author_id=p.principal_id, at=node.clock.now(), draft_id=draft_id,
                            **values)
        else:
            parent = message_id if mode in ("reply", "reply_all") and message_id else None
            d = drafts.create(conn, org_id=p.org_id, author_id=p.principal_id, at=node.clock.now(),
                              mailbox_id=mailbox_id, in_reply_to_message_id=parent, **values)
    return JSONResponse({"draft_id": d["id"], "saved_at": d["updated_at"]})
