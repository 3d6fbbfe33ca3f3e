"""The queue pages over HTTP (``web.queue``): the home page is the first mailbox's queue, a view shows its rows
and counts, the poll answers what changed, bulk claim and close show each case's outcome in words, search
explains its filter words and finds by ``from:``, and a refusal is the API's four parts in words."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import update

from mailnode.mail.queue import QueueRow
from mailnode.schema.mail_messages import messages
from mailnode.web.queue import env
from tests.search.conftest import World, mail
from tests.web.conftest import csrf_of, sign_in


def signed_in(world: World) -> Any:
    """The world's client, signed in as the administrator; the home page's response."""
    r = sign_in(world.api, world.installed.token)
    assert r.status_code == 200, r.text
    return r


def rows_of(html: str) -> list[str]:
    """The subjects of a page's rows, in order."""
    return re.findall(r'class="open"[^>]*>([^<]*)<', html)


def test_the_home_page_is_the_first_mailboxs_queue_with_every_view_counted(world: World) -> None:
    world.deliver(mail(subject="Where is my parcel", body="It never came.", n=1))
    home = signed_in(world)
    assert '<h1 id="mailbox-name">Support</h1>' in home.text
    assert rows_of(home.text) == ["Where is my parcel"]
    for view, label in (("unassigned", "Unassigned"), ("mine", "Mine"), ("open", "All open"), ("closed", "Closed"),
                        ("sent", "Sent")):
        assert f'id="view-{view}"' in home.text and label in home.text
    assert '<span class="count" data-count="unassigned">1</span>' in home.text
    assert "Alice Müller" in home.text and "It never came." in home.text
    assert f'href="/mailboxes/{world.installed.mailbox_id}"' in home.text  # the switcher


def test_a_person_who_may_read_no_mailbox_is_told_how_to_get_one(world: World) -> None:
    _, h = world.person("newbie@example.test")
    token = h["Authorization"].removeprefix("Bearer ")
    r = sign_in(world.api, token)
    assert r.status_code == 200 and 'id="no-mailbox"' in r.text and "POST /api/access" in r.text


def test_the_poll_answers_new_rows_and_counts(world: World) -> None:
    signed_in(world)
    url = f"/mailboxes/{world.installed.mailbox_id}/poll?view=unassigned"
    before = world.api.get(url).json()
    assert (before["keys"], before["counts"]["unassigned"]) == ([], 0)
    world.deliver(mail(subject="Fresh", body="new", n=1))
    after = world.api.get(url).json()
    assert after["counts"]["unassigned"] == 1 and len(after["keys"]) == 1 and "Fresh" in after["rows"]


def test_bulk_claim_on_the_page_shows_each_cases_outcome(world: World) -> None:
    world.deliver(mail(subject="First", body="x", n=1))
    world.deliver(mail(subject="Second", body="y", n=2))
    home = signed_in(world)
    ids = re.findall(r'name="case_id" value="(cas_[^"]+)"', home.text)
    mbx = world.installed.mailbox_id
    olga, olga_h = world.person("olga@example.test", ("send.propose", mbx), ("mailbox.content.read", mbx))
    assert world.api.post(f"/api/cases/{ids[1]}/claim", headers=olga_h).status_code == 200
    r = world.api.post(f"/mailboxes/{mbx}/bulk", data={"csrf_token": csrf_of(home.text), "action": "claim",
                                                       "case_id": ids})
    assert r.status_code == 200, r.text
    assert "Second: claimed." in r.text
    assert f"First: Case {ids[1]} is held by {olga}" in r.text and "E_CASE_HELD" in r.text
    mine = world.api.get(f"/mailboxes/{mbx}?view=mine").text
    assert rows_of(mine) == ["Second"] and "you" in mine


def test_a_bulk_post_without_the_csrf_token_is_refused_and_changes_nothing(world: World) -> None:
    world.deliver(mail(subject="First", body="x", n=1))
    home = signed_in(world)
    ids = re.findall(r'name="case_id" value="(cas_[^"]+)"', home.text)
    r = world.api.post(f"/mailboxes/{world.installed.mailbox_id}/bulk", data={"action": "claim", "case_id": ids})
    assert r.status_code == 403 and "E_CSRF_INVALID" in r.text
    assert '<span class="count" data-count="unassigned">1</span>' in world.api.get("/").text


