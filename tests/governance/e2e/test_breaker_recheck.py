"""A send a rate breaker still gates leaves the dispatch query until its recheck time (spec/transactional.md
§3, issue 9 "The sweeper"): what ``GET /api/sends/{id}`` shows for it, that the sweep does not read it
again before then, and that one organisation's gated sends never take another organisation's place in a
sweep's batch. Real sweeps into a real SMTP sink."""

from __future__ import annotations

from datetime import timedelta

from mailnode import budgets
from mailnode.authz import MAILBOX_RELATIONS, grant_unchecked
from mailnode.directory.domains import add_domain
from mailnode.directory.people import create_user
from mailnode.ids import new_id
from mailnode.mail.mailboxes import create_mailbox
from mailnode.outbound import dispatch
from mailnode.outbound.seal import Sealed, SealRequest, seal
from mailnode.schema.directory import organisations
from tests.governance.e2e.conftest import Org


def _other_organisation(org: Org) -> tuple[str, str, str]:
    """A second organisation on the same node, with its own domain, sender and mailbox: (org, user, mailbox)."""
    now = org.node.clock.now()
    with org.node.begin() as conn:
        org_id = new_id("org")
        conn.execute(organisations.insert().values(id=org_id, name="Other Ltd", created_at=now))
        add_domain(conn, org_id=org_id, actor_id=None, at=now, domain="other-org.test", check_admin=False)
        user = create_user(conn, org_id=org_id, actor_id=None, at=now, email="bo@other-org.test", name="")
        box = create_mailbox(conn, org_id=org_id, actor_id=None, at=now, name="Desk",
                             addresses=["desk@other-org.test"], hold_window_seconds=0)
        for relation in MAILBOX_RELATIONS:
            grant_unchecked(conn, org_id=org_id, at=now, subject_id=user["id"], relation=relation,
                            object_id=box["id"], actor_id=None)
    return org_id, str(user["id"]), str(box["id"])


def _seal(org: Org, to: str, *, org_id: str | None = None, author_id: str | None = None,
          mailbox_id: str | None = None) -> Sealed:
    return seal(org.node, org_id=org_id or org.org_id, author_id=author_id or org.admin.id,
                request=SealRequest(mailbox_id=mailbox_id or org.i.mailbox_id, to=[to], subject="Invoice",
                                    body="Attached."))


def test_a_gated_send_shows_when_it_is_asked_again_and_no_sweep_reads_it_before(org: Org) -> None:
    sent = org.seal()
    org.trip_volume()
    gated_at = org.node.clock.now()
    assert [r.detail for r in org.sweep().results] == ["breaker_volume"]
    recheck_at = gated_at + timedelta(seconds=budgets.BREAKER_RECHECK_SECONDS)
    read = org.read(sent["id"])
    assert (read["state"], read["state_reason"]) == ("awaiting", "breaker_volume")
    assert read["release_at"] == recheck_at.isoformat()
    assert "volume: 2 of 1 recipients handed over in the last 60 min" in read["last_error"]
    assert read["last_error"].endswith(
        f"The node asks the breakers again at {recheck_at.isoformat(timespec='seconds')}.")
    [entry] = org.entries("send.rate_limited", sent["id"])
    assert entry.detail["recheck_at"] == recheck_at.isoformat()
    # Until the recheck time the dispatch query does not return it, however many sweeps run.
    org.node.clock.advance(budgets.BREAKER_RECHECK_SECONDS - 1)
    assert dispatch.due_ids(org.node) == [] and org.sweep().results == []
    # At the recheck time it is read once more, found still gated, and written the next recheck time.
    org.node.clock.advance(1)
    assert dispatch.due_ids(org.node) == [sent["id"]]
    assert [r.detail for r in org.sweep().results] == ["breaker_volume"]
    again = org.read(sent["id"])
    assert again["release_at"] == (recheck_at + timedelta(seconds=budgets.BREAKER_RECHECK_SECONDS)).isoformat()
    assert again["state_at"] == read["state_at"], "a recheck is not a new gate"
    assert len(org.entries("send.rate_limited", sent["id"])) == 1
    # When the window clears, the first sweep after the recheck time hands it over.
    org.node.clock.set(gated_at + timedelta(seconds=budgets.BREAKER_VOLUME_WINDOW_SECONDS + 1))
    org.sweep()
    assert org.received() == ["ann@remote.test"]
    assert org.read(sent["id"])["state"] == "handed_over"


def test_one_organisations_gated_sends_do_not_take_anothers_place_in_a_batch(org: Org) -> None:
    org.trip_volume()
    gated = [_seal(org, f"a{i}@remote.test") for i in range(budgets.DISPATCH_BATCH_MAX + 1)]
    assert {s.state_reason for s in gated} == {"breaker_volume"}
    # The other organisation's send is sealed after every gated one: the oldest release_at is not its.
    org.node.clock.advance(1)
    other_org, other_user, other_box = _other_organisation(org)
    ordinary = _seal(org, "b@remote.test", org_id=other_org, author_id=other_user, mailbox_id=other_box)
    assert ordinary.state.value == "held"
    first = org.sweep()
    assert org.received() == ["b@remote.test"]
    assert first.results[0].manifest_id == ordinary.id
    assert [r.detail for r in first.results[1:]] == ["breaker_volume"] * (budgets.DISPATCH_BATCH_MAX - 1)
    # Each gated send the batch read was written its recheck time; the rest are read by the next sweep.
    second = org.sweep()
    assert sorted(r.manifest_id for r in second.results) == sorted(
        {s.id for s in gated} - {r.manifest_id for r in first.results})
    assert org.sweep().results == []
    assert org.received() == ["b@remote.test"]
