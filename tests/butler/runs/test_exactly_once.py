"""An effect step that runs again (the process died after its transaction committed, before DBOS recorded
the step) finds its own effect row and performs nothing a second time."""

from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import func, select

from mailnode.butler import engine
from mailnode.butler.authority import Ceiling
from mailnode.butler.walk import EffectCall
from mailnode.schema.outbound import drafts
from tests.butler.runs.conftest import MAILBOX, World, message, program


def test_a_retried_effect_step_returns_its_record_and_writes_nothing(world: World) -> None:
    bid, _ = world.publish(program([{"id": "done", "type": "stop", "reason": "x"}], "done"))
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message())
    run = world.wait_run(mid)
    facts = run.trigger_facts
    ctx = {"run_id": run.id, "org_id": world.installed.org_id, "butler_id": bid,
           "sponsor_id": world.installed.user_id,
           "ceiling": Ceiling.from_capabilities(
               [{"action": "send.propose", "resource": f"mailbox:{MAILBOX}"}]).to_json()}
    call = EffectCall(seq=1, step="reply#1", node_id="reply", node_type="draft",
                      params={"mailbox_id": facts["mailbox_id"], "subject": "Re", "body": "Thanks.",
                              "in_reply_to_message_id": mid, "recipient": facts["return_path"]})
    first = engine._effect_step(ctx, asdict(call))
    again = engine._effect_step(ctx, asdict(call))
    assert first["result"]["outcome"] == "ok" and again == first
    with world.node.read() as conn:
        assert conn.execute(select(func.count()).select_from(drafts)).scalar_one() == 1
    assert len(world.effects(run.id)) == 1
