"""Waiting for me in a real headless Chromium against a real served node fed over SMTP: a Butler's proposal is
read beside the message it answers, released through the bulk confirmation and arrives at the smarthost; a send
held by a policy is approved by a second person with a reason and arrives too. Every page is checked with axe."""

from __future__ import annotations

import json
import smtplib
import subprocess
import time
import uuid
from collections.abc import Callable
from email.message import EmailMessage
from email.policy import SMTP
from typing import Any

from playwright.sync_api import expect

from tests.butler.runs.conftest import ack_program
from tests.support.served import MAILNODE, Served
from tests.web.browser.conftest import PAGE_TIMEOUT_MS, Smarthost, assert_accessible, shoot

expect.set_options(timeout=PAGE_TIMEOUT_MS)

CUSTOMER = "customer@remote.test"
#: Seconds to wait for mail at the smarthost (a dispatch pass runs every second; slack for the 2-core machine).
ARRIVES_WITHIN_SECONDS = 60


def person(served: Served, email: str, *relations: str) -> str:
    """A person holding ``relations`` on the mailbox; their token (``mailnode token create``)."""
    uid = served.call("POST", "/api/users", json={"email": email, "name": email.split("@")[0].title()})["user"]["id"]
    for relation in relations:
        served.call("POST", "/api/access", json={"subject_id": uid, "relation": relation,
                                                 "object_id": served.installed["mailbox_id"]})
    out = subprocess.run([*MAILNODE, "token", "create", "--user", email, "--data-dir", str(served.data_dir),
                          "--json"], env=served.env, check=True, capture_output=True, text=True)
    return str(json.loads(out.stdout)["token"])


def arrived(smarthost: Smarthost, address: str) -> list[Any]:
    """The messages the smarthost received for ``address``, waiting up to ``ARRIVES_WITHIN_SECONDS``."""
    deadline = time.monotonic() + ARRIVES_WITHIN_SECONDS
    while time.monotonic() < deadline:
        got = smarthost.to(address)
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"nothing arrived for {address}")


def test_a_butlers_proposal_is_read_and_released_and_arrives(served: Served, smarthost: Smarthost,
                                                             signed_in_page: Callable[[str], Any]) -> None:
    served.call("PATCH", f"/api/mailboxes/{served.installed['mailbox_id']}", json={"hold_window_seconds": 0})
    served.publish(ack_program(), "send.propose", "mailbox.content.read")
    msg = EmailMessage()
    msg["From"] = f"Customer <{CUSTOMER}>"
    msg["To"] = "support@example.test"
    msg["Subject"] = "Order 42"
    msg["Message-ID"] = f"<{uuid.uuid4().hex}@remote.test>"
    msg.set_content("Hello, order 42 has not arrived.")
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail(CUSTOMER, ["support@example.test"], msg.as_bytes(policy=SMTP))
    served.run(lambda r: r["state"] == "awaiting_release")

    page = signed_in_page(served.installed["token"])
    expect(page.locator("#waiting-count")).to_have_text("1")
    page.locator("#nav-waiting").click()
    proposal = page.locator("article.proposal")
    expect(proposal).to_have_count(1)
    # The proposal's text and recipient, and beside it the message it answers.
    expect(proposal.locator(".proposal-text .recipient")).to_have_text(CUSTOMER)
    expect(proposal.locator(".parent")).to_contain_text("Hello, order 42 has not arrived.")
    expect(proposal.locator(".proposal-text pre.body")).not_to_be_empty()
    assert smarthost.to(CUSTOMER) == []  # nothing left before a person released it
    assert_accessible(page)
    shoot(page, "waiting-proposal")

    proposal.get_by_role("checkbox").check()
    page.get_by_role("button", name="Release the ticked sends…").click()
    expect(page.locator("#confirm-count")).to_contain_text("1 send to 1 recipient")
    assert_accessible(page)
    shoot(page, "waiting-confirm")
    page.get_by_role("button", name="Release 1 send").click()
    expect(page.locator("#outcomes")).to_contain_text("Released: held until")
    expect(page.locator("#no-proposals")).to_be_visible()
    expect(page.locator("#waiting-count")).to_have_text("0")
    assert_accessible(page)

    [reply] = arrived(smarthost, CUSTOMER)
    assert reply["Subject"].endswith("Order 42")


def test_a_held_send_is_approved_by_a_second_person(served: Served, smarthost: Smarthost,
                                                    signed_in_page: Callable[[str], Any]) -> None:
    served.call("PATCH", f"/api/mailboxes/{served.installed['mailbox_id']}", json={"hold_window_seconds": 0})
    bob = person(served, "bob@example.test", "approval.decide")
    policy = served.call("POST", "/api/policies", json={"name": "Second pair of eyes", "outcome": "require_approval",
                                                         "conditions": {}, "stages": []})["policy"]
    served.call("POST", f"/api/policies/{policy['id']}/publish")
    sent = served.call("POST", "/api/sends", json={"mailbox_id": served.installed["mailbox_id"],
                                                   "to": ["carol@remote.test"], "subject": "Your refund",
                                                   "body": "The refund is on its way."})["send"]
    assert (sent["state"], sent["state_reason"]) == ("awaiting", "policy_approval_required")

    page = signed_in_page(bob)
    expect(page.locator("#waiting-count")).to_have_text("1")
    page.locator("#nav-waiting").click()
    approval = page.locator("article.approval")
    expect(approval).to_contain_text("A send held for approval: Your refund")
    expect(approval.locator(".why")).to_contain_text("policy “Second pair of eyes” (version 1) requires approval")
    expect(approval.locator(".actor")).to_contain_text("alex@example.test")
    assert_accessible(page)
    shoot(page, "waiting-approval")
    approval.get_by_label("Your reason").fill("Invoice checked.")
    approval.get_by_role("button", name="Approve").click()
    expect(page.locator("#outcomes")).to_contain_text("Approved: every stage is filled")
    expect(page.locator("#no-approvals")).to_be_visible()
    assert_accessible(page)

    [mail] = arrived(smarthost, "carol@remote.test")
    assert mail["Subject"] == "Your refund"
