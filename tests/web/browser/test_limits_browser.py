"""The Limits and health page in a real Chromium against a real node: an administrator lowers the bounce
breaker's minimum with the page's form, mail is handed over to a real smarthost, two hard-bounce DSNs come back
over SMTP to the VERP return paths, and the page shows the tripped bounce rate with its reading and when it
next lets mail go; the audit chain is verified from the page. axe-core on each state; screenshots."""

from __future__ import annotations

import smtplib
from collections.abc import Callable
from typing import Any

from tests.outbound.db.test_pipeline import dsn
from tests.outbound.served.conftest import Client, app_token, wait_for
from tests.support.served import Served
from tests.web.browser.conftest import Smarthost, assert_accessible, shoot


def _bounce_rate(admin: Client) -> dict[str, Any] | None:
    r = admin.call("GET", "/api/breakers")
    assert r.status_code == 200, r.text
    found = next(b for b in r.json()["breakers"] if b["breaker"] == "bounce_rate")
    return found if found["tripped"] else None


def test_a_tripped_bounce_breaker_shows_its_reading_and_next_release(
        served: Served, smarthost: Smarthost, signed_in_page: Callable[[str], Any], base_url: str) -> None:
    admin = Client(base_url, served.installed["token"])
    page = signed_in_page(served.installed["token"])
    page.goto(f"{base_url}/limits")
    assert page.locator("#breaker-bounce_rate .state").inner_text().strip() == "unarmed"
    assert "nothing observed: 0 of 20" in page.locator("#breaker-bounce_rate .reading").inner_text()
    assert_accessible(page)
    shoot(page, "limits-overview")

    # The administrator arms the bounce rate at two observations through the page's form.
    page.get_by_label("New bounce_min_observations").fill("2")
    page.locator("#limits-save").click()
    page.locator("#limits-changed").wait_for()
    assert page.locator("#limit-bounce_min_observations .value").inner_text().startswith("2")

    _, token = app_token(served)
    app = Client(base_url, token)
    to = ["gone@remote.test", "moved@remote.test", "fine@remote.test"]
    r = app.call("POST", "/api/mail", json={
        "mailbox_id": served.installed["mailbox_id"], "class": "deferrable", "to": to,
        "subject": "Your upload stopped", "text": "The upload of run 7 stopped arriving.", "idempotency_key": "b1"})
    assert r.status_code == 202, r.text
    send_id = r.json()["mail"]["id"]
    wait_for("three hand-overs at the smarthost", lambda: len(smarthost.received) == 3)
    verp = {c.rcpt_tos[0]: c.mail_from for c in smarthost.received}
    rfc_id = wait_for("the send's message id", lambda: admin.call("GET", f"/api/sends/{send_id}").json()["send"].get(
        "rfc_message_id"))
    for address in ("gone@remote.test", "moved@remote.test"):
        with smtplib.SMTP("127.0.0.1", served.smtp) as c:
            c.sendmail("", [verp[address]], dsn(address, rfc_id, verp[address]))
    wait_for("the bounce rate tripped", lambda: _bounce_rate(admin))

    page.goto(f"{base_url}/limits")
    row = page.locator("#breaker-bounce_rate")
    assert row.locator(".state").inner_text().strip() == "tripped"
    assert row.locator(".reading").inner_text().strip() == "67 % (2 bounced of 3 observations)"
    release = row.locator(".release").inner_text()
    assert release.startswith("at ") and " UTC at the earliest (in " in release  # 6 h window, bounces just in
    assert page.locator("#finding-send_breakers .fix-link").get_attribute("href") == "/limits#breakers"
    assert_accessible(page)
    shoot(page, "limits-tripped")

    page.locator("#audit-verify").click()
    verdict = page.locator("#audit-verdict")
    verdict.wait_for()
    assert verdict.inner_text().startswith("Verified just now: the chain is intact")
    assert page.locator("#audit-last").inner_text().startswith("intact:")
    assert_accessible(page)
