"""Giving up extends retention (seed 002, "the more important half"; issue 17 item 3).

A notice that gives up will never tell its person, so what it is about, and the send's own body, get a
fresh grace period from the give-up: the content must not go back on the clock the notice was racing.
Reproduced as the issue saw it: the notice's content was purged four days after the give-up.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from mailnode import budgets
from mailnode.governance import provider_io
from mailnode.governance.provider import PauseKind, ProviderStatus
from mailnode.ids import new_id
from mailnode.outbound import sweeper
from mailnode.retention import io as retention_io
from mailnode.schema.notices import notices
from mailnode.schema.outbound import send_manifests, send_recipients
from mailnode.schema.retention import retained_content

from .conftest import T0, Org

DAY = 86_400


def _retained(org: Org, source_id: str) -> tuple[object, object]:
    with org.node.read() as conn:
        row = conn.execute(select(retained_content).where(retained_content.c.source_id == source_id)).one()
    return row.retain_until, row.purged_at


def test_a_notice_that_gives_up_gives_its_content_a_fresh_grace_period(org: Org) -> None:
    content = org.deferrable(to="researcher@remote.test", subject="Your upload")
    notice = org.deferrable(to="researcher@remote.test", subject="Your upload could not be processed")
    with org.node.begin() as conn:
        # The content went out long ago; the notice about it cannot go: the provider is down for a month.
        conn.execute(update(send_manifests).where(send_manifests.c.id == content.id).values(state="handed_over"))
        conn.execute(update(send_recipients).where(send_recipients.c.manifest_id == content.id)
                     .values(submission_state="handed_over"))
        conn.execute(notices.insert().values(
            id=new_id("ntf"), org_id=org.installed.org_id, dedup_key=f"test:{content.id}", kind="send_failed",
            episode="e1", recipient_user_id=org.installed.user_id, address="researcher@remote.test",
            about=[content.id], subject="s", body="b", created_at=T0, send_id=notice.id))
        provider_io.write_status(conn, ProviderStatus(
            transport="resend", pause_kind=PauseKind.SYSTEMIC, paused_at=T0, unavailable_until=T0 + timedelta(days=30),
            pause_error="restricted_api_key"), T0)
        retention_io.enrol(conn, org_id=org.installed.org_id)
        # While the notice is undelivered its content is kept a grace period (the notice sweeper's write).
        assert retention_io.extend(conn, source_ids=[content.id], now=T0) == 1
    grace = timedelta(seconds=budgets.RETENTION_NOTICE_GRACE_SECONDS)
    assert _retained(org, content.id) == (T0 + grace, None)

    give_up = T0 + timedelta(seconds=budgets.SWEEPER_GIVE_UP_AGE_SECONDS + 1)
    org.clock.set(give_up)
    report = sweeper.run_pass(org.node)
    assert report.verdicts.get("give_up") == 1
    assert (org.send(notice.id).state, org.send(notice.id).state_reason) == ("withheld", "gave_up")
    # A fresh grace period from the give-up, for what the notice is about and for its own body.
    assert _retained(org, content.id) == (give_up + grace, None)
    assert _retained(org, notice.id)[0] == give_up + grace

    # Past the body's retention and the grace the undelivered notice had earned: still kept.
    org.clock.set(T0 + grace + timedelta(days=1))
    purged = retention_io.run_pass(org.node, org.clock.now()).sweeps[org.installed.org_id].purged
    assert content.id not in purged and _retained(org, content.id)[1] is None
    # Once the fresh grace has passed, retention deletes it as usual.
    org.clock.set(give_up + grace + timedelta(seconds=1))
    purged = retention_io.run_pass(org.node, org.clock.now()).sweeps[org.installed.org_id].purged
    assert content.id in purged
