"""``POST /api/mail`` and ``GET /api/mail/{id}`` attacked as an outsider would (spec/transactional.md §6):
idempotency keys reused with another mail, empty subjects, header injection, long junk, other principals'
and other organisations' sends. Every refusal is a stable code with what/why/fix, and nothing is sealed
or sent by a refused request (checked in the manifests and at the provider)."""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode.api.mail import ReplayAnswer, has_visible_character, realtime_replay_answer
from mailnode.authz import MAILBOX_RELATIONS, grant_unchecked
from mailnode.directory.domains import add_domain
from mailnode.directory.people import create_user
from mailnode.directory.tokens import create_token
from mailnode.ids import new_id
from mailnode.mail.mailboxes import create_mailbox
from mailnode.outbound.idempotency import FINGERPRINT_FIELDS, MailFingerprint, differing_fields
from mailnode.schema.directory import organisations
from mailnode.schema.outbound import send_manifests
from mailnode.vocabulary.send_states import SendState
from tests.conftest import bearer
from tests.support.resend_emulator import Fault

from .conftest import Org, mail_body


def _manifests(org: Org) -> int:
    with org.node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(send_manifests)).scalar_one())


def _assert_error(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = dict(r.json())
    assert body["error"] == code
    assert body["message"] and body["why"] and body["fix"], body
    return body


# --- idempotency keys -----------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "value"), [
    ("subject", "Upload resumed"),
    ("text", "Your upload is arriving again."),
    ("to", ["someone.else@remote.test"]),
    ("cc", ["copy@remote.test"]),
    ("bcc", ["hidden@remote.test"]),
])
def test_a_key_reused_for_a_different_realtime_mail_is_refused_and_sends_nothing(
        api: Any, org: Org, app_token: str, field: str, value: Any) -> None:
    h = bearer(app_token)
    first = api.post("/api/mail", json=mail_body(org), headers=h)
    assert first.status_code == 200, first.text
    sent = first.json()["mail"]["id"]
    before = (org.requests(), _manifests(org))
    r = api.post("/api/mail", json=mail_body(org, **{field: value}), headers=h)
    body = _assert_error(r, 409, "E_IDEMPOTENCY_KEY_REUSED")
    assert body["detail"]["send_id"] == sent and body["detail"]["differs"] == [field]
    assert sent in body["fix"]
    assert (org.requests(), _manifests(org)) == before, "a refused replay seals and sends nothing"
    got = api.get(f"/api/mail/{sent}", headers=h).json()["mail"]
    assert [r["address"] for r in got["recipients"]] == ["researcher@remote.test"]


def test_a_realtime_key_replayed_as_deferrable_is_refused_not_answered_with_the_realtime_send(
        api: Any, org: Org, app_token: str) -> None:
    h = bearer(app_token)
    assert api.post("/api/mail", json=mail_body(org, "realtime"), headers=h).status_code == 200
    r = api.post("/api/mail", json=mail_body(org, "deferrable"), headers=h)
    assert _assert_error(r, 409, "E_IDEMPOTENCY_KEY_REUSED")["detail"]["differs"] == ["mail_class"]


def test_a_deferrable_key_replayed_from_another_mailbox_is_refused(api: Any, org: Org, app_token: str) -> None:
    admin = bearer(org.installed.token)
    r = api.post("/api/mailboxes", json={"name": "Research", "addresses": ["research@example.test"]}, headers=admin)
    assert r.status_code == 201, r.text
    other = r.json()["mailbox"]["id"]
    me = api.get("/api/me", headers=bearer(app_token)).json()["me"]["id"]
    r = api.post("/api/access", json={"subject_id": me, "relation": "send.propose", "object_id": other}, headers=admin)
    assert r.status_code in (200, 201), r.text
    h = bearer(app_token)
    assert api.post("/api/mail", json=mail_body(org, "deferrable"), headers=h).status_code == 202
    r = api.post("/api/mail", json=mail_body(org, "deferrable", mailbox_id=other), headers=h)
    assert _assert_error(r, 409, "E_IDEMPOTENCY_KEY_REUSED")["detail"]["differs"] == ["mailbox_id"]
    assert _manifests(org) == 1


