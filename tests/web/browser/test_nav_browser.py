"""The site navigation in a real Chromium: every signed-in page lists the areas, marks the one shown, and the
inbox passes axe-core's check with no serious violation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.served import Served
from tests.web.browser.conftest import assert_accessible


def test_the_header_lists_every_area_and_marks_the_inbox(served: Served, signed_in_page: Callable[[str], Any]) -> None:
    page = signed_in_page(served.installed["token"])
    nav = page.get_by_role("navigation", name="Areas")
    labels = [t.strip() for t in nav.locator("a").all_inner_texts()]
    assert [label.split(" ")[0] for label in labels][:1] == ["Inbox"]
    assert any(label.startswith("Waiting for me") for label in labels)
    assert nav.locator("a[aria-current=page]").inner_text().strip() == "Inbox"
    assert_accessible(page)
