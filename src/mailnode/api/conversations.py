"""Routes for a thread and a case's notes: ``GET /api/conversations/{id}``, ``POST /api/cases/{id}/notes``.

The thread (``mail.thread``) lists the messages received, the node's own sends and the case notes in order,
each with what the caller may see; this module only shapes it. Codes: ``E_NO_SUCH_CONVERSATION`` (404),
``E_CONTENT_DELETED`` is never raised here (a deleted body is said in ``content_deleted``), notes:
``mail.notes``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode.api.case_models import NoteAnswer
from mailnode.api.conversation_models import ConversationAnswer
from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.messages import message_summary
from mailnode.api.models import Strict
from mailnode.api.responses import CaseId, ConversationId, errors
from mailnode.mail import cases as cases_mod
from mailnode.mail import notes as notes_mod
from mailnode.mail.thread import Thread, author_kind, body_of, read_thread
from mailnode.node import Node
from mailnode.outbound.reads import next_step, send_summary
from mailnode.retention import rules as retention
from mailnode.vocabulary.send_states import SendState

router = APIRouter(prefix="/api", tags=["conversations"])


def _waits_on(r: Any, approval_id: str | None) -> dict[str, Any] | None:
    """What a send waits on before it can leave: its gate (``state_reason``) and the next step, the hold
    window of a ``held`` send, or None once it no longer waits."""
    if r.state == SendState.AWAITING.value:
        return {"gate": r.state_reason, "approval_id": approval_id, "release_at": None,
                "next_step": next_step(r.state_reason, send_id=r.id, approval_id=approval_id)}
    if r.state == SendState.HELD.value:
        return {"gate": "hold_window", "approval_id": None, "release_at": r.release_at.isoformat(),
                "next_step": f"It leaves at release_at unless someone holding send.propose cancels it: "
                             f"POST /api/sends/{r.id}/cancel."}
    return None


def _send_item(node: Node, t: Thread, r: Any, grant: Any) -> dict[str, Any]:
    purge = t.purges.get(r.id)
    out = send_summary(r, 0, purge)
    out.pop("retry")
    out["author"] = {"id": r.author_id, "kind": author_kind(r.author_id, r.auto_submitted)}
    out["waits_on"] = _waits_on(r, t.approvals.get(r.id))
    out["display_names"] = r.display_names or {}
    out["attachments"] = r.attachments or []
    out["body_visible"] = grant is not None
    out["body_visible_because"] = grant.value if grant is not None else None
    out["content_deleted"] = (retention.deletion_note(source_id=r.id, kind=purge[0], purged_at=purge[1])
                              if purge is not None else None)
    out["body"] = body_of(node, r) if grant is not None and purge is None else None
    return out


def _message_item(t: Thread, r: Any) -> dict[str, Any]:
    purge = t.purges.get(r.id)
    out = message_summary(r, purge)
    readable = t.relations[r.mailbox_id].content_read and purge is None
    out["text_body"] = r.text_body if readable else None
    out["body_visible"] = readable
    return out


def _note_item(r: Any) -> dict[str, Any]:
    return notes_mod.note_json(r)


@router.get("/conversations/{conversation_id}", response_model=ConversationAnswer, response_model_exclude_unset=True)
def get_conversation(conversation_id: ConversationId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """A conversation: ``thread`` (messages, sends and notes in order, each ``{"kind", "at", <kind>: ...}``),
    and, as before, ``messages`` (received, metadata read) and ``cases``. See ``mail.thread`` for who sees what."""
    with node.read() as conn:
        t = read_thread(conn, org_id=caller.org_id, principal_id=caller.principal_id, conversation_id=conversation_id)
    thread: list[dict[str, Any]] = []
    for kind, row in t.order():
        if kind == "message":
            thread.append({"kind": "message", "at": row.received_at.isoformat(), "message": _message_item(t, row)})
        elif kind == "send":
            r, grant = row
            thread.append({"kind": "send", "at": r.sealed_at.isoformat(), "send": _send_item(node, t, r, grant)})
        else:
            thread.append({"kind": "note", "at": row.created_at.isoformat(), "note": _note_item(row)})
    c = t.conversation
    return {"conversation": {"id": c.id, "subject": c.subject, "created_at": c.created_at.isoformat(),
                             "messages": [message_summary(r, t.purges.get(r.id)) for r in t.messages],
                             "cases": [cases_mod.case_json(r) for r in t.cases], "thread": thread}}


class NoteIn(Strict):
    """Body of ``POST /api/cases/{id}/notes``: the note's text."""

    body: str


@router.post("/cases/{case_id}/notes", status_code=201, response_model=NoteAnswer, responses=errors(403))
def add_note(case_id: CaseId, body: NoteIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Add an internal note to a case (``send.propose`` on its mailbox); 201 ``{"note": ...}``. Never sent."""
    with node.begin() as conn:
        return {"note": notes_mod.add_note(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                           at=node.clock.now(), case_id=case_id, body=body.body)}