def test_the_same_mail_replayed_with_recipients_reordered_and_recased_answers_the_first_send(
        api: Any, org: Org, app_token: str) -> None:
    h = bearer(app_token)
    first = api.post("/api/mail", json=mail_body(org, to=["a@remote.test", "b@remote.test"]), headers=h)
    assert first.status_code == 200, first.text
    again = api.post("/api/mail", json=mail_body(org, to=["B@Remote.Test", "a@remote.test"]), headers=h)
    assert again.status_code == 200, again.text
    assert again.json()["mail"]["id"] == first.json()["mail"]["id"]
    assert org.requests() == 2, "one provider request per recipient, none for the replay"


def _fp(**changes: Any) -> MailFingerprint:
    base: dict[str, Any] = {"mailbox_id": "mbx_1", "mail_class": "realtime", "to": ("a@x.test",), "cc": (),
                            "bcc": (), "subject": "S", "text_sha256": hashlib.sha256(b"t").hexdigest()}
    base.update(changes)
    return MailFingerprint(**base)


@pytest.mark.parametrize(("asked", "differs"), [
    (_fp(), ()),
    (_fp(mailbox_id="mbx_2"), ("mailbox_id",)),
    (_fp(mail_class="deferrable"), ("mail_class",)),
    (_fp(to=("b@x.test",)), ("to",)),
    (_fp(to=(), cc=("a@x.test",)), ("to", "cc")),
    (_fp(bcc=("c@x.test",)), ("bcc",)),
    (_fp(subject="S "), ("subject",)),
    (_fp(text_sha256=hashlib.sha256(b"u").hexdigest()), ("text",)),
    (_fp(in_reply_to_message_id="msg_1"), ("in_reply_to_message_id",)),
    # Issue 15: display names, the HTML part and attachments are part of the mail too.
    (_fp(names=(("a@x.test", "Ann"),)), ("display_names",)),
    (_fp(html_sha256=hashlib.sha256(b"<p>t</p>").hexdigest()), ("html",)),
    (_fp(attachments=(("a.pdf", "application/pdf", "0" * 64),)), ("attachments",)),
    # Issue 20: application mail's own fields are part of the mail too.
    (_fp(from_name="Support"), ("from_name",)),
    (_fp(reply_to=("help@x.test",)), ("reply_to",)),
    (_fp(headers=(("X-Order-Id", "42"),)), ("headers",)),
    (_fp(tags=("invoice",)), ("tags",)),
    (_fp(metadata=(("order_id", "42"),)), ("metadata",)),
    (_fp(mailbox_id="mbx_2", mail_class="deferrable", to=(), cc=("z@x.test",), bcc=("y@x.test",), subject="",
         text_sha256="", in_reply_to_message_id="msg_1", names=(("z@x.test", "Zed"),), html_sha256="",
         attachments=(("a.pdf", "application/pdf", ""),), from_name="Z", reply_to=("r@x.test",),
         headers=(("X-A", "1"),), tags=("t",), metadata=(("k", "v"),)), FINGERPRINT_FIELDS),
])
def test_differing_fields_table(asked: MailFingerprint, differs: tuple[str, ...]) -> None:
    assert differing_fields(_fp(), asked) == differs


@pytest.mark.parametrize(("subject", "visible"), [
    ("", False), (" \t", False), ("\u200b", False), ("\u00a0", False), ("\u2060\ufeff", False),
    ("a", True), ("\u200bx", True), ("\U0001f600", True), ("\u05d0", True), ("\u200d\U0001f468", True),
])
def test_what_counts_as_a_visible_subject(subject: str, visible: bool) -> None:
    assert has_visible_character(subject) is visible


# --- input the route refuses before sealing -------------------------------------------------------


