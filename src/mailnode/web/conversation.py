"""The conversation page: the whole thread, the case's actions (claim, assign, close, reopen, note) and who
else holds or writes in it (issue 16, "The conversation").

Every route calls the service the API calls: ``mail.thread.read_thread`` (``GET /api/conversations/{id}``),
``ingress.viewing`` (``GET /api/messages/{id}`` and its attachments), ``mail.cases`` (claim, close, reopen),
``mail.notes``, ``mail.presence``; a refusal renders its four parts (``web.errors``). A message's HTML is
served by ``/messages/{id}/frame``, sanitised (``ingress.reading``), under its own CSP (nothing runs,
nothing loads but the node's own images unless the reader asks for remote ones) and shown in an ``iframe``
whose ``sandbox`` allows neither scripts nor the same origin. ``/messages/{id}/attachments/{part}`` serves
an attachment to a signed-in person with the API route's bytes and headers.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sqlalchemy import select

from mailnode import budgets
from mailnode.governance.approvals import approvers
from mailnode.ingress import viewing
from mailnode.mail import cases as cases_mod
from mailnode.mail import notes as notes_mod
from mailnode.mail import presence
from mailnode.mail.thread import Thread, author_kind, body_of, read_thread
from mailnode.node import Node
from mailnode.outbound.outcome import gate_outcome
from mailnode.schema.directory import users
from mailnode.web.headers import framed
from mailnode.web.render import page
from mailnode.web.session import CsrfDep, PersonDep, WebPerson
from mailnode.web.words import automated_words, danger_words

router = APIRouter(include_in_schema=False)

#: The CSP of a message's HTML frame: nothing runs (``sandbox`` without ``allow-scripts``), no form posts,
#: images only from the node (``cid:`` parts) or ``data:``, the message's own inline styles, and only the
#: node's own pages may frame it; a link opens in a new tab, outside the sandbox (it runs nothing here).
#: ``REMOTE_IMAGES_SOURCES`` is added when the reader asked for images.
FRAME_CSP = ("default-src 'none'; img-src 'self' data:{remote}; style-src 'unsafe-inline'; "
             "frame-ancestors 'self'; form-action 'none'; base-uri 'none'; sandbox allow-popups "
             "allow-popups-to-escape-sandbox")
REMOTE_IMAGES_SOURCES = " https: http:"


def node_of(request: Request) -> Node:
    """The node serving this request."""
    node: Node = request.app.state.node
    return node


def names_of(node: Node, org_id: str, ids: set[str]) -> dict[str, str]:
    """Display names (the name, else the email) of the people among ``ids``; others are left out."""
    if not ids:
        return {}
    with node.read() as conn:
        rows = conn.execute(select(users.c.id, users.c.name, users.c.email)
                            .where(users.c.org_id == org_id, users.c.id.in_(sorted(ids)))).all()
    return {str(r.id): str(r.name or r.email) for r in rows}


@dataclass(frozen=True)
class Item:
    """One entry of the thread as the template shows it: ``kind`` (message, send, note) and its fields."""

    kind: str
    at: str
    data: dict[str, Any]


def _readable(t: Thread, r: Any) -> bool:
    """Whether the page shows message ``r``'s content: ``mailbox.content.read`` on its mailbox (the rule
    ``viewing.readable`` applies) and not deleted by retention."""
    return t.relations[r.mailbox_id].content_read and t.purges.get(r.id) is None


def _message(t: Thread, r: Any, views: dict[str, dict[str, Any]]) -> dict[str, Any]:
    purge = t.purges.get(r.id)
    readable = _readable(t, r)
    out: dict[str, Any] = {"row": r, "readable": readable, "deleted": purge is not None,
                           "automated_words": automated_words(r.automated),
                           "reply_refusal_words": automated_words(r.reply_refusal)}
    if readable:
        seen = views[r.id]
        out["view"] = seen
        out["attachments"] = [{**a, "danger_words": danger_words(a["danger"]),
                               "href": f"/messages/{r.id}/attachments/{a['part']}"}
                              for a in (seen["attachment_list"] or []) if not a["inline"] or a["danger"]]
    return out


def _send(node: Node, t: Thread, r: Any, grant: Any, names: dict[str, str]) -> dict[str, Any]:
    purge = t.purges.get(r.id)
    approval_id = t.approvals.get(r.id)
    outcome = gate_outcome(r.state, r.state_reason, send_id=r.id, now=node.clock.now(), release_at=r.release_at,
                           approvers=_approver_names(node, r, names), approval_id=approval_id)
    return {"row": r, "outcome": outcome, "author": names.get(r.author_id, r.author_id),
            "author_kind": author_kind(r.author_id, r.auto_submitted),
            "body": body_of(node, r) if grant is not None and purge is None else None,
            "deleted": purge is not None, "attachments": r.attachments or []}


def _approver_names(node: Node, r: Any, names: dict[str, str]) -> tuple[str, ...]:
    """Who may decide an awaiting approval of send ``r`` (``approval.decide`` on its mailbox), by name."""
    if r.state != "awaiting" or r.state_reason != "policy_approval_required":
        return ()
    with node.read() as conn:
        ids = approvers(conn, org_id=r.org_id, scope_type="mailbox", relation="approval.decide",
                        scope_id=r.mailbox_id)
    more = names_of(node, r.org_id, set(ids) - set(names))
    return tuple(sorted({**names, **more}.get(i, i) for i in ids if i != r.author_id))


def conversation_context(node: Node, person: WebPerson, conversation_id: str, images_for: str | None
                         ) -> dict[str, Any]:
    """Everything the conversation template shows (reads only; see the module docstring)."""
    p = person.principal
    with node.read() as conn:
        t = read_thread(conn, org_id=p.org_id, principal_id=p.principal_id, conversation_id=conversation_id)
    ids = {s.author_id for s, _ in t.sends} | {n.author_id for n in t.notes} | {
        c.assignee_id for c in t.cases if c.assignee_id}
    names = names_of(node, p.org_id, ids)
    # Every readable message's reading at once (one statement for their attachments, not four a message).
    views = viewing.view_rows(node, rows=[r for r in t.messages if _readable(t, r)], purges=t.purges,
                              remote_images_for=images_for)
    items: list[Item] = []
    for kind, row in t.order():
        if kind == "message":
            items.append(Item("message", row.received_at.isoformat(), _message(t, row, views)))
        elif kind == "send":
            r, grant = row
            items.append(Item("send", r.sealed_at.isoformat(), _send(node, t, r, grant, names)))
        else:
            items.append(Item("note", row.created_at.isoformat(),
                              {"row": row, "author": names.get(row.author_id, row.author_id)}))
    open_cases = [c for c in t.cases if c.state == "open"]
    case = open_cases[-1] if open_cases else (t.cases[-1] if t.cases else None)
    collision = None
    teammates: list[tuple[str, str]] = []
    if case is not None:
        with node.read() as conn:
            collision = presence.read_collision(conn, org_id=p.org_id, principal_id=p.principal_id,
                                                conversation_id=conversation_id, at=node.clock.now())
            workers = approvers(conn, org_id=p.org_id, scope_type="mailbox", relation="send.propose",
                                scope_id=case.mailbox_id)
        team_names = names_of(node, p.org_id, set(workers))
        teammates = sorted(((i, team_names[i]) for i in workers if i in team_names and i != p.principal_id),
                           key=lambda x: x[1].lower())
    last_message = next((i.data["row"] for i in reversed(items) if i.kind == "message"), None)
    return {"thread": t, "items": items, "case": case, "holder": names.get(case.assignee_id, case.assignee_id)
            if case is not None and case.assignee_id else None, "collision": collision, "teammates": teammates,
            "last_message": last_message, "subject": t.conversation.subject or "(no subject)",
            "heartbeat_seconds": budgets.COMPOSER_PRESENCE_HEARTBEAT_SECONDS, "images_for": images_for}


@router.get("/conversations/{conversation_id}", response_class=HTMLResponse)
def conversation(conversation_id: str, request: Request, person: PersonDep, images: str | None = None
                 ) -> HTMLResponse:
    """The conversation page; ``images=<message id>`` shows that message's remote images."""
    ctx = conversation_context(node_of(request), person, conversation_id, images)
    return page(request, "conversation/conversation.html", **ctx)


