"""The web skeleton in a real browser: the home page, the shared JavaScript (``mailnode.post`` with the
CSRF header, the ``?`` help overlay of ``mailnode.keys``) and no inline script or style refused by the CSP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.served import Served


def test_a_person_signed_in_with_a_token_sees_their_name_and_the_home_page(
        served: Served, signed_in_page: Callable[[str], Any]) -> None:
    page = signed_in_page(served.installed["token"])
    assert page.locator("#mailbox-name").inner_text() == "Support"  # the home page is the first mailbox's queue
    assert page.locator("#person-name").inner_text() != ""


def test_the_question_mark_lists_the_bound_keys(served: Served, signed_in_page: Callable[[str], Any]) -> None:
    page = signed_in_page(served.installed["token"])
    page.evaluate("mailnode.keys.bind('g', 'Go somewhere', function () { document.title = 'went'; })")
    assert page.locator("#keys-help").is_hidden()
    page.keyboard.press("?")
    help_list = page.locator("#keys-help-list")
    help_list.wait_for()
    assert "Go somewhere" in help_list.inner_text()
    page.keyboard.press("Escape")
    assert page.locator("#keys-help").is_hidden()
    page.keyboard.press("g")
    assert page.title() == "went"


def test_mailnode_post_carries_the_csrf_header(served: Served, signed_in_page: Callable[[str], Any],
                                               base_url: str) -> None:
    page = signed_in_page(served.installed["token"])
    status = page.evaluate("mailnode.post('/signout', {}).then(function (r) { return r.status; })")
    assert status == 200  # the redirect to /signin, followed by fetch
    page.goto(f"{base_url}/")
    page.wait_for_url(f"{base_url}/signin?next=/")


def test_no_page_trips_the_content_security_policy(served: Served, new_page: Callable[[], Any],
                                                   base_url: str) -> None:
    page = new_page()
    refused: list[str] = []
    page.on("console", lambda message: refused.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.goto(f"{base_url}/signin")
    page.get_by_label("Your API token").fill(served.installed["token"])
    page.locator("#signin-token").click()
    page.wait_for_url(f"{base_url}/")
    page.goto(f"{base_url}/no-such-page")
    assert refused == []
