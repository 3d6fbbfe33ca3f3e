"""The outbound pipeline end to end on a real database, a real smarthost sink and the real inbound path:
a reply is sealed, handed over once per recipient with the right headers, bounced back through ingress,
and answered; plus drafts, cancel, retry, refusals before storage, and a transport that raises."""

from __future__ import annotations

from email import message_from_bytes
from email.policy import default as default_policy
from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode.errors import MailnodeError
from mailnode.outbound import dispatch
from mailnode.schema.outbound import drafts, send_manifests, send_recipients
from mailnode.transports.base import Submission, SubmitOutcome, TransportCapabilities
from mailnode.vocabulary.send_states import SendState
from tests.outbound.db.conftest import deliver, inbound

H = lambda token: {"Authorization": f"Bearer {token}"}


def dsn(final_recipient: str, original_message_id: str, to: str, status: str = "5.1.1") -> bytes:
    """A minimal RFC 3464 delivery status notification."""
    boundary = "dsn-boundary-1"
    text = (
        f"From: MAILER-DAEMON@remote.test\r\nTo: {to}\r\nSubject: Undelivered Mail Returned to Sender\r\n"
        f"Message-ID: <dsn-{abs(hash((final_recipient, to)))}@remote.test>\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: multipart/report; report-type=delivery-status; boundary=\"{boundary}\"\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nThe message could not be delivered.\r\n"
        f"--{boundary}\r\nContent-Type: message/delivery-status\r\n\r\n"
        f"Reporting-MTA: dns; mx.remote.test\r\n\r\n"
        f"Final-Recipient: rfc822; {final_recipient}\r\nAction: failed\r\nStatus: {status}\r\n"
        f"Diagnostic-Code: smtp; 550 {status} user unknown\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/rfc822-headers\r\n\r\n"
        f"From: support@example.test\r\nTo: {final_recipient}\r\nSubject: Re: Where is my order?\r\n"
        f"Message-ID: <{original_message_id}>\r\n\r\n"
        f"--{boundary}--\r\n"
    )
    return text.encode("ascii")


def _messages(api: Any, installed: Any) -> list[dict[str, Any]]:
    r = api.get(f"/api/mailboxes/{installed.mailbox_id}/messages", headers=H(installed.token))
    return list(r.json()["messages"])


def _seal_reply(api: Any, installed: Any, parent_id: str, **extra: Any) -> dict[str, Any]:
    body = {"mailbox_id": installed.mailbox_id, "to": ["Customer@Remote.test"], "cc": ["cc@remote.test"],
            "bcc": ["hidden@remote.test"], "subject": "Re: Where is my order?", "body": "It ships today.  \nBye\n",
            "in_reply_to_message_id": parent_id, **extra}
    r = api.post("/api/sends", json=body, headers=H(installed.token))
    assert r.status_code == 201, r.text
    return dict(r.json()["send"])