@pytest.mark.parametrize("subject", ["", "   ", "\t", "\u200b", "\u00a0\u200d", "\u2060 \ufeff"])
def test_a_mail_without_a_subject_is_refused_before_any_provider_request(
        api: Any, org: Org, app_token: str, subject: str) -> None:
    for cls in ("realtime", "deferrable"):
        r = api.post("/api/mail", json=mail_body(org, cls, key=f"{cls}-{subject!r}", subject=subject),
                     headers=bearer(app_token))
        _assert_error(r, 422, "E_MAIL_SUBJECT_EMPTY")
    assert (org.requests(), _manifests(org)) == (0, 0)


@pytest.mark.parametrize(("fields", "status", "code"), [
    ({"subject": "Hi\r\nBcc: evil@remote.test"}, 422, "E_HEADER_INJECTION"),
    ({"subject": "Hi\nX-Evil: 1"}, 422, "E_HEADER_INJECTION"),
    ({"subject": "Hi\x00"}, 422, "E_HEADER_INJECTION"),
    ({"to": ["a@remote.test\r\nBcc: evil@remote.test"]}, 422, "E_HEADER_INJECTION"),
    # A display name is accepted (issue 15); text around the address is not.
    ({"to": ['"Evil" <a@remote.test> trailing']}, 422, "E_ADDRESS_MALFORMED"),
    ({"to": ["=?utf-8?q?Evil=0D=0ABcc:_x@remote.test?= <a@remote.test>"]}, 422, "E_HEADER_INJECTION"),
    ({"to": ["a@remote.test, b@remote.test"]}, 422, "E_ADDRESS_MALFORMED"),
    ({"to": ["a@localhost"]}, 422, "E_ADDRESS_MALFORMED"),
    ({"to": ["a@[127.0.0.1]"]}, 422, "E_ADDRESS_MALFORMED"),
    ({"to": ["\u00fcser@remote.test"]}, 422, "E_ADDRESS_MALFORMED"),
    ({"to": []}, 422, "E_NO_RECIPIENTS"),
    ({"to": [f"r{i}@remote.test" for i in range(101)]}, 422, "E_TOO_MANY_RECIPIENTS"),
    ({"to": [5]}, 422, "E_REQUEST_INVALID"),
    ({"class": "correspondence"}, 422, "E_MAIL_CLASS_UNKNOWN"),
    ({"class": "REALTIME"}, 422, "E_MAIL_CLASS_UNKNOWN"),
    ({"class": 1}, 422, "E_REQUEST_INVALID"),
    ({"idempotency_key": ""}, 422, "E_REQUEST_INVALID"),
    ({"idempotency_key": "k" * 257}, 422, "E_REQUEST_INVALID"),
    ({"idempotency_key": "k\x00"}, 422, "E_IDEMPOTENCY_KEY_MALFORMED"),
    ({"idempotency_key": "k\r\nX-Evil: 1"}, 422, "E_IDEMPOTENCY_KEY_MALFORMED"),
    ({"mailbox_id": "mbx_bogus"}, 422, "E_ID_MALFORMED"),
    ({"mailbox_id": "mbx_01M8NDC63XK1QB9KVJ6955K55Q"}, 404, "E_MAY_NOT_SEND_AS_MAILBOX"),
    ({"sender_address": "ceo@example.test"}, 422, "E_REQUEST_INVALID"),
    ({"html": 5}, 422, "E_REQUEST_INVALID"),
    ({"text": None, "html": None}, 422, "E_MAIL_BODY_MISSING"),
])
def test_bad_input_is_a_stable_code_and_seals_nothing(api: Any, org: Org, app_token: str, fields: dict[str, Any],
                                                      status: int, code: str) -> None:
    r = api.post("/api/mail", json=mail_body(org, **fields), headers=bearer(app_token))
    _assert_error(r, status, code)
    assert (org.requests(), _manifests(org)) == (0, 0)


