"""The Butler pages in a real headless Chromium against a real served node fed over SMTP with a corpus message:
a Butler is edited with a finding shown on the right node as it is typed, dry-run against the corpus message,
published with its diff, and its run inspected. Every page is checked with axe-core and photographed."""

from __future__ import annotations

import json
import smtplib
from collections.abc import Callable
from typing import Any

from playwright.sync_api import expect

from mailnode.schema.butler_runs import TERMINAL_STATES
from tests.butler.runs.conftest import ack_program
from tests.corpus import corpus
from tests.support.served import Served
from tests.web.browser.conftest import PAGE_TIMEOUT_MS, assert_accessible, shoot

expect.set_options(timeout=PAGE_TIMEOUT_MS)

#: A corpus message (From: Kuznetsov) and its Message-ID, the key the dry run's picker names it by.
KUZNETSOV = "malformed/empty_in_reply_to.eml"


def deliver(served: Served, name: str) -> None:
    """Send a corpus message to support@example.test over the node's SMTP listener."""
    raw = (corpus() / name).read_bytes()
    with smtplib.SMTP("127.0.0.1", served.smtp) as smtp:
        smtp.sendmail("sender@remote.test", ["support@example.test"], raw)


def replace_source(page: Any, text: str) -> None:
    """Put ``text`` in the editor as typing would (an input event fires, so the checker is asked)."""
    box = page.get_by_label("The Butler document (JSON)")
    box.fill(text)


def test_a_butler_is_edited_dry_run_published_and_its_run_inspected(
        served: Served, signed_in_page: Callable[[str], Any], base_url: str) -> None:
    doc = ack_program()
    bid = served.publish(doc, "send.propose", "mailbox.content.read", "mailbox.metadata.read")
    deliver(served, KUZNETSOV)
    run = served.run(lambda r: r["state"] in TERMINAL_STATES or r["state"] == "awaiting_release")

    page = signed_in_page(served.installed["token"])
    page.locator("#nav-butlers").click()
    row = page.locator("tr.butler-row", has=page.get_by_role("link", name="acknowledge"))
    expect(row).to_contain_text("Live: version 1")
    expect(row.locator(f'a[href="/butlers/runs/{run["id"]}"]')).to_be_visible()
    assert_accessible(page)
    shoot(page, "butlers-list")

    row.get_by_role("link", name="acknowledge").click()
    expect(page.locator("#butler-name")).to_have_text("acknowledge")
    assert_accessible(page)
    shoot(page, "butlers-butler")

    page.locator("#edit-link").click()
    expect(page.locator("#check-verdict")).to_have_text("It checks: no findings.")
    broken = ack_program()
    broken["nodes"][1]["next"] = "nowhere"
    replace_source(page, json.dumps(broken, indent=2))
    # The finding appears, without a reload, beside the node it concerns and no other.
    reply = page.locator('li.outline-node[data-node="reply"]')
    expect(reply.locator(".finding")).to_have_attribute("data-code", "E_BUTLER_EDGE_DANGLING")
    expect(page.locator("li.outline-node.has-findings")).to_have_count(1)
    expect(page.locator("#check-verdict")).to_contain_text("1 finding")
    assert_accessible(page)
    shoot(page, "butlers-editor-finding")

    fixed = ack_program()
    fixed["nodes"][1]["body"] = "Thank you. A person will answer within two working days."
    replace_source(page, json.dumps(fixed, indent=2))
    expect(page.locator("#check-verdict")).to_have_text("It checks: no findings.")
    expect(page.locator("#price")).to_contain_text("it fits")
    page.locator("#save-draft").click()
    expect(page.locator("#done")).to_contain_text("Draft saved.")
    expect(page.locator("#diff .add")).to_contain_text(["two working days"])

    page.get_by_label("Message (the delivery a run started from)").select_option(run["id"])
    page.locator("#dry-run").click()
    report = page.locator("#dry-nodes")
    expect(report.locator("tr[data-node]").first).to_have_attribute("data-node", "may_reply")
    expect(page.locator("#dry-outcome")).to_contain_text("would end")
    assert_accessible(page)
    shoot(page, "butlers-editor-dry-run")

    page.locator("#publish").click()
    expect(page.locator("#done")).to_contain_text("Published")
    expect(page.locator(".butler-state")).to_contain_text("Live: version 2")
    expect(page.locator("#versions tbody tr")).to_have_count(2)

    page.locator(f'a[href="/butlers/runs/{run["id"]}"]').first.click()
    expect(page.locator("#run-title")).to_have_text(f"Run {run['id']}")
    expect(page.locator("#run-state")).to_contain_text(run["state"])
    expect(page.locator("#effects")).to_be_visible()
    assert_accessible(page)
    shoot(page, "butlers-run")
    assert page.url == f"{base_url}/butlers/runs/{run['id']}"
    assert bid in page.locator(".crumbs a").nth(1).get_attribute("href")
