"""Notices attacked through their idempotency key, and what a notice and a read say once retention deleted a
send's body (issue 9 follow-up; spec/transactional.md §1, §5).

A notice is sealed with its reader as the author; the sweep heals a crash between the seal and the write of
``notices.send_id`` by looking the send up under the notice's key. A person who had sealed mail of their
own under the notice id must not have it recorded as the notice: the key is in the node's namespace
(``mailnode:notice:<id>``, which ``POST /api/mail`` refuses) and only system mail is adopted under the bare
id. A send withheld ``retention_deleted`` is told in words that say so, not "withheld at hand-over", and
``GET /api/mail/{id}`` says ``content_deleted_at``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode import audit
from mailnode.ids import new_id
from mailnode.notices import io as notices_io
from mailnode.notices import rules as notices
from mailnode.notices.rules import (
    FAILURE_WORDS,
    NODE_KEY_PREFIX,
    WITHHELD_WORDS,
    SendFailure,
    failure_of_audit,
    failure_words,
    is_notice_send,
    notice_idempotency_key,
)
from mailnode.outbound.seal import SealRequest, seal
from mailnode.retention import io as retention_io
from mailnode.schema.outbound import send_manifests
from mailnode.vocabulary.send_states import STATE_OF_REASON, SendState, StateReason
from tests.conftest import bearer

from .conftest import Org, mail_body

DAY = 86_400
NID = "ntf_01M8NG8C7YX0MJY0N9ZA1XD4K7"


def _manifests(org: Org) -> int:
    with org.node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(send_manifests)).scalar_one())


def _pause_placed(org: Org) -> list[str]:
    """A domain pause the administrator hears of: its notice written, not yet sealed."""
    pause_id = new_id("dpz")
    now = org.node.clock.now()
    with org.node.begin() as conn:
        audit.append(conn, org_id=org.installed.org_id, at=now, action="domain.pause_placed", actor_id=None,
                     subject=pause_id, detail={"pause_id": pause_id, "domain": "example.test"})
        pending, _ = notices_io.collect(conn, org.installed.org_id, now, "none")
        return [nid for p in pending for nid in notices_io.write(conn, org.installed.org_id, p, now)]


def _notice(org: Org, notice_id: str) -> Any:
    with org.node.read() as conn:
        return next(n for n in notices_io.notices_of(conn, org.installed.org_id) if n.id == notice_id)


# --- the notice's key ----------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "auto_submitted", "mail_class", "adopted"), [
    (notice_idempotency_key(NID), "auto-generated", "deferrable", True),
    # Only the node writes keys in its namespace, so what is under one is the notice's.
    (notice_idempotency_key(NID), None, "deferrable", True),
    # The bare id (notices sealed before the key was namespaced): only the node's own mail.
    (NID, "auto-generated", "deferrable", True),
    (NID, None, "deferrable", False),
    (NID, "auto-generated", "realtime", False),
    (NID, "auto-replied", "deferrable", False),
    (NID, "auto-generated", "correspondence", False),
    (NID, "auto-generated", "teleported", False),
    ("something-else", "auto-generated", "deferrable", False),
    (notice_idempotency_key("ntf_01M8NG8C7YX0MJY0N9ZA1XD4K8"), "auto-generated", "deferrable", False),
])
def test_which_send_under_a_notice_key_is_adopted(key: str, auto_submitted: str | None, mail_class: str,
                                                  adopted: bool) -> None:
    assert is_notice_send(key=key, notice_id=NID, auto_submitted=auto_submitted, mail_class=mail_class) is adopted


def test_the_notice_key_is_in_the_nodes_namespace() -> None:
    assert notice_idempotency_key(NID) == f"{NODE_KEY_PREFIX}notice:{NID}"
    with pytest.raises(ValueError):
        notice_idempotency_key("snd_01M8NG8C7YX0MJY0N9ZA1XD4K7")


def test_a_persons_mail_under_the_notice_id_is_not_recorded_as_the_notice(api: Any, org: Org) -> None:
    [nid] = _pause_placed(org)
    h = bearer(org.installed.token)
    r = api.post("/api/mail", json=mail_body(org, "deferrable", key=nid, subject="Ignore the pause"), headers=h)
    assert r.status_code == 202, r.text
    own = r.json()["mail"]["id"]
    report = notices_io.run_pass(org.node)[org.installed.org_id]
    assert report.sealed == [nid] and report.seal_refused == []
    notice = _notice(org, nid)
    assert notice.send_id is not None and notice.send_id != own
    sent = org.send(notice.send_id)
    assert (sent.subject, sent.auto_submitted, sent.mail_class) == (
        notices_io.SUBJECT_OF_KIND[notices.NoticeKind.DOMAIN_PAUSE_PLACED], "auto-generated", "deferrable")
    assert sent.idempotency_key == notice_idempotency_key(nid)
    # The person's own mail is still theirs, as they wrote it.
    assert (org.send(own).subject, org.send(own).auto_submitted) == ("Ignore the pause", None)
    # A second pass changes nothing.
    assert notices_io.run_pass(org.node)[org.installed.org_id].sealed == []
    assert _notice(org, nid).send_id == notice.send_id


@pytest.mark.parametrize("key", [f"{NODE_KEY_PREFIX}notice:{NID}", f"{NODE_KEY_PREFIX}anything"])
def test_a_caller_cannot_use_a_key_in_the_nodes_namespace(api: Any, org: Org, key: str) -> None:
    r = api.post("/api/mail", json=mail_body(org, "deferrable", key=key), headers=bearer(org.installed.token))
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "E_IDEMPOTENCY_KEY_RESERVED"
    assert body["message"] and body["why"] and NODE_KEY_PREFIX in body["fix"]
    assert _manifests(org) == 0 and org.requests() == 0


def test_a_notice_sealed_under_its_key_before_a_crash_is_adopted_not_sealed_twice(org: Org) -> None:
    [nid] = _pause_placed(org)
    row = _notice(org, nid)
    # The seal committed, then the process died before ``notices.send_id`` was written.
    sent = seal(org.node, org_id=org.installed.org_id, author_id=row.recipient_user_id, request=SealRequest(
        mailbox_id=org.installed.mailbox_id, to=[row.address], subject=row.subject, body=row.body, notice=True,
        idempotency_key=notice_idempotency_key(nid)))
    assert notices_io.run_pass(org.node)[org.installed.org_id].sealed == [nid]
    assert _notice(org, nid).send_id == sent.id
    assert _manifests(org) == 1


# --- the words of a withheld send ----------------------------------------------------------------

WITHHELD_REASONS = [r for r, s in STATE_OF_REASON.items() if s is SendState.WITHHELD]

#: What the notice must say for each withheld reason (a fragment each): the cause, in the field's words.
EXPECTED_FRAGMENT: dict[StateReason, str] = {
    StateReason.POLICY_DENIED: "a policy forbids it",
    StateReason.APPROVAL_UNSATISFIABLE: "nobody can give the approval",
    StateReason.APPROVAL_DENIED: "an approver refused it",
    StateReason.DOMAIN_PAUSED: "its domain is paused",
    StateReason.AUTHORITY_LOST: "no longer may send",
    StateReason.APPROVAL_REVOKED: "approval was withdrawn",
    StateReason.APPROVER_INELIGIBLE: "no longer may approve",
    StateReason.POLICY_STRICTER: "policy became stricter",
    StateReason.APPROVAL_EXPIRED: "approval expired",
    StateReason.EVIDENCE_CHANGED: "no longer matches what was sealed",
    StateReason.GAVE_UP: "give-up age",
    StateReason.REALTIME_NOT_RETRIED: "tried once",
    StateReason.RETENTION_DELETED: "retention setting deleted its content",
    StateReason.NOT_CLASSIFIED: "not one mailnode knows",
}


def test_the_withheld_words_are_total_over_the_withheld_reasons() -> None:
    assert set(WITHHELD_WORDS) == set(WITHHELD_REASONS) == set(EXPECTED_FRAGMENT)


@pytest.mark.parametrize("reason", WITHHELD_REASONS)
def test_a_withheld_send_is_told_what_withheld_it(reason: StateReason) -> None:
    failure = failure_of_audit("send.withheld", reason.value, "correspondence")
    assert failure is not None
    words = failure_words(failure, reason.value)
    assert words.startswith("did not go out: ")
    assert EXPECTED_FRAGMENT[reason] in words
    # No withholding's words claim a place they did not happen: the plain words name none.
    assert "hand-over" not in words


@pytest.mark.parametrize("reason", [None, "teleported"])
def test_a_withheld_send_without_a_known_reason_gets_the_plain_words(reason: str | None) -> None:
    assert failure_words(SendFailure.WITHHELD, reason) == FAILURE_WORDS[SendFailure.WITHHELD]
    assert "hand-over" not in FAILURE_WORDS[SendFailure.WITHHELD]


@pytest.mark.parametrize("failure", [f for f in SendFailure if f is not SendFailure.WITHHELD])
def test_other_failures_keep_their_words_whatever_the_reason(failure: SendFailure) -> None:
    assert failure_words(failure, StateReason.RETENTION_DELETED.value) == FAILURE_WORDS[failure]


def test_a_send_retention_deleted_is_told_so_and_read_so(api: Any, org: Org, app_token: str) -> None:
    """End to end: a person's deferrable mail and an application's sit unsent past the retention ceiling;
    the purge withholds both; the person's notice says retention deleted it, the application's read says
    ``content_deleted_at``."""
    mine = org.deferrable(subject="Quarterly figures")
    r = api.post("/api/mail", json=mail_body(org, "deferrable", key="k-late"), headers=bearer(app_token))
    assert r.status_code == 202, r.text
    theirs = r.json()["mail"]["id"]
    assert api.get(f"/api/mail/{theirs}", headers=bearer(app_token)).json()["mail"]["content_deleted_at"] is None
    later = org.clock.now() + timedelta(seconds=15 * DAY)
    report = retention_io.run_pass(org.node, later).sweeps[org.installed.org_id]
    assert {mine.id, theirs} <= set(report.purged)
    assert (org.send(mine.id).state, org.send(mine.id).state_reason) == ("withheld", "retention_deleted")
    got = api.get(f"/api/mail/{theirs}", headers=bearer(app_token)).json()["mail"]
    assert got["state"] == "withheld" and got["state_reason"] == "retention_deleted"
    assert got["content_deleted_at"] == later.isoformat()
    notices_io.run_pass(org.node)
    with org.node.read() as conn:
        told = [n for n in notices_io.notices_of(conn, org.installed.org_id, ["send_failed"])
                if mine.id in (n.about or [])]
    assert len(told) == 1
    body = told[0].body
    assert "retention setting deleted its content" in body and "hand-over" not in body
    assert "(withheld)" in body