def test_an_unknown_class_is_not_echoed_back_at_any_length(api: Any, org: Org, app_token: str) -> None:
    junk = "x" * 100_000
    r = api.post("/api/mail", json=mail_body(org, **{"class": junk}), headers=bearer(app_token))
    body = _assert_error(r, 422, "E_MAIL_CLASS_UNKNOWN")
    assert len(r.content) < 2_000 and len(body["message"]) < 200


# --- whose mail -----------------------------------------------------------------------------------


def _second_org(org: Org) -> tuple[str, str]:
    """Another organisation on the same node: its administrator's token and its mailbox id."""
    now = org.clock.now()
    with org.node.begin() as conn:
        org_id = new_id("org")
        conn.execute(organisations.insert().values(id=org_id, name="Elsewhere", created_at=now))
        add_domain(conn, org_id=org_id, actor_id=None, at=now, domain="elsewhere.test", check_admin=False)
        user = create_user(conn, org_id=org_id, actor_id=None, at=now, email="eve@elsewhere.test", name="")
        grant_unchecked(conn, org_id=org_id, at=now, subject_id=user["id"], relation="org.admin",
                        object_id=org_id, actor_id=None)
        box = create_mailbox(conn, org_id=org_id, actor_id=None, at=now, name="Eve",
                             addresses=["eve@elsewhere.test"])
        for relation in MAILBOX_RELATIONS:
            grant_unchecked(conn, org_id=org_id, at=now, subject_id=user["id"], relation=relation,
                            object_id=box["id"], actor_id=None)
        _, token = create_token(conn, org_id=org_id, principal_id=user["id"], at=now, actor_id=None, label="t")
    return token, str(box["id"])


def test_another_organisation_cannot_read_send_or_replay_into_this_ones_mail(
        api: Any, org: Org, app_token: str) -> None:
    first = api.post("/api/mail", json=mail_body(org, "deferrable", key="shared-key"), headers=bearer(app_token))
    assert first.status_code == 202, first.text
    send_id = first.json()["mail"]["id"]
    eve, eve_box = _second_org(org)
    h = bearer(eve)
    _assert_error(api.get(f"/api/mail/{send_id}", headers=h), 404, "E_NO_SUCH_MAIL")
    _assert_error(api.get(f"/api/sends/{send_id}", headers=h), 404, "E_NO_SUCH_SEND")
    # This organisation's mailbox is not hers to send from, whatever the key.
    _assert_error(api.post("/api/mail", json=mail_body(org, "deferrable", key="shared-key"), headers=h),
                  404, "E_MAY_NOT_SEND_AS_MAILBOX")
    # The same key in her organisation is her own, new mail.
    mine = api.post("/api/mail", json=mail_body(org, "deferrable", key="shared-key", mailbox_id=eve_box), headers=h)
    assert mine.status_code == 202, mine.text
    assert mine.json()["mail"]["id"] != send_id and mine.json()["mail"]["mailbox_id"] == eve_box


def test_a_send_is_read_only_by_its_author_through_this_api(api: Any, org: Org, app_token: str) -> None:
    first = api.post("/api/mail", json=mail_body(org, "deferrable"), headers=bearer(app_token))
    send_id = first.json()["mail"]["id"]
    r = api.post("/api/apps", json={"name": "other-app"}, headers=bearer(org.installed.token))
    other = bearer(r.json()["token"])
    _assert_error(api.get(f"/api/mail/{send_id}", headers=other), 404, "E_NO_SUCH_MAIL")
    _assert_error(api.get(f"/api/mail/{send_id}", headers=bearer(org.installed.token)), 404, "E_NO_SUCH_MAIL")
    _assert_error(api.get("/api/mail/snd_bogus", headers=bearer(app_token)), 422, "E_ID_MALFORMED")
    _assert_error(api.get(f"/api/mail/{send_id}", headers=bearer("mn_not_a_token")), 401, "E_UNAUTHENTICATED")


