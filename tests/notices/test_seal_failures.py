"""One bad notice does not stop its pass (issue 9 "Notices"): a notice the seal refuses is recorded where a
person looks (the log and the audit trail), the rest of the page is sealed, and the refused one is tried
again later, never at the head of the page; an error that is not the notice's own still ends the pass."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from mailnode import audit
from mailnode.audit import audit_entries
from mailnode.ids import new_id
from mailnode.notices import io as notices_io
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.directory_contacts import contact_addresses
from tests.conftest import bearer
from tests.governance.conftest import World


@pytest.fixture
def org(node: Any, installed: Any) -> World:
    """A builder over an installed node."""
    return World(node, installed)


def _pause_placed(org: World) -> None:
    pause_id = new_id("dpz")
    with org.node.begin() as conn:
        audit.append(conn, org_id=org.org_id, at=org.node.clock.now(), action="domain.pause_placed", actor_id=None,
                     subject=pause_id, detail={"pause_id": pause_id, "domain": "example.test"})


def _send_refused(org: World, author_id: str) -> None:
    """A send of ``author_id``'s the transport refused: a notice for that person alone."""
    sid, _ = org.manifest(state="refused", author_id=author_id)
    with org.node.begin() as conn:
        audit.append(conn, org_id=org.org_id, at=org.node.clock.now(), action="send.refused", actor_id=None,
                     subject=sid, detail={})


def _written_not_sealed(org: World) -> list[str]:
    """Read the facts and write their notices now, without sealing (the first half of a pass)."""
    now = org.node.clock.now()
    with org.node.begin() as conn:
        pending, _ = notices_io.collect(conn, org.org_id, now, "none")
        return [nid for p in pending for nid in notices_io.write(conn, org.org_id, p, now)]


def _contact(org: World, user_id: str, address: str) -> None:
    """A contact address as stored before addresses were checked (a backfill): the seal refuses it."""
    with org.node.begin() as conn:
        conn.execute(contact_addresses.insert().values(user_id=user_id, org_id=org.org_id, address=address,
                                                       verified=False, updated_at=org.node.clock.now()))


def _notice(org: World, notice_id: str) -> Any:
    with org.node.read() as conn:
        return next(n for n in notices_io.notices_of(conn, org.org_id) if n.id == notice_id)


def _refusals(org: World, notice_id: str) -> list[dict[str, Any]]:
    a = audit_entries.c
    with org.node.read() as conn:
        rows = conn.execute(audit_entries.select().where(a.action == "notice.seal_failed", a.subject == notice_id)
                            .order_by(a.seq)).all()
    assert all(r.actor_id is None and r.outcome == "failed" for r in rows)
    return [json.loads(r.detail) if isinstance(r.detail, str) else dict(r.detail) for r in rows]


def test_an_unsealable_notice_at_the_head_does_not_stop_the_one_behind_it(
        org: World, api: Any, caplog: pytest.LogCaptureFixture) -> None:
    _contact(org, org.i.user_id, "alex at example")
    _pause_placed(org)
    [bad] = _written_not_sealed(org)
    org.node.clock.advance(1)  # type: ignore[attr-defined]
    blake = org.person("blake@example.test")
    _send_refused(org, blake.id)

    with caplog.at_level(logging.ERROR, logger="mailnode.notices"):
        report = notices_io.run_pass(org.node)[org.org_id]
    [good] = report.written
    assert _notice(org, good).recipient_user_id == blake.id
    assert report.seal_refused == [bad]
    assert report.sealed == [good] and _notice(org, good).send_id is not None
    assert _notice(org, bad).send_id is None
    [refusal] = _refusals(org, bad)
    assert refusal["code"] == "E_ADDRESS_MALFORMED" and refusal["attempt"] == 1
    assert refusal["address"] == "alex at example" and refusal["fix"]
    [line] = [r for r in caplog.records if r.getMessage().startswith("notice.seal_failed")]
    assert line.levelno == logging.ERROR and bad in line.getMessage() and "E_ADDRESS_MALFORMED" in line.getMessage()

    # Not due again until its retry delay: the next pass neither tries it nor adds to the audit trail.
    assert notices_io.run_pass(org.node)[org.org_id].seal_refused == []
    assert len(_refusals(org, bad)) == 1
    org.node.clock.advance(30)  # type: ignore[attr-defined]
    assert notices_io.run_pass(org.node)[org.org_id].seal_refused == [bad]
    assert [r["attempt"] for r in _refusals(org, bad)] == [1, 2]
    org.node.clock.advance(30)  # type: ignore[attr-defined]
    assert notices_io.run_pass(org.node)[org.org_id].seal_refused == [], "the second wait is twice the first"

    # Alex sets a working contact address (the audit entry's fix): the next due try goes there.
    r = api.post("/api/me/contact-email", json={"address": "alex.new@example.test"}, headers=bearer(org.i.token))
    assert r.status_code == 200, r.text
    org.node.clock.advance(30)  # type: ignore[attr-defined]
    assert notices_io.run_pass(org.node)[org.org_id].sealed == [bad]
    notice = _notice(org, bad)
    assert notice.send_id is not None and notice.address == "alex.new@example.test"