def test_search_explains_its_filter_words_and_finds_by_from(world: World) -> None:
    world.deliver(mail(subject="Invoice overdue", body="pay", n=1))
    world.deliver(mail(subject="Invoice question", body="pay", sender="bob@remote.test", n=2))
    home = signed_in(world)
    for word in ("from:alice", "is:unassigned", "has:attachment", "before:2026-03-01", "state:held"):
        assert word in home.text
    r = world.api.get(f"/mailboxes/{world.installed.mailbox_id}", params={"q": "from:bob invoice"})
    assert r.status_code == 200 and rows_of(r.text) == ["Invoice question"]


def test_a_refusal_on_the_page_is_the_four_parts_in_words(world: World) -> None:
    signed_in(world)
    r = world.api.get(f"/mailboxes/{world.installed.mailbox_id}", params={"q": "colour:red"})
    assert r.status_code == 422
    assert 'id="refusal-code"><code>E_SEARCH_OPERATOR_UNKNOWN</code>' in r.text
    assert 'id="refusal-why"' in r.text and 'id="refusal-fix"' in r.text
    r = world.api.get(f"/mailboxes/{world.installed.mailbox_id}", params={"view": "everything"})
    assert r.status_code == 422 and "E_QUEUE_VIEW_UNKNOWN" in r.text
    _, outsider = world.person("out@example.test")
    world.api.cookies.clear()
    sign_in(world.api, outsider["Authorization"].removeprefix("Bearer "))
    r = world.api.get(f"/mailboxes/{world.installed.mailbox_id}")
    assert r.status_code == 404 and "E_NO_SUCH_MAILBOX" in r.text


def test_a_rows_automated_marker_says_why_in_words(world: World) -> None:
    world.deliver(mail(subject="Out of office", body="Away until Monday.", n=1,
                       extra="Auto-Submitted: auto-replied\r\n"))
    home = html.unescape(signed_in(world).text)
    assert "Automated: Marked Auto-Submitted by its sender: written by a machine." in home
    assert "auto_submitted" not in home
    polled = world.api.get(f"/mailboxes/{world.installed.mailbox_id}/poll?view=unassigned").json()["rows"]
    assert "Automated: Marked Auto-Submitted by its sender: written by a machine." in html.unescape(polled)


def test_an_automated_reason_the_node_does_not_know_still_marks_the_row(world: World) -> None:
    message_id = world.deliver(mail(subject="From the future", body="x", n=1))
    with world.node.begin() as conn:  # a value a newer node wrote
        conn.execute(update(messages).where(messages.c.id == message_id).values(automated="robot_vibes"))
    home = html.unescape(signed_in(world).text)
    assert "Automated: Marked automated for a reason mailnode does not know ('robot_vibes')." in home


@pytest.mark.parametrize(("value", "words"), [
    ("auto-replied", "Automated: An automatic answer (a Butler's reply), marked Auto-Submitted: auto-replied."),
    ("auto-generated", "Automated: A notice the node wrote by itself, marked Auto-Submitted: auto-generated."),
    ("auto-notified", "Automated: Marked automated for a reason mailnode does not know ('auto-notified')."),
])
def test_a_sent_rows_automated_marker_says_why_in_words(value: str, words: str) -> None:
    now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    send = QueueRow(kind="send", id="snd_01M8SYX4XWC0KYET29QAM4QVQG", conversation_id=None,
                    key="snd_01M8SYX4XWC0KYET29QAM4QVQG", correspondent_name=None,
                    correspondent_address="c@remote.test", subject="Notice", snippet=None, snippet_hidden=None,
                    at=now, age_seconds=5, holder_id=None, holder=None, state="handed_over",
                    state_words="Handed over", messages=1, attachments=False, dangerous=False, automated=value)
    rows = html.unescape(env.get_template("queue/_rows.html").render(current=SimpleNamespace(rows=[send])))
    assert words in rows and f"({value})" not in rows
