"""The queue in a real headless Chromium against a real served node fed over SMTP with corpus messages: new
mail appears without a reload, bulk claim, search by ``from:``, the keyboard alone, usable within a second."""

from __future__ import annotations

import smtplib
from collections.abc import Callable
from typing import Any

from playwright.sync_api import expect

from tests.corpus import corpus
from tests.support.served import Served
from tests.web.browser.conftest import PAGE_TIMEOUT_MS, keys_ready

# Each expectation waits for its signal (a row arriving after materialisation and a poll) up to this long.
expect.set_options(timeout=PAGE_TIMEOUT_MS)

#: Corpus messages and the subject each shows in the queue.
KIJITORA = ("bounces/is-not-bounce-01.eml", "にゃんこ")  # From: Kijitora <shironeko@example.com>
PETERS = ("malformed/content_transfer_encoding_x_uuencode.eml", "PGP Comments on RTO West Release of Dec. 14")
KUZNETSOV = ("malformed/empty_in_reply_to.eml", "illegal copy of our patient education software")


def deliver(served: Served, message: tuple[str, str]) -> str:
    """Send a corpus message to support@example.test over the node's SMTP listener; its subject."""
    raw = (corpus() / message[0]).read_bytes()
    with smtplib.SMTP("127.0.0.1", served.smtp) as smtp:
        smtp.sendmail("sender@remote.test", ["support@example.test"], raw)
    return message[1]


def row(page: Any, subject: str) -> Any:
    """The queue row showing ``subject``."""
    return page.locator("tr.queue-row", has=page.locator("a.open", has_text=subject))


def test_a_new_message_appears_without_a_reload(served: Served, signed_in_page: Callable[[str], Any]) -> None:
    page = signed_in_page(served.installed["token"])
    expect(page.locator("tr.empty")).to_be_visible()
    page.evaluate("window.stillTheSamePage = true")
    subject = deliver(served, PETERS)
    expect(row(page, subject)).to_be_visible()
    expect(page.locator('[data-count="unassigned"]')).to_have_text("1")
    assert page.evaluate("window.stillTheSamePage") is True  # no navigation happened


def test_bulk_claim_moves_the_ticked_cases_to_mine(served: Served, signed_in_page: Callable[[str], Any]) -> None:
    first, second, third = deliver(served, PETERS), deliver(served, KUZNETSOV), deliver(served, KIJITORA)
    page = signed_in_page(served.installed["token"])
    expect(row(page, third)).to_be_visible()
    page.get_by_label(f"Select: {first}").check()
    page.get_by_label(f"Select: {second}").check()
    page.get_by_role("button", name="Claim selected").click()
    outcomes = page.locator("#outcomes")
    expect(outcomes).to_contain_text(f"{first}: claimed.")
    expect(outcomes).to_contain_text(f"{second}: claimed.")
    expect(page.locator('[data-count="mine"]')).to_have_text("2")
    page.locator("#view-mine").click()
    expect(page.locator("tr.queue-row")).to_have_count(2)
    expect(row(page, third)).to_have_count(0)


def test_search_by_from_finds_the_senders_mail(served: Served, signed_in_page: Callable[[str], Any]) -> None:
    kijitora, other = deliver(served, KIJITORA), deliver(served, PETERS)
    page = signed_in_page(served.installed["token"])
    expect(row(page, other)).to_be_visible()
    expect(row(page, kijitora)).to_be_visible()
    page.get_by_label("Search this mailbox").fill("from:kijitora")
    page.get_by_label("Search this mailbox").press("Enter")
    results = page.locator("#search-results")
    expect(results.locator("a.open")).to_have_text([kijitora])
    page.get_by_text("Filter words you can use").click()
    expect(page.locator("#search-help")).to_contain_text("The sender's name or address holds the word")


def test_the_keyboard_alone_moves_claims_searches_and_opens(served: Served,
                                                           signed_in_page: Callable[[str], Any]) -> None:
    older, newer = deliver(served, PETERS), deliver(served, KUZNETSOV)
    page = signed_in_page(served.installed["token"])
    expect(row(page, older)).to_be_visible()
    expect(row(page, newer)).to_be_visible()
    page.keyboard.press("j")
    expect(row(page, newer)).to_have_class("queue-row unassigned selected")
    page.keyboard.press("j")
    expect(row(page, older)).to_have_class("queue-row unassigned selected")
    expect(row(page, older).locator("a.open")).to_be_focused()
    page.keyboard.press("k")
    expect(row(page, newer).locator("a.open")).to_be_focused()
    page.keyboard.press("c")
    expect(page.locator("#outcomes")).to_contain_text(f"{newer}: claimed.")
    # The claim loaded the queue again: its keys are bound once its deferred scripts ran.
    keys_ready(page)
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_contain_text("Claim the ticked conversations")
    page.keyboard.press("Escape")
    page.keyboard.press("/")
    expect(page.get_by_label("Search this mailbox")).to_be_focused()
    page.keyboard.press("Escape")
    page.locator("#q").blur()
    page.keyboard.press("j")
    href = row(page, older).locator("a.open").get_attribute("href")
    assert href and href.startswith("/conversations/cnv_")
    page.keyboard.press("o")
    page.wait_for_url(f"**{href}")


def test_new_mail_arriving_keeps_the_keyboards_place(served: Served, signed_in_page: Callable[[str], Any]) -> None:
    first = deliver(served, PETERS)
    page = signed_in_page(served.installed["token"])
    expect(row(page, first)).to_be_visible()
    page.keyboard.press("j")
    expect(row(page, first).locator("a.open")).to_be_focused()
    arrived = deliver(served, KUZNETSOV)
    # The poll puts the new row above the selected one; the selection and the focus stay on the conversation.
    expect(row(page, arrived)).to_be_visible()
    expect(row(page, first)).to_have_class("queue-row unassigned selected")
    expect(row(page, first).locator("a.open")).to_be_focused()
    href = row(page, first).locator("a.open").get_attribute("href")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{href}")


def test_the_queue_is_usable_within_one_second(served: Served, signed_in_page: Callable[[str], Any],
                                               base_url: str) -> None:
    subject = deliver(served, KUZNETSOV)
    page = signed_in_page(served.installed["token"])
    expect(row(page, subject)).to_be_visible()
    page.goto(f"{base_url}/mailboxes/{served.installed['mailbox_id']}?view=open", wait_until="commit")
    row(page, subject).get_by_role("link").wait_for(state="visible", timeout=1_000)
    page.get_by_label(f"Select: {subject}").wait_for(state="visible", timeout=1_000)
