"""The Butler replay view's retry offer once retention deleted a send's body (spec/transactional.md §5;
issue 9 follow-up): it offers nothing (``none/content_deleted``) and says ``content_deleted_at``, as
``GET /api/sends/{id}`` does, rather than offering a retry that answers 410 ``E_CONTENT_DELETED``."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests
from tests.butler.runs.builders import World, message
from tests.butler.runs.conftest import ack_program

DAY = 86_400


def test_inspect_offers_no_retry_of_a_send_whose_body_retention_deleted(world: World) -> None:
    bid, _ = world.publish(ack_program(), name="acknowledge")
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(subject="Order 42"))
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    send_id = world.effects(run.id)[-1].subject
    # The transport refused it: a retry-effect would be offered while its body exists.
    with world.node.begin() as conn:
        conn.execute(update(send_manifests).where(send_manifests.c.id == send_id)
                     .values(state="refused", state_reason=None))

    def offered() -> dict[str, object]:
        r = world.api.get(f"/api/butler-runs/{run.id}/inspect", headers=world.admin)
        assert r.status_code == 200, r.text
        return dict(r.json()["inspection"]["effects"][-1]["send"])

    before = offered()
    assert (before["retry"], before["content_deleted_at"]) == (
        {"mode": "retry-effect", "basis": "refused", "duplicate_possible": False}, None)
    later = world.node.clock.now() + timedelta(seconds=15 * DAY)
    assert send_id in retention_io.run_pass(world.node, later).sweeps[world.installed.org_id].purged
    after = offered()
    assert after["retry"] == {"mode": "none", "basis": "content_deleted", "duplicate_possible": False}
    assert after["content_deleted_at"] == later.isoformat()
    # The send's own read agrees, and the retry it no longer offers is refused.
    read = world.api.get(f"/api/sends/{send_id}", headers=world.admin).json()["send"]
    assert read["retry"] == after["retry"]
    r = world.api.post(f"/api/sends/{send_id}/retry", json={"mode": "retry-effect", "reason": "try again"},
                       headers=world.admin)
    assert (r.status_code, r.json()["error"]) == (410, "E_CONTENT_DELETED")
