"""Issue 17 item 7: resending a Butler's send (``resend-may-duplicate``) keeps its author and the header that
marks it automatic (RFC 3834 ``Auto-Submitted``); the person who resends is recorded as the actor."""

from __future__ import annotations

import json
from email import message_from_bytes

from sqlalchemy import select, update

from mailnode.audit import audit_entries
from mailnode.schema.outbound import send_manifests, send_recipients
from tests.butler.runs.builders import World, message, send_of
from tests.butler.runs.conftest import ack_program


def _ambiguous(world: World, send_id: str) -> None:
    """The send was handed over and no answer came: the state a resend is offered in."""
    with world.node.begin() as conn:
        conn.execute(update(send_manifests).where(send_manifests.c.id == send_id)
                     .values(state="outcome_unknown", state_reason=None))
        conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == send_id)
                     .values(submission_state="outcome_unknown"))


def test_a_resent_butler_send_keeps_its_author_and_auto_submitted(world: World) -> None:
    world.node.settings.butler_release_timeout_seconds = 0.5
    bid, _ = world.publish(ack_program(), name="acknowledge")
    world.grant(bid, "send.propose", "mailbox.content.read")
    run = world.wait_run(world.deliver(message(subject="Order 42")))
    original = send_of(world, world.effects(run.id)[-1].subject)
    assert (original.author_id, original.auto_submitted) == (bid, "auto-replied")
    _ambiguous(world, original.id)
    r = world.api.post(f"/api/sends/{original.id}/retry", headers=world.admin,
                       json={"mode": "resend-may-duplicate", "accept_duplicate_risk": True,
                             "reason": "the provider timed out; the customer says nothing arrived"})
    assert r.status_code == 200, r.text
    copy = send_of(world, r.json()["send"]["id"])
    assert copy.resend_of == original.id
    # The copy is still the Butler's mail, marked automatic in its stored row and in its bytes ...
    assert (copy.author_id, copy.auto_submitted) == (bid, "auto-replied")
    rendered = message_from_bytes(world.node.evidence.get(copy.rendered_sha256))
    assert rendered["Auto-Submitted"] == "auto-replied"
    # ... it does not wait for a Butler release again (resending it is a person's act) ...
    assert (copy.state, copy.state_reason) == ("held", None)
    # ... and the person who resent it is the actor on the trail.
    admin = world.installed.user_id
    with world.node.read() as conn:
        rows = conn.execute(select(audit_entries.c.action, audit_entries.c.actor_id, audit_entries.c.detail)
                            .where(audit_entries.c.subject == copy.id)).all()
    actors = {a.action: (a.actor_id, json.loads(a.detail or "{}")) for a in rows}
    assert actors["send.resent"][0] == admin
    assert actors["send.sealed"][0] == admin and actors["send.sealed"][1]["author_id"] == bid

