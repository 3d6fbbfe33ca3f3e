"""``/waiting`` over HTTP (``web.waiting``): the Butler sends to release beside the message they answer, release,
cancel and the bulk confirmation's counts; approvals with what, who and why, decided with a reason; domain pauses
for administrators; refusals in the API's words; the header count and its statement budget."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select, update

from mailnode import budgets
from mailnode.audit import audit_entries
from mailnode.authz import grant_unchecked
from mailnode.directory.tokens import Principal
from mailnode.governance import approvals
from mailnode.schema.directory import users
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.web import nav
from tests.search.conftest import World, mail
from tests.web.conftest import csrf_of, sign_in


def token_of(header: dict[str, str]) -> str:
    return header["Authorization"].removeprefix("Bearer ")


def seal(world: World, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    r = world.api.post("/api/sends", json={"mailbox_id": world.installed.mailbox_id, **body}, headers=headers)
    assert r.status_code == 201, r.text
    return dict(r.json()["send"])


def butler_proposal(world: World, subject: str = "Where is my parcel", n: int = 1) -> tuple[str, str]:
    """A Butler's reply sealed ``awaiting/butler_release_required`` to a delivered message; (send id, message id).

    The seal is the administrator's; the row is then made the Butler's gate, as ``butler.effects`` leaves it
    (the browser test drives the real Butler)."""
    mid = world.deliver(mail(subject=subject, body=f"It never came ({n}).", n=n))
    sent = seal(world, world.admin, in_reply_to_message_id=mid, body=f"We are on it ({n}).")
    with world.node.begin() as conn:
        conn.execute(update(send_manifests).where(send_manifests.c.id == sent["id"])
                     .values(author_id="btl_0000000000000000000000000a", state="awaiting",
                             state_reason="butler_release_required"))
        conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == sent["id"])
                     .values(submission_state="awaiting"))
    return str(sent["id"]), mid


def state_of(world: World, send_id: str) -> tuple[str, str | None]:
    with world.node.read() as conn:
        row = conn.execute(select(send_manifests.c.state, send_manifests.c.state_reason)
                           .where(send_manifests.c.id == send_id)).one()
    return row.state, row.state_reason


def approval_gated(world: World) -> tuple[str, dict[str, str], str]:
    """A policy requiring approval, a person ``bob`` who may decide it, and a send the administrator sealed
    behind it; (send id, bob's header, bob's id)."""
    bob, bob_h = world.person("bob@example.test", ("approval.decide", world.installed.mailbox_id),
                              ("send.propose", world.installed.mailbox_id))
    r = world.api.post("/api/policies", json={"name": "Second pair of eyes", "outcome": "require_approval",
                                              "conditions": {}, "stages": []}, headers=world.admin)
    assert r.status_code == 201, r.text
    p = world.api.post(f"/api/policies/{r.json()['policy']['id']}/publish", headers=world.admin)
    assert p.status_code == 200, p.text
    sent = seal(world, world.admin, to=["carol@remote.test"], subject="Refund approved", body="Your refund.")
    assert (sent["state"], sent["state_reason"]) == ("awaiting", "policy_approval_required")
    return str(sent["id"]), bob_h, bob


def signed_in_as(world: World, token: str) -> TestClient:
    """A fresh browser (its own cookies) signed in with ``token``."""
    client = TestClient(world.api.app)
    r = sign_in(client, token)
    assert r.status_code == 200, r.text
    return client


def header_count(text: str) -> int | None:
    found = re.search(r'id="waiting-count"[^>]*>(\d+)<', text)
    return int(found.group(1)) if found else None


def test_a_butler_proposal_is_shown_beside_the_message_it_answers_and_released(world: World) -> None:
    send_id, _ = butler_proposal(world)
    admin = signed_in_as(world, world.installed.token)
    page = admin.get("/waiting")
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert f'id="proposal-{send_id}"' in text and "Where is my parcel" in text
    assert "We are on it (1)." in text  # the full proposed text
    assert "It never came (1)." in text  # the message it answers, beside it
    assert "alice@remote.test" in text  # the recipient
    assert header_count(page.text) == 1
    r = admin.post(f"/waiting/sends/{send_id}/release", data={"csrf_token": csrf_of(page.text)})
    assert r.status_code == 200 and "Released: held until" in r.text
    assert state_of(world, send_id) == ("held", None)
    assert 'id="no-proposals"' in r.text and header_count(r.text) == 0


def test_cancel_stops_the_send(world: World) -> None:
    send_id, _ = butler_proposal(world)
    admin = signed_in_as(world, world.installed.token)
    page = admin.get("/waiting")
    r = admin.post(f"/waiting/sends/{send_id}/cancel", data={"csrf_token": csrf_of(page.text)})
    assert r.status_code == 200 and "Cancelled: it will not leave." in r.text
    assert state_of(world, send_id)[0] == "cancelled"


def test_a_release_the_api_refuses_shows_its_error(world: World) -> None:
    send_id, _ = butler_proposal(world)
    admin = signed_in_as(world, world.installed.token)
    page = admin.get("/waiting")
    assert admin.post(f"/waiting/sends/{send_id}/release", data={"csrf_token": csrf_of(page.text)}).status_code == 200
    again = admin.post(f"/waiting/sends/{send_id}/release", data={"csrf_token": csrf_of(page.text)})
    assert again.status_code == 409
    assert "<code>E_SEND_NOT_RELEASABLE</code>" in again.text
    assert "is not waiting for a release you can give" in again.text


def test_a_release_without_the_csrf_token_is_refused_and_changes_nothing(world: World) -> None:
    send_id, _ = butler_proposal(world)
    admin = signed_in_as(world, world.installed.token)
    r = admin.post(f"/waiting/sends/{send_id}/release", data={})
    assert r.status_code == 403 and "E_CSRF_INVALID" in r.text
    assert state_of(world, send_id) == ("awaiting", "butler_release_required")


def test_bulk_release_confirms_what_will_leave_before_releasing(world: World) -> None:
    first, _ = butler_proposal(world, "Parcel one", 1)
    second, _ = butler_proposal(world, "Parcel two", 2)
    admin = signed_in_as(world, world.installed.token)
    page = admin.get("/waiting")
    csrf = csrf_of(page.text)
    confirm = admin.post("/waiting/release", data={"csrf_token": csrf, "send_id": [first, second, "snd_gone"]})
    assert confirm.status_code == 200
    assert "2 sends to 2 recipients" in confirm.text
    assert 'id="confirm-gone"' in confirm.text and "snd_gone" in confirm.text
    # Nothing is released by the confirmation page itself.
    assert state_of(world, first) == state_of(world, second) == ("awaiting", "butler_release_required")
    done = admin.post("/waiting/release/confirm", data={"csrf_token": csrf, "send_id": [first, second]})
    assert done.status_code == 200 and done.text.count("Released: held until") == 2
    assert state_of(world, first)[0] == state_of(world, second)[0] == "held"


def test_bulk_with_nothing_ticked_is_refused(world: World) -> None:
    admin = signed_in_as(world, world.installed.token)
    page = admin.get("/waiting")
    r = admin.post("/waiting/release", data={"csrf_token": csrf_of(page.text)})
    assert r.status_code == 422 and "E_WAITING_NOTHING_TICKED" in r.text


def test_bulk_release_shows_each_refusal_beside_its_send(world: World) -> None:
    first, _ = butler_proposal(world, "Parcel one", 1)
    admin = signed_in_as(world, world.installed.token)
    csrf = csrf_of(admin.get("/waiting").text)
    done = admin.post("/waiting/release/confirm", data={"csrf_token": csrf, "send_id": [first, first + "x"]})
    assert done.status_code == 200
    assert done.text.count("Released: held until") == 1 and "E_SEND_NOT_RELEASABLE" in done.text


def test_a_person_without_send_propose_does_not_see_the_proposal_and_cannot_release_it(world: World) -> None:
    send_id, _ = butler_proposal(world)
    _, reader = world.person("reader@example.test", ("mailbox.content.read", world.installed.mailbox_id))
    client = signed_in_as(world, token_of(reader))
    page = client.get("/waiting")
    assert send_id not in page.text and 'id="nothing-to-decide"' in page.text
    assert header_count(page.text) == 0
    r = client.post(f"/waiting/sends/{send_id}/release", data={"csrf_token": csrf_of(page.text)})
    assert r.status_code == 409 and "E_SEND_NOT_RELEASABLE" in r.text
    assert state_of(world, send_id) == ("awaiting", "butler_release_required")


def test_a_releaser_who_may_not_read_the_mailbox_is_told_the_answered_message_is_hidden(world: World) -> None:
    send_id, _ = butler_proposal(world)
    _, releaser = world.person("releaser@example.test", ("send.propose", world.installed.mailbox_id))
    page = signed_in_as(world, token_of(releaser)).get("/waiting")
    text = html.unescape(page.text)
    assert f'id="parent-hidden-{send_id}"' in text and "not read its mail" in text
    assert "It never came (1)." not in text  # the answered message's text is not shown
    assert "We are on it (1)." in text  # the proposal's own text is (send.propose reads it: release-or-cancel)


def test_an_approval_shows_what_who_and_why_and_is_approved_with_a_reason(world: World) -> None:
    send_id, bob_h, bob = approval_gated(world)
    client = signed_in_as(world, token_of(bob_h))
    page = client.get("/waiting")
    text = html.unescape(page.text)
    assert "A send held for approval: Refund approved" in text and "carol@remote.test" in text
    assert "policy “Second pair of eyes” (version 1) requires approval" in text
    assert header_count(page.text) == 1
    aid = re.search(r'id="approval-(apr_[^"]+)"', page.text)
    assert aid is not None
    r = client.post(f"/waiting/approvals/{aid.group(1)}/decide",
                    data={"csrf_token": csrf_of(page.text), "decision": "approve", "reason": "Checked the invoice."})
    assert r.status_code == 200 and "Approved: every stage is filled" in r.text
    assert state_of(world, send_id) == ("held", None)
    with world.node.read() as conn:
        entry = conn.execute(select(audit_entries.c.detail).where(audit_entries.c.action == "approval.decided")).one()
    detail = entry.detail if isinstance(entry.detail, dict) else json.loads(entry.detail)
    assert detail["reason"] == "Checked the invoice." and header_count(r.text) == 0
    assert bob.startswith("usr_")


def test_the_requester_does_not_see_their_own_approval_and_a_deny_records_it(world: World) -> None:
    send_id, bob_h, _ = approval_gated(world)
    admin = signed_in_as(world, world.installed.token)
    assert 'id="no-approvals"' in admin.get("/waiting").text  # dual control: not their own request
    client = signed_in_as(world, token_of(bob_h))
    page = client.get("/waiting")
    aid = re.search(r'id="approval-(apr_[^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    r = client.post(f"/waiting/approvals/{aid}/decide", data={"csrf_token": csrf_of(page.text), "decision": "deny"})
    assert r.status_code == 200 and "Denied" in r.text
    assert state_of(world, send_id) == ("withheld", "approval_denied")


def test_a_bad_reason_or_a_second_decision_shows_the_apis_refusal(world: World) -> None:
    send_id, bob_h, _ = approval_gated(world)
    client = signed_in_as(world, token_of(bob_h))
    page = client.get("/waiting")
    csrf = csrf_of(page.text)
    aid = re.search(r'id="approval-(apr_[^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    long = "x" * (budgets.APPROVAL_DECISION_REASON_MAX_CHARS + 1)
    r = client.post(f"/waiting/approvals/{aid}/decide",
                    data={"csrf_token": csrf, "decision": "approve", "reason": long})
    assert r.status_code == 422 and "E_APPROVAL_REASON_INVALID" in r.text
    assert state_of(world, send_id) == ("awaiting", "policy_approval_required")  # nothing written
    bad = client.post(f"/waiting/approvals/{aid}/decide", data={"csrf_token": csrf, "decision": "maybe"})
    assert bad.status_code == 422 and "E_BAD_DECISION" in bad.text
    assert client.post(f"/waiting/approvals/{aid}/decide",
                       data={"csrf_token": csrf, "decision": "approve"}).status_code == 200
    again = client.post(f"/waiting/approvals/{aid}/decide", data={"csrf_token": csrf, "decision": "approve"})
    assert again.status_code == 409 and "E_APPROVAL_SETTLED" in again.text


def test_the_api_takes_the_reason_too(world: World) -> None:
    _, bob_h, _ = approval_gated(world)
    listed = world.api.get("/api/approvals", headers=bob_h).json()["approvals"]
    aid = listed[0]["id"]
    bad = world.api.post(f"/api/approvals/{aid}/decide", json={"decision": "approve", "reason": 5}, headers=bob_h)
    assert bad.status_code == 422 and bad.json()["error"] == "E_APPROVAL_REASON_INVALID"
    ok = world.api.post(f"/api/approvals/{aid}/decide", json={"decision": "approve", "reason": " fine "}, headers=bob_h)
    assert ok.status_code == 200 and ok.json()["decided"]["reason"] == "fine"


def administrator(world: World, email: str) -> dict[str, str]:
    """A second administrator (``org.admin`` on the organisation); their header."""
    uid, h = world.person(email)
    with world.node.begin() as conn:
        grant_unchecked(conn, org_id=world.installed.org_id, at=world.node.clock.now(), subject_id=uid,
                        relation="org.admin", object_id=world.installed.org_id, actor_id=None)
    return h


def test_a_domain_pause_waits_on_two_other_administrators_with_a_link_to_the_pauses(world: World) -> None:
    second, third = administrator(world, "second@example.test"), administrator(world, "third@example.test")
    r = world.api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "A loop is sending."},
                       headers=world.admin)
    assert r.status_code == 201, r.text
    assert 'id="no-approvals"' in signed_in_as(world, world.installed.token).get("/waiting").text
    client = signed_in_as(world, token_of(second))
    page = client.get("/waiting")
    text = html.unescape(page.text)
    assert "Pause the sending domain example.test" in text and "“A loop is sending.”" in text
    assert 'href="/limits/pauses"' in page.text and header_count(page.text) == 1
    aid = re.search(r'id="approval-(apr_[^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    one = client.post(f"/waiting/approvals/{aid}/decide",
                      data={"csrf_token": csrf_of(page.text), "decision": "approve"})
    assert one.status_code == 200 and "Recorded: the approval still waits on other people." in one.text
    assert header_count(one.text) == 0  # decided by this person: no longer waiting on them
    other = signed_in_as(world, token_of(third))
    page3 = other.get("/waiting")
    assert header_count(page3.text) == 1 and "Open now: stage 1." in page3.text
    two = other.post(f"/waiting/approvals/{aid}/decide",
                     data={"csrf_token": csrf_of(page3.text), "decision": "approve"})
    assert two.status_code == 200 and "Approved" in two.text
    assert world.api.get("/api/domain-pauses", headers=world.admin).json()["pauses"][0]["domain"] == "example.test"


def test_a_mailbox_decider_does_not_see_a_domain_pause(world: World) -> None:
    _, bob_h, _ = approval_gated(world)
    world.api.post("/api/domain-pauses", json={"domain": "example.test", "reason": "Loop."}, headers=world.admin)
    administrator(world, "second@example.test")
    administrator(world, "third@example.test")
    text = signed_in_as(world, token_of(bob_h)).get("/waiting").text
    assert "Pause the sending domain" not in text and header_count(text) == 1


def test_the_header_count_costs_a_fixed_number_of_statements(world: World) -> None:
    def counted(principal_id: str) -> tuple[int | None, int]:
        principal = Principal(org_id=world.installed.org_id, principal_id=principal_id, token_id="tok_x")
        with world.node.meter.measure() as m:
            n = nav.waiting_count(world.node, principal)
        return n, m.count

    nobody, _ = world.person("nobody@example.test")
    assert counted(nobody) == (0, 3)  # no scope: the scopes are read, so the 0 is the truth
    butler_proposal(world, "Parcel one", 1)
    _, _, bob = approval_gated(world)
    assert counted(bob) == (2, budgets.WAITING_COUNT_MAX_STATEMENTS)
    butler_proposal(world, "Parcel two", 2)  # sealed under the policy: a Butler send and its approval
    seal(world, world.admin, to=["dan@remote.test"], subject="Second refund", body="Another.")
    # Five things waiting on bob cost the same statements as two.
    assert counted(bob) == (5, budgets.WAITING_COUNT_MAX_STATEMENTS)


def test_the_page_costs_the_same_statements_with_one_row_or_several(world: World) -> None:
    def statements(client: TestClient) -> int:
        with world.node.meter.measure() as m:
            assert client.get("/waiting").status_code == 200
        return m.count

    butler_proposal(world, "Parcel one", 1)
    _, bob_h, _ = approval_gated(world)
    client = signed_in_as(world, token_of(bob_h))
    one = statements(client)
    butler_proposal(world, "Parcel two", 2)
    butler_proposal(world, "Parcel three", 3)
    seal(world, world.admin, to=["dan@remote.test"], subject="Second refund", body="Another.")
    assert statements(client) == one
    with world.node.read() as conn, world.node.meter.measure() as m:
        scopes = approvals.scopes_of(conn, org_id=world.installed.org_id, caller_id=bob_id(world))
        approvals.waiting_on(conn, org_id=world.installed.org_id, caller_id=bob_id(world), scopes=scopes, limit=50)
    assert m.count <= budgets.WAITING_PAGE_MAX_STATEMENTS


def bob_id(world: World) -> str:
    with world.node.read() as conn:
        return str(conn.execute(select(users.c.id).where(users.c.email == "bob@example.test")).scalar_one())


def test_a_hold_lift_waits_on_the_mailboxs_deciders_with_a_link_to_the_holds(world: World) -> None:
    box = world.installed.mailbox_id
    _, d1 = world.person("d1@example.test", ("approval.decide", box))
    world.person("d2@example.test", ("approval.decide", box))
    hold = world.api.post("/api/holds", json={"mailbox_id": box, "matter_id": "M-7"}, headers=world.admin)
    assert hold.status_code == 201, hold.text
    asked = world.api.post(f"/api/holds/{hold.json()['hold']['id']}/lift", json={"reason": "matter closed"},
                           headers=world.admin)
    assert asked.status_code == 202, asked.text
    client = signed_in_as(world, token_of(d1))
    page = client.get("/waiting")
    text = html.unescape(page.text)
    assert "(matter M-7)" in text and "the hold is in force" in text and "“matter closed”" in text
    assert 'href="/limits/holds"' in page.text and header_count(page.text) == 1
    aid = asked.json()["lift"]["approval_id"]
    one = client.post(f"/waiting/approvals/{aid}/decide",
                      data={"csrf_token": csrf_of(page.text), "decision": "approve"})
    assert one.status_code == 200 and "still waits on other people" in one.text
    assert world.api.get("/api/holds", headers=world.admin).json()["holds"][0]["in_force"] is True
