"""The Sends pages in a real Chromium against a real served node fed over SMTP, handing over to a real
smarthost: a reply made in the browser is found in ``/sends`` by its filters, its timeline shows the
hand-over, its raw submitted message opens, and an action refused by the API shows its reason."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from playwright.sync_api import expect

from tests.support.served import Served
from tests.web.browser.conftest import Smarthost, assert_accessible, shoot
from tests.web.browser.test_conversation_browser import corpus_message, feed, hold_window

#: The corpus message's sender, whom the reply goes to.
CUSTOMER = "abhijit.862153drinnan@datavalet.com"


def _reply(page: Any, base_url: str, conv: str) -> str:
    """Claim the conversation and send a reply from the composer; the send's id (the page is on the send)."""
    page.goto(f"{base_url}/conversations/{conv}")
    page.locator("#claim").click()
    expect(page.locator("#case-status")).to_have_text("Open, held by you.")
    page.get_by_role("link", name="Reply", exact=True).last.click()
    page.get_by_label("Your message").fill("We have looked into it; it ships today.")
    page.locator("#send").click()
    page.wait_for_url(re.compile(r"/sends/snd_"))
    return str(page.url.rsplit("/", 1)[1])


def _wait_state(served: Served, send_id: str, state: str) -> dict[str, Any]:
    """The send once it is in ``state`` (a signal, bounded by a deadline)."""
    deadline = time.monotonic() + 60
    got: dict[str, Any] = {}
    while time.monotonic() < deadline:
        got = served.call("GET", f"/api/sends/{send_id}")["send"]
        if got["state"] == state:
            return got
        time.sleep(0.2)
    raise AssertionError(f"send {send_id} did not reach {state} in time: {got.get('state')} "
                         f"{got.get('state_reason')}, release_at {got.get('release_at')}")


def test_a_send_is_found_by_its_filters_its_timeline_shows_the_hand_over_and_its_raw_message_opens(
        served: Served, base_url: str, smarthost: Smarthost, signed_in_page: Callable[[str], Any]) -> None:
    conv = feed(served, corpus_message(), CUSTOMER)["conversation_id"]
    page = signed_in_page(served.installed["token"])
    send_id = _reply(page, base_url, conv)
    _wait_state(served, send_id, "handed_over")
    assert smarthost.to(CUSTOMER), "the smarthost received nothing"

    page.goto(f"{base_url}/sends")
    page.get_by_label("State").select_option("handed_over")
    page.get_by_label("Author kind").select_option("person")
    page.get_by_label("Mail class").select_option("correspondence")
    page.get_by_label("Recipient").fill(CUSTOMER.upper())
    page.locator("#f-apply").click()
    page.wait_for_url(re.compile(r"/sends\?.*recipient="))
    row = page.locator(f"#row-{send_id}")
    expect(row).to_contain_text("handed_over")
    expect(page.locator("#sends-table tbody tr")).to_have_count(1)
    assert_accessible(page)
    shoot(page, "sends-list")
    # Another recipient finds nothing, and says so.
    page.get_by_label("Recipient").fill("nobody@remote.test")
    page.locator("#f-apply").click()
    expect(page.locator("#no-sends")).to_have_text("No sends match these filters.")

    page.goto(f"{base_url}/sends/{send_id}")
    expect(page.locator("#timeline")).to_contain_text("Sealed: held")
    expect(page.locator("#timeline")).to_contain_text(f"handed_over to the transport (to) {CUSTOMER}")
    expect(page.locator("#retry-offer")).to_contain_text("none (acceptance_observed)")
    assert_accessible(page)
    shoot(page, "sends-send")
    page.locator("#raw-link").click()
    page.wait_for_url(re.compile(r"/raw$"))
    body = page.locator("body").inner_text()
    # The message as sealed for submission: its headers as the smarthost received them.
    handed = smarthost.to(CUSTOMER)[0]
    assert "From: support@example.test" in body and CUSTOMER in body
    assert f"Message-ID: {handed['Message-ID']}" in body and f"Subject: {handed['Subject']}" in body


def test_a_refused_action_shows_the_apis_reason(
        served: Served, base_url: str, signed_in_page: Callable[[str], Any]) -> None:
    hold_window(served, 300)
    conv = feed(served, corpus_message(), CUSTOMER)["conversation_id"]
    page = signed_in_page(served.installed["token"])
    send_id = _reply(page, base_url, conv)
    page.goto(f"{base_url}/sends/{send_id}")
    expect(page.locator("#cancel")).to_be_visible()
    # Someone else cancels it meanwhile; this page still offers Cancel, and the API refuses it in words.
    served.call("POST", f"/api/sends/{send_id}/cancel")
    page.locator("#cancel").click()
    expect(page.locator("#refusal-code")).to_have_text("E_SEND_NOT_STOPPABLE")
    expect(page.locator("#refusal-why")).not_to_be_empty()
    expect(page.locator("#timeline")).to_contain_text("Cancelled")
    assert_accessible(page)
    shoot(page, "sends-refusal")
