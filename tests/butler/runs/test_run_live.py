"""Runs in this process on the real database: the acknowledgement reply drafts, proposes and parks;
a person's release resumes it; refusals of a reply; trigger dedup; the examples of docs/butlers.md."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import select

from mailnode.butler import trigger
from mailnode.schema.outbound import drafts, send_manifests
from tests.butler.runs.conftest import MAILBOX, World, ack_program, docs_examples, message, program


def _audit(world: World, action: str) -> list[dict[str, Any]]:
    r = world.api.get("/api/audit", params={"action": action}, headers=world.admin)
    assert r.status_code == 200, r.text
    return list(r.json()["entries"])


def test_acknowledgement_drafts_proposes_parks_and_a_release_resumes_it(world: World) -> None:
    bid, vid = world.publish(ack_program())
    # send.propose alone: a Butler may answer the message that triggered its run without content read.
    world.grant(bid, "send.propose")
    mid = world.deliver(message(subject="Order 42"))
    run = world.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    assert run.id == f"{vid}-{mid}" and run.outcome_reason == "butler_release_required"
    rows = world.effects(run.id)
    assert [(e.node_id, e.outcome, e.reason) for e in rows] == [
        ("reply", "ok", None), ("propose", "ok", "butler_release_required")]
    send_id = rows[1].subject
    with world.node.read() as conn:
        send = conn.execute(select(send_manifests).where(send_manifests.c.id == send_id)).one()
    assert (send.state, send.state_reason, send.author_id) == ("awaiting", "butler_release_required", bid)
    assert send.to_addresses == ["customer@remote.test"] and send.subject == "Re: Order 42"
    assert send.auto_submitted == "auto-replied" and send.in_reply_to_header
    assert [e["actor_kind"] for e in _audit(world, "send.sealed")] == ["butler"]
    assert [e["actor_kind"] for e in _audit(world, "draft.saved")] == ["butler"]

    r = world.api.post(f"/api/sends/{send_id}/release", headers=world.admin)
    assert r.status_code == 200, r.text
    assert r.json()["release"] == {"send_id": send_id, "state": "held", "run_id": run.id, "resumed": True,
                                        "resumption": "delivered"}
    done = world.wait_run(mid)
    assert (done.state, done.outcome_reason, done.effects, done.refusals) == ("finished", None, 2, 0)
    released = _audit(world, "send.released")
    assert [(e["actor_kind"], e["subject"]) for e in released] == [("user", send_id)]
    # Released once: a second release is refused and writes nothing.
    again = world.api.post(f"/api/sends/{send_id}/release", headers=world.admin)
    assert again.status_code == 409 and again.json()["error"] == "E_SEND_NOT_RELEASABLE"
    assert len(_audit(world, "send.released")) == 1


def test_the_same_delivery_triggered_twice_makes_one_run(world: World) -> None:
    _bid, vid = world.publish(program([{"id": "done", "type": "stop", "reason": "seen"}], "done"))
    mid = world.deliver(message(), start=False)
    from dbos import DBOS

    first = DBOS.start_workflow(trigger.trigger_workflow, mid).get_result()
    second = DBOS.start_workflow(trigger.trigger_workflow, mid).get_result()
    assert first == second == [f"{vid}-{mid}"]
    run = world.wait_run(mid)
    assert (run.state, run.outcome_reason) == ("stopped", "seen")
    assert len(world.runs()) == 1
    # The run row closes inside the workflow, a moment before DBOS records the workflow's own success.
    DBOS.retrieve_workflow(f"{vid}-{mid}").get_result()
    assert DBOS.list_workflows(workflow_ids=[f"{vid}-{mid}"])[0].status == "SUCCESS"


@pytest.mark.parametrize(("raw", "mail_from", "code"), [
    (message(subject="Undelivered Mail Returned to Sender"), "", "E_BUTLER_PARENT_HAS_NO_RETURN_PATH"),
    (message(sender=MAILBOX), MAILBOX, "E_BUTLER_REPLY_WOULD_LOOP"),
    (message(List_Id="<news.remote.test>", Precedence="list"), "news-bounces@remote.test", "E_BUTLER_REPLY_REFUSED"),
], ids=["bounce", "own-address", "mailing-list"])
def test_a_reply_with_nowhere_safe_to_go_fails_the_run_and_writes_no_draft(world: World, raw: bytes, mail_from: str,
                                                                        code: str) -> None:
    # A drafting program that does not guard on event.reply_refusal: the draft node itself refuses.
    doc = program([
        {"id": "reply", "type": "draft", "mailboxId": "${event.mailbox_id}", "subject": "Re: ${event.subject}",
         "body": "Thanks.", "inReplyTo": "${event.message_id}", "as": "ack", "next": None},
    ], "reply", ["send.propose"])
    bid, _ = world.publish(doc)
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(raw, mail_from=mail_from)
    run = world.wait_run(mid)
    assert (run.state, run.outcome_reason) == ("failed", code)
    assert world.effects(run.id) == []
    with world.node.read() as conn:
        assert conn.execute(select(drafts.c.id)).all() == []


def test_the_acknowledgement_example_stays_quiet_on_a_mailing_list(world: World) -> None:
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(List_Id="<news.remote.test>"), mail_from="news-bounces@remote.test")
    run = world.wait_run(mid)
    assert (run.state, run.outcome_reason) == ("stopped", "an automatic reply is refused for this message")
    assert world.effects(run.id) == []


def test_every_example_program_in_the_docs_runs(world: World) -> None:
    examples = docs_examples()
    assert len(examples) == 3
    for doc in examples:
        bid, _ = world.publish(doc, name=doc["metadata"]["name"])
        world.grant(bid, "send.propose", "mailbox.content.read")
    mid = world.deliver(message(subject="Invoice 7 for order 42"))
    deadline = time.monotonic() + 30
    runs = world.runs(mid)
    while time.monotonic() < deadline and not (
            len(runs) == 3 and all(r.state in ("finished", "awaiting_release", "stopped") for r in runs)):
        time.sleep(0.1)
        runs = world.runs(mid)
    states = sorted((r.state, r.outcome_reason) for r in runs)
    # acknowledge parks on its send; invoice-triage and route-orders both try the case (one takes it,
    # the other's claim is refused: the system working, so both finish).
    assert states == [("awaiting_release", "butler_release_required"), ("finished", None), ("finished", None)], states
    kinds = sorted((e.node_type, e.outcome, e.reason) for r in runs for e in world.effects(r.id))
    assert ("lookup", "ok", None) in kinds and ("case.assign", "ok", None) in kinds
    assert ("mail.send.propose", "ok", "butler_release_required") in kinds


def test_without_content_read_a_butler_may_answer_only_its_own_trigger(world: World) -> None:
    from mailnode.errors import MailnodeError
    from mailnode.outbound.seal import SealRequest, seal

    # Delivered (materialised, no trigger) before any Butler listens: not this Butler's trigger.
    stranger = world.deliver(message(subject="Before the Butler"), start=False)
    bid, _ = world.publish(ack_program())
    world.grant(bid, "send.propose")
    mid = world.deliver(message(subject="Order 43"))
    world.wait_run(mid, until=lambda r: r.state == "awaiting_release")

    def reply_to(parent: str) -> str:
        request = SealRequest(mailbox_id=world.installed.mailbox_id, to=["customer@remote.test"], subject="Re: x",
                              body="hi", in_reply_to_message_id=parent)
        return seal(world.node, org_id=world.installed.org_id, author_id=bid, request=request).id

    assert reply_to(mid).startswith("snd_")
    with pytest.raises(MailnodeError) as refused:
        reply_to(stranger)
    assert refused.value.code == "E_NO_SUCH_PARENT"