def test_refused_notices_wait_behind_fresh_ones_so_a_full_page_of_them_starves_nothing(org: World) -> None:
    # Three administrators whose addresses the seal refuses, and a page of two.
    for n in range(3):
        person = org.admin_person(f"admin{n}@example.test")
        _contact(org, person.id, f"admin{n} at example")
    _contact(org, org.i.user_id, "alex at example")
    _pause_placed(org)
    refused = _written_not_sealed(org)
    assert len(refused) == 4
    for _ in range(2):
        assert len(notices_io.seal_pending(org.node, org.org_id, page_max=2).refused) == 2
    org.node.clock.advance(60)  # type: ignore[attr-defined]
    blake = org.person("blake@example.test")
    _send_refused(org, blake.id)
    [fresh] = _written_not_sealed(org)
    assert _notice(org, fresh).recipient_user_id == blake.id
    # All four refused ones are due again, but the fresh notice comes first.
    done = notices_io.seal_pending(org.node, org.org_id, page_max=2)
    assert done.sealed == [fresh] and len(done.refused) == 1


def _evidence_store_is_a_file(org: World) -> Callable[[], None]:
    root = org.node.settings.evidence_dir
    root.mkdir(parents=True, exist_ok=True)
    away = root.with_name("evidence.away")
    shutil.move(str(root), str(away))
    root.write_text("not a directory")

    def undo() -> None:
        root.unlink()
        shutil.move(str(away), str(root))
    return undo


def _a_table_the_seal_writes_is_gone(org: World) -> Callable[[], None]:
    with org.node.begin() as conn:
        conn.execute(text("ALTER TABLE send_recipients RENAME TO send_recipients_away"))

    def undo() -> None:
        with org.node.begin() as conn:
            conn.execute(text("ALTER TABLE send_recipients_away RENAME TO send_recipients"))
    return undo


@pytest.mark.parametrize(("fault", "raised"), [(_evidence_store_is_a_file, OSError),
                                               (_a_table_the_seal_writes_is_gone, DBAPIError)])
def test_an_error_that_is_not_the_notices_own_ends_the_pass_and_marks_nothing(
        org: World, fault: Callable[[World], Callable[[], None]], raised: type[Exception]) -> None:
    _pause_placed(org)
    [notice] = _written_not_sealed(org)
    undo = fault(org)
    with pytest.raises(raised):
        notices_io.run_pass(org.node)
    undo()
    assert _notice(org, notice).send_id is None and _refusals(org, notice) == []
    assert notices_io.run_pass(org.node)[org.org_id].sealed == [notice]


def test_a_notice_sealed_before_a_crash_keeps_the_address_it_went_to(org: World) -> None:
    _pause_placed(org)
    [nid] = _written_not_sealed(org)
    row = _notice(org, nid)
    # The seal committed, then the process died before ``notices.send_id`` was written.
    sent = seal(org.node, org_id=org.org_id, author_id=row.recipient_user_id, request=SealRequest(
        mailbox_id=org.i.mailbox_id, to=[row.address], subject=row.subject, body=row.body, notice=True,
        idempotency_key=nid))
    _contact(org, org.i.user_id, "alex.later@example.test")
    assert notices_io.run_pass(org.node)[org.org_id].sealed == [nid]
    healed = _notice(org, nid)
    assert (healed.send_id, healed.address) == (sent.id, "alex@example.test")
