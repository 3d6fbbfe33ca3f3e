"""People and access in a real headless Chromium against a real served node fed over SMTP: an administrator
adds a person and grants them a mailbox in the matrix, and the grantee's next page (their own browser) shows
the mailbox and its mail; a token minted on the person's page and an application's token are shown once.
Every page passes axe-core's check."""

from __future__ import annotations

import json
import smtplib
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from playwright.sync_api import expect

from tests.corpus import corpus
from tests.support.served import MAILNODE, Served
from tests.web.browser.conftest import PAGE_TIMEOUT_MS, assert_accessible, shoot

expect.set_options(timeout=PAGE_TIMEOUT_MS)

#: A corpus message and the subject the queue shows for it.
PETERS = ("malformed/content_transfer_encoding_x_uuencode.eml", "PGP Comments on RTO West Release of Dec. 14")


def token_for(served: Served, email: str) -> str:
    """A token for the person ``email`` (``mailnode token create`` at the data directory)."""
    out = subprocess.run([*MAILNODE, "token", "create", "--user", email, "--data-dir", str(served.data_dir),
                          "--json"], env=served.env, check=True, capture_output=True, text=True)
    return str(json.loads(out.stdout)["token"])


def status_of_me(base_url: str, token: str) -> int:
    """The status ``GET /api/me`` answers with ``token``."""
    req = urllib.request.Request(f"{base_url}/api/me", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_a_grant_given_in_the_matrix_shows_the_mailbox_on_the_grantees_next_page(
        served: Served, signed_in_page: Callable[[str], Any], base_url: str) -> None:
    with smtplib.SMTP("127.0.0.1", served.smtp) as smtp:
        smtp.sendmail("sender@remote.test", ["support@example.test"], (corpus() / PETERS[0]).read_bytes())
    # A mailbox nobody was granted, and a team, so the matrix shows an administrator who may not read and a
    # grant through a team.
    served.call("POST", "/api/mailboxes", json={"name": "Legal", "addresses": ["legal@example.test"]})
    team = served.call("POST", "/api/teams", json={"name": "night shift"})["team"]["id"]
    served.call("POST", "/api/access", json={"subject_id": team, "relation": "send.propose",
                                             "object_id": served.installed["mailbox_id"]})

    admin = signed_in_page(served.installed["token"])
    admin.goto(f"{base_url}/people")
    admin.get_by_label("Address").fill("olga@example.test")
    admin.get_by_label("Name (optional)").fill("Olga Petrova")
    admin.get_by_role("button", name="Add person").click()
    expect(admin.locator("#people")).to_contain_text("Olga Petrova")
    admin.get_by_label("Add a person to night shift").select_option(label="Olga Petrova <olga@example.test>")
    admin.get_by_role("button", name="Add to team").click()
    expect(admin.locator("article.team")).to_contain_text("Olga Petrova")
    assert_accessible(admin)
    shoot(admin, "people-directory")

    olga = signed_in_page(token_for(served, "olga@example.test"))
    expect(olga.locator("#no-mailbox")).to_be_visible()

    admin.goto(f"{base_url}/people/access")
    who, box = "Olga Petrova <olga@example.test>", "Support"
    admin.get_by_label(f"Relation to grant to {who} on {box}").select_option("mailbox.content.read")
    admin.get_by_role("button", name=f"Grant to {who} on {box}").click()
    expect(admin.get_by_role("button", name=f"Revoke mailbox.content.read from {who} on {box}")).to_be_visible()
    expect(admin.locator("table.matrix")).to_contain_text("through the team night shift")
    expect(admin.locator("p.no-read").first).to_contain_text("may not read this mailbox's mail")
    assert_accessible(admin)
    shoot(admin, "people-access")

    # The grantee's next page shows the mailbox, and the mail in it.
    olga.goto(f"{base_url}/")
    expect(olga.locator("#mailbox-name")).to_have_text("Support")
    olga.goto(f"{base_url}/mailboxes/{served.installed['mailbox_id']}")
    expect(olga.locator("a.open", has_text=PETERS[1])).to_be_visible()
    olga.goto(f"{base_url}/people/me")
    expect(olga.locator(f"#box-{served.installed['mailbox_id']} a")).to_have_text("Support")
    assert_accessible(olga)


def test_a_token_minted_on_my_page_is_shown_once(served: Served, signed_in_page: Callable[[str], Any],
                                                 base_url: str) -> None:
    page = signed_in_page(served.installed["token"])
    page.goto(f"{base_url}/people/me")
    assert_accessible(page)
    page.get_by_label("Label of a new token (where it will be used)").fill("laptop")
    page.get_by_role("button", name="Mint a token").click()
    expect(page.locator("#token-once-warning")).to_contain_text("shown only this once")
    token = page.locator("#token-once-value").input_value()
    assert token.startswith("mn_") and status_of_me(base_url, token) == 200
    assert_accessible(page)
    shoot(page, "people-me")
    page.goto(f"{base_url}/people/me")
    expect(page.locator("#tokens")).to_contain_text("laptop")
    expect(page.locator("#token-once")).to_have_count(0)
    assert token not in page.content()
    page.get_by_role("button", name="Revoke token laptop").click()
    expect(page.locator("#tokens")).to_contain_text("revoked")
    assert status_of_me(base_url, token) == 401


def test_an_application_is_created_with_its_token_shown_once(served: Served, signed_in_page: Callable[[str], Any],
                                                             base_url: str) -> None:
    page = signed_in_page(served.installed["token"])
    page.goto(f"{base_url}/people/applications")
    expect(page.locator("#no-apps")).to_be_visible()
    page.get_by_label("Name").fill("billing")
    page.get_by_role("button", name="Create application").click()
    expect(page.locator("#token-once-title")).to_have_text("New token for billing")
    token = page.locator("#token-once-value").input_value()
    assert status_of_me(base_url, token) == 200
    assert_accessible(page)
    shoot(page, "people-applications")
    page.goto(f"{base_url}/people/applications")
    expect(page.locator("#token-once")).to_have_count(0)
    page.locator("article.app button", has_text="Revoke").click()
    expect(page.locator("article.app")).to_contain_text("revoked")
    assert status_of_me(base_url, token) == 401