@pytest.mark.parametrize(("method", "path", "body", "status", "code"), [
    ("POST", "/api/apps", {"name": "rogue"}, 403, "E_NOT_AN_ADMINISTRATOR"),
    ("GET", "/api/provider-status", None, 403, "E_NOT_AN_ADMINISTRATOR"),
    ("GET", "/api/settings/retention", None, 403, "E_NOT_AN_ADMINISTRATOR"),
    ("PATCH", "/api/settings/retention", {"ceiling_seconds": 60}, 403, "E_NOT_AN_ADMINISTRATOR"),
    ("POST", "/api/holds", {"mailbox_id": "MBX"}, 403, "E_NOT_AN_ADMINISTRATOR"),
    ("POST", "/api/me/contact-email", {"address": "app@remote.test"}, 403, "E_NOT_A_PERSON"),
    ("POST", "/api/me/contact-email/verify", {"code": "123456"}, 403, "E_NOT_A_PERSON"),
])
def test_an_application_calling_administrator_and_person_routes_is_refused(
        api: Any, org: Org, app_token: str, method: str, path: str, body: dict[str, Any] | None, status: int,
        code: str) -> None:
    if body is not None and body.get("mailbox_id") == "MBX":
        body = {**body, "mailbox_id": org.installed.mailbox_id}
    r = api.request(method, path, json=body, headers=bearer(app_token))
    _assert_error(r, status, code)
    assert org.requests() == 0
    retention = api.get("/api/settings/retention", headers=bearer(org.installed.token)).json()["retention"]
    assert retention["ceiling_seconds"] != 60
    assert api.get("/api/holds", headers=bearer(org.installed.token)).json()["holds"] == []


# --- a replay while the first request is still with the provider -----------------------------------


def test_a_realtime_replay_while_the_first_is_with_the_provider_says_so_and_sends_nothing(
        api: Any, org: Org, app_token: str) -> None:
    """A client that timed out and retries with its key must not read "cannot be sent" for a mail that is
    being sent: it gets 409 ``E_MAIL_IN_FLIGHT`` naming the send, and the settled answer after."""
    h = bearer(app_token)
    # The provider stores the mail, then takes a while to answer.
    org.emulator.add_fault(Fault(delay_after_accept=2.0))
    first: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: first.update(r=api.post("/api/mail", json=mail_body(org), headers=h)))
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not org.emulator.sends() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert org.emulator.sends(), "the first request reached the provider"
        replay = api.post("/api/mail", json=mail_body(org), headers=h)
    finally:
        thread.join(timeout=30)
    body = _assert_error(replay, 409, "E_MAIL_IN_FLIGHT")
    assert first["r"].status_code == 200, first["r"].text
    assert body["detail"]["send_id"] == first["r"].json()["mail"]["id"]
    settled = api.post("/api/mail", json=mail_body(org), headers=h)
    assert settled.status_code == 200 and settled.json()["mail"]["state"] == "handed_over"
    assert org.requests() == 1 and _manifests(org) == 1


@pytest.mark.parametrize("claimed", [False, True])
@pytest.mark.parametrize("state", list(SendState))
def test_realtime_replay_answer_is_total_over_the_states(state: SendState, claimed: bool) -> None:
    expected = {SendState.HANDED_OVER: ReplayAnswer.HANDED_OVER, SendState.HELD: ReplayAnswer.IN_FLIGHT,
                SendState.AWAITING: ReplayAnswer.IN_FLIGHT, SendState.THROTTLED: ReplayAnswer.IN_FLIGHT}
    if claimed:
        expected[SendState.OUTCOME_UNKNOWN] = ReplayAnswer.IN_FLIGHT
    assert realtime_replay_answer(state.value, claimed=claimed) is expected.get(state, ReplayAnswer.UNAVAILABLE)


@pytest.mark.parametrize("claimed", [False, True])
def test_realtime_replay_answer_fails_closed_on_a_state_it_does_not_know(claimed: bool) -> None:
    assert realtime_replay_answer("sent", claimed=claimed) is ReplayAnswer.UNAVAILABLE