def test_a_reply_is_handed_over_bounced_through_ingress_and_answered(
        api: Any, node: Any, installed: Any, listener: Any, sink: Any, hold_zero: None) -> None:
    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    parent = _messages(api, installed)[0]
    sealed = _seal_reply(api, installed, parent["id"])
    assert sealed["state"] == "held" and sealed["conversation_id"] == parent["conversation_id"]

    report = dispatch.sweep(node, transport=sink.transport())
    assert [r.state for r in report.results] == ["handed_over"]
    got = api.get(f"/api/sends/{sealed['id']}", headers=H(installed.token)).json()["send"]
    assert got["state"] == "handed_over" and got["retry"]["mode"] == "none"
    by_addr = {r["address"]: r for r in got["recipients"]}
    assert set(by_addr) == {"Customer@remote.test", "cc@remote.test", "hidden@remote.test"}
    assert all(r["submission_state"] == "handed_over" and r["delivery_state"] is None for r in by_addr.values())

    # Once per recipient, one envelope each, VERP return path naming that recipient row.
    received = sink.handler.received
    assert sorted(rcpt for t in received for rcpt in t.rcpt_tos) == sorted(by_addr)
    assert all(len(t.rcpt_tos) == 1 for t in received)
    for t in received:
        row = by_addr[t.rcpt_tos[0]]
        assert t.mail_from == f"bounces+{row['id'].lower()}@example.test"
        msg = message_from_bytes(t.content, policy=default_policy)
        assert msg["Message-ID"] == f"<{sealed['rfc_message_id']}>"
        assert msg["In-Reply-To"] == "<q1@remote.test>" and msg["References"] == "<q1@remote.test>"
        assert msg["Bcc"] is None and b"hidden@remote.test" not in t.content
        assert msg["From"] == "support@example.test" and msg["Cc"] == "cc@remote.test"
        assert msg["Auto-Submitted"] is None
    # A second sweep hands nothing over again.
    assert dispatch.sweep(node, transport=sink.transport()).results == []
    assert len(sink.handler.received) == 3

    # A DSN to the VERP address of one recipient row marks that recipient bounced.
    customer = by_addr["Customer@remote.test"]
    deliver(listener,
            dsn("customer@remote.test", "unrelated@elsewhere.test", f"bounces+{customer['id'].lower()}@example.test"),
            "", [f"bounces+{customer['id'].lower()}@example.test"])
    # A DSN carrying only the original Message-ID (to the mailbox, not the VERP address) is attributed too.
    deliver(listener, dsn("cc@remote.test", sealed["rfc_message_id"], "support@example.test"), "",
            ["support@example.test"])
    got = api.get(f"/api/sends/{sealed['id']}", headers=H(installed.token)).json()["send"]
    states = {r["address"]: (r["delivery_state"], r["bounce_type"]) for r in got["recipients"]}
    assert states == {"Customer@remote.test": ("bounced", "hard"), "cc@remote.test": ("bounced", "hard"),
                      "hidden@remote.test": (None, None)}
    assert sorted(e["recipient_id"] for e in got["events"]) == sorted([customer["id"], by_addr["cc@remote.test"]["id"]])

    # A reply to the sent message joins its conversation.
    deliver(listener, inbound("Re: Re: Where is my order?", "<q3@remote.test>",
                              In_Reply_To=f"<{sealed['rfc_message_id']}>"), "customer@remote.test",
            ["support@example.test"])
    newest = next(m for m in _messages(api, installed) if m["subject"] == "Re: Re: Where is my order?")
    assert newest["conversation_id"] == sealed["conversation_id"]
    actions = [e["action"] for e in api.get("/api/audit", headers=H(installed.token)).json()["entries"]]
    assert "send.sealed" in actions and "send.handed_over" in actions


def test_a_new_conversation_and_a_butler_author(node: Any, installed: Any, sink: Any, hold_zero: None) -> None:
    from mailnode.authz import grant_unchecked
    from mailnode.ids import new_id
    from mailnode.outbound.seal import SealRequest, seal

    sealed = seal(node, org_id=installed.org_id, author_id=installed.user_id, request=SealRequest(
        mailbox_id=installed.mailbox_id, to=["ann@remote.test"], subject="Hello", body="Hi"))
    assert sealed.state is SendState.HELD and sealed.conversation_id.startswith("cnv_")
    butler = new_id("btl")
    with node.begin() as conn:
        grant_unchecked(conn, org_id=installed.org_id, at=node.clock.now(), subject_id=butler,
                        relation="send.propose", object_id=installed.mailbox_id, actor_id=None)
    by_butler = seal(node, org_id=installed.org_id, author_id=butler, request=SealRequest(
        mailbox_id=installed.mailbox_id, to=["bob@remote.test"], subject="Auto", body="Hi"))
    assert (by_butler.state, by_butler.state_reason) == (SendState.AWAITING, "butler_release_required")
    dispatch.sweep(node, transport=sink.transport())
    assert [t.rcpt_tos for t in sink.handler.received] == [["ann@remote.test"]]
    with node.read() as conn:
        auto = conn.execute(select(send_manifests.c.auto_submitted).where(send_manifests.c.id == by_butler.id)).scalar()
    assert auto == "auto-replied"


