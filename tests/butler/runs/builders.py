"""Builders for the Butler operations tests: the run tests' world (DBOS in this process, published Butlers,
deliveries through the real receipt and materialisation), plus people, releases, replies and row counts."""

from __future__ import annotations

import time
import uuid
from typing import Any

from sqlalchemy import func, select

from mailnode.authz import grant_unchecked
from mailnode.directory.people import create_user
from mailnode.directory.tokens import create_token
from mailnode.schema import metadata
from mailnode.schema.butler_runs import butler_pauses
from mailnode.schema.outbound import send_manifests
from tests.butler.runs.conftest import MAILBOX, World, dbos, message, settings, world  # noqa: F401

__all__ = [
    "MAILBOX",
    "World",
    "message",
    "pauses",
    "person",
    "release",
    "reply_to_send",
    "row_counts",
    "send_of",
    "settled",
    "wait_for",
]


def person(w: World, email: str, *relations: tuple[str, str]) -> dict[str, str]:
    """A user holding each ``(relation, object_id)``; their bearer header."""
    node = w.node
    now = node.clock.now()
    with node.begin() as conn:
        uid = create_user(conn, org_id=w.installed.org_id, actor_id=None, at=now, email=email)["id"]
        for relation, object_id in relations:
            grant_unchecked(conn, org_id=w.installed.org_id, at=now, subject_id=uid, relation=relation,
                            object_id=object_id, actor_id=None)
        _, token = create_token(conn, org_id=w.installed.org_id, principal_id=uid, at=now, actor_id=None, label="test")
    return {"Authorization": f"Bearer {token}"}


def send_of(w: World, send_id: str) -> Any:
    """The manifest row."""
    with w.node.read() as conn:
        return conn.execute(select(send_manifests).where(send_manifests.c.id == send_id)).one()


def release(w: World, send_id: str) -> dict[str, Any]:
    """Release a Butler's send as the administrator, as a careless person would."""
    r = w.api.post(f"/api/sends/{send_id}/release", headers=w.admin)
    assert r.status_code == 200, r.text
    return dict(r.json()["release"])


def reply_to_send(w: World, send_id: str, subject: str | None = None) -> str:
    """Deliver the correspondent's threaded, not-automatic answer to one of the node's sends."""
    sent = send_of(w, send_id)
    rfc = f"<{sent.rfc_message_id}>"
    refs = f"{sent.references_header} {rfc}" if sent.references_header else rfc
    raw = message(subject=subject or f"Re: {sent.subject}", In_Reply_To=rfc, References=refs,
                  message_id=f"<{uuid.uuid4().hex}@remote.test>")
    return settled(w, raw)


def settled(w: World, raw: bytes, mail_from: str = "customer@remote.test") -> str:
    """Deliver ``raw`` and wait until its trigger has decided (no materialisation or trigger workflow pending)."""
    from dbos import DBOS

    mid = w.deliver(raw, mail_from=mail_from)

    def quiet() -> bool:
        pending = DBOS.list_workflows(status="PENDING", load_input=False, load_output=False)
        return not [w for w in pending if "trigger" in (w.name or "") or "materialis" in (w.name or "")]

    wait_for(quiet)
    return mid


def pauses(w: World) -> list[Any]:
    """Every Butler pause row."""
    with w.node.read() as conn:
        return list(conn.execute(select(butler_pauses).order_by(butler_pauses.c.placed_at)).all())


def row_counts(w: World) -> dict[str, int]:
    """Rows per table of the node's schema."""
    with w.node.read() as conn:
        return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one())
                for t in metadata.sorted_tables}


def wait_for(check: Any, seconds: float = 30) -> Any:
    """Poll ``check()`` until it returns something truthy."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("the condition did not hold in time")
