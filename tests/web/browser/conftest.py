"""The browser-test harness of the web inbox: a real ``mailnode serve``, a real smarthost, a real Chromium.

``smarthost`` is an aiosmtpd ``Controller`` on loopback recording every message the node hands over (its
transport is ``smtp`` pointed there), ``served`` a started ``tests.support.served.Served`` over a fresh data
directory, ``browser`` Debian's headless Chromium at ``/usr/bin/chromium`` driven by Playwright (never a
downloaded browser), and ``signed_in_page(token)`` a new browser context's page signed in with ``token``
through the sign-in form and showing ``/``.

Every test here carries the ``browser`` marker and runs in the SQLite pass only: under
``MAILNODE_TEST_DB=postgres`` they are skipped, so CI runs them once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from tests.support.served import Served, free_port, served_env

#: Debian's chromium; the tests never let Playwright download a browser.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Milliseconds a page action or expectation may wait before the test fails (a signal, not a timing claim:
#: each wait ends as soon as what it waits for is there).
PAGE_TIMEOUT_MS = 15_000
#: Seconds one browser test may take in all before pytest-timeout fails it, so a hung browser cannot hang CI
#: (sized: the slowest test here takes under 20 s on the 2-core CI machine).
TEST_TIMEOUT_SECONDS = 180


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test under ``tests/web/browser`` ``browser`` with a ``TEST_TIMEOUT_SECONDS`` timeout; skip
    them on the PostgreSQL pass."""
    here = Path(__file__).parent
    skip = pytest.mark.skip(reason="browser tests run once, in the SQLite pass")
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_SECONDS))
            if os.environ.get("MAILNODE_TEST_DB") == "postgres":
                item.add_marker(skip)


@dataclass
class Captured:
    """The messages the smarthost received: envelope sender, recipients and the parsed message."""

    mail_from: str
    rcpt_tos: list[str]
    message: Message


@dataclass
class Smarthost:
    """An aiosmtpd handler recording every message it accepts (``received``), and its port."""

    port: int = 0
    received: list[Captured] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        """Record the message and accept it."""
        self.received.append(Captured(envelope.mail_from, list(envelope.rcpt_tos),
                                      message_from_bytes(envelope.original_content or envelope.content)))
        return "250 2.0.0 Ok: queued"

    def to(self, address: str) -> list[Message]:
        """The messages addressed to ``address`` (envelope), oldest first."""
        return [c.message for c in self.received if address in c.rcpt_tos]


@pytest.fixture
def smarthost() -> Iterator[Smarthost]:
    """A real SMTP smarthost on loopback."""
    handler = Smarthost(port=free_port())
    controller = Controller(handler, hostname="127.0.0.1", port=handler.port)
    controller.start()
    yield handler
    controller.stop()


@pytest.fixture
def served_settings() -> dict[str, str]:
    """Extra ``MAILNODE_*`` settings for the served node (a test module overrides this fixture)."""
    return {}


@pytest.fixture
def served(tmp_path: Path, database_url: str, smarthost: Smarthost,
           served_settings: dict[str, str]) -> Iterator[Served]:
    """A started node whose transport is the smarthost, dispatching every second."""
    env = served_env(database_url, MAILNODE_DISPATCH_INTERVAL_SECONDS="1", MAILNODE_TRANSPORT="smtp",
                     MAILNODE_SMTP_RELAY=f"127.0.0.1:{smarthost.port}", MAILNODE_SMTP_TLS="none",
                     **served_settings)
    node = Served(tmp_path / "node", env)
    node.start()
    yield node
    node.stop()


@pytest.fixture
def base_url(served: Served) -> str:
    """The served node's web address, without a trailing slash."""
    return f"http://127.0.0.1:{served.http}"


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium under Playwright (one for the tests of this package).

    Package scope, not session: Playwright's sync API keeps its event loop running in the main thread until it
    stops, so a later test outside this package calling ``asyncio.run`` (tests/web's sweeper pass) would fail
    with "cannot be called from a running event loop" when both folders run in one pytest session."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def new_page(browser: Any) -> Iterator[Callable[[], Any]]:
    """A maker of pages, each in its own browser context (its own cookies), closed after the test."""
    contexts: list[Any] = []

    def make() -> Any:
        context = browser.new_context()
        context.set_default_timeout(PAGE_TIMEOUT_MS)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def keys_ready(page: Any) -> None:
    """Wait until the page now shown has bound its keys (``app.js`` marks ``<html data-keys-ready>`` once the
    deferred scripts ran): after a key or click that loads another page, its content can be on screen before
    its scripts run, and a key pressed then is lost."""
    page.locator("html[data-keys-ready='true']").wait_for(state="attached")


#: The axe-core impacts a page may not have (``assert_accessible``).
SERIOUS_IMPACTS = frozenset({"serious", "critical"})


def assert_accessible(page: Any) -> None:
    """Run axe-core (bundled by ``axe-playwright-python``, injected into the page, nothing fetched) on the page
    now shown and fail with each serious or critical violation: its rule, help text and the first nodes."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    bad = [v for v in results.response["violations"] if v.get("impact") in SERIOUS_IMPACTS]
    assert not bad, "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}" for v in bad)


def shoot(page: Any, name: str) -> None:
    """Save a full-page screenshot of the page now shown as ``<MAILNODE_SCREENSHOTS>/<name>.png`` when that
    setting names a folder (``MAILNODE_SCREENSHOTS=docs/img`` refreshes the docs' pictures); otherwise nothing."""
    folder = os.environ.get("MAILNODE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.fixture
def signed_in_page(new_page: Callable[[], Any], base_url: str) -> Callable[[str], Any]:
    """``signed_in_page(token)``: a new page signed in with ``token`` through the sign-in form, on ``/``."""

    def sign_in(token: str) -> Any:
        page = new_page()
        page.goto(f"{base_url}/signin")
        page.get_by_label("Your API token").fill(token)
        page.locator("#signin-token").click()
        page.wait_for_url(f"{base_url}/")
        return page

    return sign_in