@pytest.mark.parametrize("field,value,code", [
    ("to", ["not an address"], "E_ADDRESS_MALFORMED"),
    ("to", ["ann@remote.test\r\nBcc: victim@remote.test"], "E_HEADER_INJECTION"),
    ("cc", ["ann@@remote.test"], "E_ADDRESS_MALFORMED"),
    ("subject", "Hello\r\nBcc: victim@remote.test", "E_HEADER_INJECTION"),
    ("to", [], "E_NO_RECIPIENTS"),
])
def test_bad_input_is_refused_before_anything_is_stored(api: Any, node: Any, installed: Any, field: str,
                                                        value: Any, code: str) -> None:
    body: dict[str, Any] = {"mailbox_id": installed.mailbox_id, "to": ["ann@remote.test"], "subject": "Hi",
                            "body": "text"}
    body[field] = value
    r = api.post("/api/sends", json=body, headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (422, code)
    with node.read() as conn:
        assert conn.execute(select(func.count()).select_from(send_manifests)).scalar_one() == 0
        assert conn.execute(select(func.count()).select_from(send_recipients)).scalar_one() == 0
    assert not (node.settings.evidence_dir.exists() and any(node.settings.evidence_dir.rglob("*")))


def test_authority_sender_and_parent_refusals(api: Any, node: Any, installed: Any) -> None:
    admin = H(installed.token)
    bob = api.post("/api/users", json={"email": "bob@example.test"}, headers=admin).json()["user"]["id"]
    # The admin's own token; bob's is minted locally below.
    bob_token = api.post("/api/tokens", json={"label": "pipeline"}, headers=admin)
    assert bob_token.status_code == 201
    from mailnode.directory.tokens import create_token

    with node.begin() as conn:
        _, token = create_token(conn, org_id=installed.org_id, principal_id=bob, at=node.clock.now(), actor_id=None,
                                label="test")
    body = {"mailbox_id": installed.mailbox_id, "to": ["ann@remote.test"], "subject": "Hi", "body": "x"}
    r = api.post("/api/sends", json=body, headers=H(token))
    assert (r.status_code, r.json()["error"]) == (404, "E_MAY_NOT_SEND_AS_MAILBOX")
    api.post("/api/access", json={"subject_id": bob, "relation": "send.propose", "object_id": installed.mailbox_id},
             headers=admin)
    r = api.post("/api/sends", json={**body, "in_reply_to_message_id": "msg_01HZZZZZZZZZZZZZZZZZZZZZZZ"},
                 headers=H(token))
    assert (r.status_code, r.json()["error"]) == (404, "E_NO_SUCH_PARENT")
    api.patch(f"/api/mailboxes/{installed.mailbox_id}",
              json={"addresses": ["support@example.test", "help@example.test"]},
              headers=admin)
    r = api.post("/api/sends", json=body, headers=H(token))
    assert (r.status_code, r.json()["error"]) == (409, "E_SENDER_AMBIGUOUS")
    r = api.post("/api/sends", json={**body, "sender_address": "help@example.test"}, headers=H(token))
    assert r.status_code == 201 and r.json()["send"]["rfc_message_id"].endswith("@example.test")
    # Authority lost before dispatch: withheld, nothing handed over, no attempt spent.
    send_id = r.json()["send"]["id"]
    grants = api.get(f"/api/access?subject_id={bob}", headers=admin).json()["grants"]
    for g in grants:
        api.delete(f"/api/access/{g['id']}", headers=admin)
    node.clock.advance(60)

    class Never:
        capabilities = TransportCapabilities("never", 1, None, "none", "authored")

        async def submit(self, request: Submission) -> SubmitOutcome:
            raise AssertionError("nothing may be submitted")

        async def aclose(self) -> None:
            return None

    results = dispatch.sweep(node, transport=Never()).results  # type: ignore[arg-type]
    assert [(r.manifest_id, r.state, r.detail) for r in results] == [(send_id, "withheld", "authority_lost")]
    got = api.get(f"/api/sends/{send_id}", headers=admin).json()["send"]
    assert got["attempts"] == 0 and got["recipients"][0]["submission_state"] == "withheld"
    assert "no longer may send" in got["reason_words"]


class Raising:
    """A transport with a defect: it raises instead of classifying."""

    capabilities = TransportCapabilities("raising", 1, None, "none", "authored")

    async def submit(self, request: Submission) -> SubmitOutcome:
        raise RuntimeError("socket exploded")

    async def aclose(self) -> None:
        return None


def test_a_transport_that_raises_is_recorded_not_swallowed(api: Any, node: Any, installed: Any,
                                                           hold_zero: None, caplog: Any) -> None:
    body = {"mailbox_id": installed.mailbox_id, "to": ["ann@remote.test", "bob@remote.test"], "subject": "Hi",
            "body": "x"}
    send_id = api.post("/api/sends", json=body, headers=H(installed.token)).json()["send"]["id"]
    results = dispatch.sweep(node, transport=Raising()).results  # type: ignore[arg-type]
    assert [r.state for r in results] == ["outcome_unknown"]
    got = api.get(f"/api/sends/{send_id}", headers=H(installed.token)).json()["send"]
    assert got["state"] == "outcome_unknown" and "RuntimeError: socket exploded" in got["last_error"]
    states = sorted(r["submission_state"] for r in got["recipients"])
    assert states == ["held", "outcome_unknown"]  # the first raised; the second was never attempted
    assert got["retry"] == {"mode": "resend-may-duplicate", "basis": "duplicate_possible", "duplicate_possible": True}
    assert "send.transport_raised" in caplog.text
    audit = api.get("/api/audit?action=send.outcome_unknown", headers=H(installed.token)).json()["entries"]
    assert audit and audit[0]["outcome"] == "failed"
    # Never retried automatically.
    node.clock.advance(3600)
    assert dispatch.sweep(node, transport=Raising()).results == []  # type: ignore[arg-type]
    # retry-effect is refused (not proven); resend needs a reason and the risk accepted.
    r = api.post(f"/api/sends/{send_id}/retry", json={"mode": "retry-effect"}, headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (409, "E_RETRY_NOT_PROVEN")
    r = api.post(f"/api/sends/{send_id}/retry", json={"mode": "resend-may-duplicate", "reason": "customer asked"},
                 headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (422, "E_DUPLICATE_RISK_NOT_ACCEPTED")
    r = api.post(f"/api/sends/{send_id}/retry", json={"mode": "resend-may-duplicate", "reason": "customer asked",
                                                       "accept_duplicate_risk": True}, headers=H(installed.token))
    assert r.status_code == 200, r.text
    new = api.get(f"/api/sends/{r.json()['send']['id']}", headers=H(installed.token)).json()["send"]
    assert new["resend_of"] == send_id and new["state"] == "held"
    assert sorted(x["address"] for x in new["recipients"]) == ["ann@remote.test", "bob@remote.test"]
    r = api.post(f"/api/sends/{send_id}/retry", json={"mode": "again"}, headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (422, "E_RETRY_MODE_UNKNOWN")


def test_throttled_then_retry_effect_and_cancel(api: Any, node: Any, installed: Any, hold_zero: None) -> None:
    from mailnode.transports.base import SubmitState

    class Busy:
        capabilities = TransportCapabilities("busy", 1, None, "none", "authored")
        calls = 0

        async def submit(self, request: Submission) -> SubmitOutcome:
            Busy.calls += 1
            return SubmitOutcome(state=SubmitState.THROTTLED, error_code=421, detail="421 try later")

        async def aclose(self) -> None:
            return None

    send_id = api.post("/api/sends", json={"mailbox_id": installed.mailbox_id, "to": ["ann@remote.test"],
                                           "subject": "Hi", "body": "x"},
                       headers=H(installed.token)).json()["send"]["id"]
    assert [r.state for r in dispatch.sweep(node, transport=Busy()).results] == ["throttled"]  # type: ignore[arg-type]
    # Backed off: not movable until release_at.
    assert dispatch.sweep(node, transport=Busy()).results == []  # type: ignore[arg-type]
    got = api.get(f"/api/sends/{send_id}", headers=H(installed.token)).json()["send"]
    assert got["retry"]["mode"] == "retry-effect" and got["last_error"].endswith("421 try later")
    r = api.post(f"/api/sends/{send_id}/retry", json={"mode": "retry-effect"}, headers=H(installed.token))
    assert r.json()["send"]["state"] == "held"
    assert set(r.json()) == {"send"}  # the same send again: no resend_of (that is a resend's)
    r = api.post(f"/api/sends/{send_id}/cancel", headers=H(installed.token))
    assert r.json()["send"]["state"] == "cancelled"
    assert r.json()["send"]["recipients"][0]["submission_state"] == "cancelled"
    r = api.post(f"/api/sends/{send_id}/cancel", headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (409, "E_SEND_NOT_STOPPABLE")
    assert dispatch.sweep(node, transport=Busy()).results == []  # type: ignore[arg-type]
    assert Busy.calls == 1
    listed = api.get(f"/api/sends?mailbox_id={installed.mailbox_id}&state=cancelled", headers=H(installed.token))
    assert [s["id"] for s in listed.json()["sends"]] == [send_id]
    r = api.get("/api/sends?state=sent", headers=H(installed.token))
    assert (r.status_code, r.json()["error"]) == (422, "E_STATE_UNKNOWN")


def test_drafts_one_per_parent_author_only_and_sealed_from(api: Any, node: Any, installed: Any, listener: Any,
                                                           sink: Any, hold_zero: None) -> None:
    admin = H(installed.token)
    deliver(listener, inbound(), "customer@remote.test", ["support@example.test"])
    parent = _messages(api, installed)[0]["id"]
    d = {"mailbox_id": installed.mailbox_id, "in_reply_to_message_id": parent, "to": ["customer@remote.test"],
         "subject": "Re: order", "body": "draft"}
    r = api.post("/api/drafts", json=d, headers=admin)
    assert r.status_code == 201, r.text
    draft_id = r.json()["draft"]["id"]
    r = api.post("/api/drafts", json=d, headers=admin)
    assert (r.status_code, r.json()["error"]) == (409, "E_DRAFT_EXISTS") and draft_id in r.json()["message"]
    r = api.put(f"/api/drafts/{draft_id}", json={"body": "final words"}, headers=admin)
    assert r.json()["draft"]["body"] == "final words"
    r = api.put(f"/api/drafts/{draft_id}", json={"subject": "x\r\nBcc: a@b.test"}, headers=admin)
    assert r.json()["error"] == "E_HEADER_INJECTION"
    bob = api.post("/api/users", json={"email": "bob@example.test"}, headers=admin).json()["user"]["id"]
    from mailnode.directory.tokens import create_token

    with node.begin() as conn:
        _, token = create_token(conn, org_id=installed.org_id, principal_id=bob, at=node.clock.now(), actor_id=None,
                                label="test")
    assert api.get(f"/api/drafts/{draft_id}", headers=H(token)).json()["error"] == "E_NO_SUCH_DRAFT"
    assert api.post("/api/drafts", json=d, headers=H(token)).json()["error"] == "E_MAY_NOT_SEND_AS_MAILBOX"
    assert api.get("/api/drafts", headers=H(token)).json()["drafts"] == []
    r = api.post("/api/sends", json={"draft_id": draft_id}, headers=admin)
    assert r.status_code == 201, r.text
    with node.read() as conn:
        assert conn.execute(select(func.count()).select_from(drafts)).scalar_one() == 0
    dispatch.sweep(node, transport=sink.transport())
    assert b"final words" in sink.handler.received[0].content


def test_the_pure_movable_twin_agrees_with_the_sql(node: Any, installed: Any) -> None:
    from datetime import timedelta

    from sqlalchemy import update

    from mailnode.outbound.movable import movable_now, movable_now_sql
    from mailnode.outbound.seal import SealRequest, seal
    from mailnode.vocabulary.send_states import StateReason

    sid = seal(node, org_id=installed.org_id, author_id=installed.user_id, request=SealRequest(
        mailbox_id=installed.mailbox_id, to=["ann@remote.test"], subject="Hi", body="x")).id
    now = node.clock.now()
    for state in SendState:
        for reason in [None, *StateReason, "unheard_of"]:
            for offset in (-5, 0, 5):
                release = now + timedelta(seconds=offset)
                with node.begin() as conn:
                    conn.execute(update(send_manifests).where(send_manifests.c.id == sid).values(
                        state=state.value, state_reason=reason, release_at=release))
                    in_sql = conn.execute(select(send_manifests.c.id).where(
                        send_manifests.c.id == sid, movable_now_sql(now))).first() is not None
                assert in_sql == movable_now(state.value, reason, release, now), (state, reason, offset)


def test_seal_refuses_an_unknown_mailbox_id_shape(node: Any, installed: Any) -> None:
    from mailnode.outbound.seal import SealRequest, seal

    with pytest.raises(MailnodeError) as caught:
        seal(node, org_id=installed.org_id, author_id=installed.user_id, request=SealRequest(
            mailbox_id="mbx_nope", to=["a@remote.test"], subject="x", body="y"))
    assert caught.value.code == "E_ID_MALFORMED"


def test_the_send_command_seals_through_the_same_seal(node: Any, installed: Any, tmp_path: Any) -> None:
    import typer
    from typer.testing import CliRunner

    from mailnode.cli.send import register

    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:
        """A second command so Typer keeps the command name."""

    body = tmp_path / "body.txt"
    body.write_text("From a file\n", encoding="utf-8")
    runner = CliRunner()
    args = ["send", "--mailbox", "Support@example.test", "--to", "ann@remote.test", "--subject", "Hi",
            "--data-dir", str(node.settings.data_dir), "--json"]
    env = {"MAILNODE_DATABASE_URL": node.settings.database_url}
    done = runner.invoke(app, [*args, "--body-file", str(body)], env=env)
    assert done.exit_code == 0, done.output
    import json

    sent = json.loads(done.stdout)["send"]
    assert sent["state"] == "held" and sent["recipients"] == 1
    with node.read() as conn:
        row = conn.execute(select(send_manifests).where(send_manifests.c.id == sent["id"])).one()
    assert node.evidence.get(row.body_typed_sha256) == b"From a file\n"
    bad = runner.invoke(app, [*args[:4], "bad address", *args[5:], "--body", "x"], env=env)
    assert bad.exit_code == 1 and "E_ADDRESS_MALFORMED" in bad.output
    neither = runner.invoke(app, args, env=env)
    assert neither.exit_code == 1 and "E_BODY_REQUIRED" in neither.output
