"""The web skeleton in a real browser: a person signed in with a token sees the home page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.served import Served


def test_a_person_signed_in_with_a_token_sees_their_name_and_the_home_page(
        served: Served, signed_in_page: Callable[[str], Any]) -> None:
    page = signed_in_page(served.installed["token"])
    assert page.locator("#home-placeholder").is_visible()
    assert page.locator("#person-name").inner_text() != ""