@router.get("/conversations/{conversation_id}/collision")
def collision(conversation_id: str, request: Request, person: PersonDep) -> JSONResponse:
    """Who else holds the case or writes in it now, as ``{"kind", "locks_composer", "words"}`` (polled)."""
    node = node_of(request)
    with node.read() as conn:
        c = presence.read_collision(conn, org_id=person.principal.org_id, principal_id=person.principal.principal_id,
                                    conversation_id=conversation_id, at=node.clock.now())
    return JSONResponse({"kind": c.kind.value, "locks_composer": c.locks_composer, "words": c.words})


@router.post("/conversations/{conversation_id}/presence")
def heartbeat(conversation_id: str, request: Request, person: PersonDep, _: CsrfDep,
              leave: str | None = Form(None)) -> JSONResponse:
    """A composer's heartbeat (``leave=1`` ends its presence); answers the collision as ``collision`` does."""
    node = node_of(request)
    p = person.principal
    with node.begin() as conn:
        if leave:
            presence.leave(conn, org_id=p.org_id, principal_id=p.principal_id, conversation_id=conversation_id)
        else:
            presence.touch(conn, org_id=p.org_id, principal_id=p.principal_id, conversation_id=conversation_id,
                           at=node.clock.now())
        c = presence.read_collision(conn, org_id=p.org_id, principal_id=p.principal_id,
                                    conversation_id=conversation_id, at=node.clock.now())
    return JSONResponse({"kind": c.kind.value, "locks_composer": c.locks_composer, "words": c.words})


def _back(conversation_id: str, anchor: str = "") -> RedirectResponse:
    return RedirectResponse(f"/conversations/{conversation_id}{anchor}", status_code=303)


@router.post("/cases/{case_id}/claim")
def claim(case_id: str, request: Request, person: PersonDep, _: CsrfDep, assignee: str | None = Form(None),
          take: str | None = Form(None)) -> RedirectResponse:
    """Claim the case (or assign it to ``assignee``; ``take`` takes it over), then back to its conversation."""
    node = node_of(request)
    p = person.principal
    with node.begin() as conn:
        out = cases_mod.claim(conn, org_id=p.org_id, principal_id=p.principal_id, at=node.clock.now(),
                              case_id=case_id, assignee_id=assignee or None, take=bool(take))
    return _back(out["conversation_id"])


@router.post("/cases/{case_id}/close")
def close(case_id: str, request: Request, person: PersonDep, _: CsrfDep) -> RedirectResponse:
    """Close the case the caller holds, then back to its conversation."""
    node = node_of(request)
    p = person.principal
    with node.begin() as conn:
        out = cases_mod.close(conn, org_id=p.org_id, principal_id=p.principal_id, at=node.clock.now(),
                              case_id=case_id)
    return _back(out["conversation_id"])


@router.post("/cases/{case_id}/reopen")
def reopen(case_id: str, request: Request, person: PersonDep, _: CsrfDep) -> RedirectResponse:
    """Reopen a closed case (held by the caller), then back to its conversation."""
    node = node_of(request)
    p = person.principal
    with node.begin() as conn:
        out = cases_mod.reopen(conn, org_id=p.org_id, principal_id=p.principal_id, at=node.clock.now(),
                               case_id=case_id)
    return _back(out["conversation_id"])


@router.post("/cases/{case_id}/notes")
def add_note(case_id: str, request: Request, person: PersonDep, _: CsrfDep, body: str = Form("")
             ) -> RedirectResponse:
    """Add an internal note to the case, then back to its conversation."""
    node = node_of(request)
    p = person.principal
    with node.begin() as conn:
        note = notes_mod.add_note(conn, org_id=p.org_id, principal_id=p.principal_id, at=node.clock.now(),
                                  case_id=case_id, body=body)
    return _back(note["conversation_id"], f"#{note['id']}")


def referenced_parts(html: str, message_id: str) -> list[str]:
    """The attachment parts the sanitised ``html`` shows as images (its ``cid:`` images, which the sanitiser
    pointed at the API's attachment route), in order of first use. Pure."""
    prefix = re.escape(f"/api/messages/{message_id}/attachments/")
    seen: list[str] = []
    for part in re.findall(prefix + r"([0-9][0-9.]*)", html):
        if part not in seen:
            seen.append(part)
    return seen


def frame_document(html: str, message_id: str, images: dict[str, tuple[str, bytes]]) -> str:
    """The frame's document: ``html`` with each shown image part in ``images`` (``part -> (media type,
    bytes)``) written as a ``data:`` URL, since the sandboxed frame has no origin to send the session from.
    Pure."""
    for part, (media_type, data) in images.items():
        url = f"/api/messages/{message_id}/attachments/{part}"
        html = re.sub(re.escape(url) + r"(?![0-9.])", f"data:{media_type};base64,"
                      + base64.b64encode(data).decode("ascii"), html)
    return "<!doctype html><html><head><meta charset=\"utf-8\"></head><body>" + html + "</body></html>"


@framed
@router.get("/messages/{message_id}/frame", response_class=HTMLResponse)
def message_frame(message_id: str, request: Request, person: PersonDep, remote_images: bool = False) -> Response:
    """A message's sanitised HTML as a document of its own, under ``FRAME_CSP`` (for the sandboxed frame).

    Its ``cid:`` images are written in as ``data:`` URLs when the attachment route serves them as images (a
    raster image whose bytes agree with its type), at most ``budgets.FRAME_INLINE_IMAGES_MAX`` of them and
    ``budgets.FRAME_INLINE_IMAGE_BYTES_MAX`` bytes in all; others stay out of sight.
    """
    p = person.principal
    node = node_of(request)
    seen = viewing.view(node, org_id=p.org_id, principal_id=p.principal_id, message_id=message_id,
                        remote_images=remote_images)
    html = seen["html_body"] or ""
    images: dict[str, tuple[str, bytes]] = {}
    budget = budgets.FRAME_INLINE_IMAGE_BYTES_MAX
    for part in referenced_parts(html, message_id)[:budgets.FRAME_INLINE_IMAGES_MAX]:
        served = viewing.attachment(node, org_id=p.org_id, principal_id=p.principal_id, message_id=message_id,
                                    part=part)
        if served.media_type.startswith("image/") and len(served.content) <= budget:
            images[part] = (served.media_type, served.content)
            budget -= len(served.content)
    csp = FRAME_CSP.format(remote=REMOTE_IMAGES_SOURCES if remote_images else "")
    return HTMLResponse(frame_document(html, message_id, images), headers={"Content-Security-Policy": csp})


@router.get("/messages/{message_id}/attachments/{part}")
def attachment(message_id: str, part: str, request: Request, person: PersonDep) -> Response:
    """One attachment's bytes with the API route's headers (``ingress.viewing.attachment``)."""
    p = person.principal
    served = viewing.attachment(node_of(request), org_id=p.org_id, principal_id=p.principal_id,
                                message_id=message_id, part=part)
    return Response(content=served.content, media_type=served.media_type, headers=served.headers)
