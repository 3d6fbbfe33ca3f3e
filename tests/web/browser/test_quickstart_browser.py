"""The README's quick start, followed literally by a newcomer in a real Chromium: run what ``make run`` runs
(``mailnode quickstart`` then ``mailnode serve`` on a fresh data directory), open the address ``serve`` printed,
sign in with the token ``quickstart`` printed, mail the mailbox with the line ``quickstart`` printed (run as it
stands by a shell), see it arrive without a reload, open it, claim it, reply, see the hold count down, and find
the reply where ``quickstart`` said it would land. Only what the output and the pages say is used: no id, no
API call, no URL the newcomer was not shown (docs/quickstart.md, "Answer your first mail in the browser")."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from email import message_from_bytes
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.support.served import MAILNODE, free_port, served_env
from tests.web.browser.conftest import PAGE_TIMEOUT_MS

# Each expectation waits for its signal (the mail arriving after materialisation and a poll) up to this long.
expect.set_options(timeout=PAGE_TIMEOUT_MS)

#: Milliseconds the page may take to show the reply handed over: the hold window (15 s by default) plus a
#: dispatch sweep (5 s by default) and slack for the 2-core CI machine (a ceiling, not a timing claim).
HANDED_OVER_WITHIN_MS = 90_000


@pytest.fixture
def make_run(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """What ``make run`` runs, on free loopback ports over a fresh data directory with the embedded defaults
    (SQLite, the ``file`` transport): ``quickstart``'s output and ``serve``'s once it printed its address."""
    data = tmp_path / "node"
    env = served_env("", MAILNODE_HTTP=f"127.0.0.1:{free_port()}", MAILNODE_SMTP=f"127.0.0.1:{free_port()}")
    printed = subprocess.run([*MAILNODE, "quickstart", "--data-dir", str(data)], env=env, check=True,
                             capture_output=True, text=True).stdout
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([*MAILNODE, "serve", "--data-dir", str(data)], env=env, stdout=log,
                                stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            address = None
            while address is None and time.monotonic() < deadline and proc.poll() is None:
                found = re.search(r"^web inbox: (\S+)$", log_path.read_text(errors="replace"), re.MULTILINE)
                if found and _answers(found.group(1)):
                    address = found.group(1)
                time.sleep(0.2)
            assert address, f"serve printed no web inbox address:\n{log_path.read_text(errors='replace')[-3000:]}"
            yield printed, address
        finally:
            proc.terminate()
            proc.wait(30)


def _answers(address: str) -> bool:
    try:
        return httpx.get(f"{address}api/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_newcomer_answers_mail_with_only_what_quickstart_printed(make_run: tuple[str, str],
                                                                   new_page: Callable[[], Any]) -> None:
    printed, address = make_run
    found = re.search(r"token \(shown once\): (mn_\S+)", printed)
    assert found, printed
    token = found.group(1)
    mail_line = [line.strip() for line in printed.splitlines() if line.strip().startswith("printf ")]
    assert len(mail_line) == 1 and "curl" in mail_line[0], f"quickstart shows no line that mails the node:\n{printed}"
    outbox = re.search(r"written to (\S+)/$", printed, re.MULTILINE)
    assert outbox, f"quickstart does not say where the reply lands:\n{printed}"
    assert shutil.which("curl"), "the quick start mails the node with curl (docs/quickstart.md: you need curl)"

    # 1. open the printed address, sign in with the printed token.
    page = new_page()
    page.goto(address)
    page.get_by_label("Your API token").fill(token)
    page.get_by_role("button", name="Sign in with the token").click()
    expect(page.locator("#mailbox-name")).to_have_text("Support")
    # The empty queue says where mail comes from.
    expect(page.locator("tr.empty")).to_contain_text("New mail to support@example.test shows here")

    # 2. mail the mailbox with the printed line, as a shell runs it; it shows without a reload.
    subprocess.run(["bash", "-c", mail_line[0]], check=True, capture_output=True, timeout=30)
    row = page.get_by_role("link", name="Opening hours")
    expect(row).to_be_visible()
    expect(page.locator("[data-count=unassigned]")).to_have_text("1")

    # 3. open it, claim it, reply, send: held, counting down, with Cancel.
    row.click()
    expect(page.locator("#case-status")).to_have_text("Open, unassigned.")
    page.get_by_role("button", name="Claim").click()
    expect(page.locator("#case-status")).to_have_text("Open, held by you.")
    page.get_by_role("link", name="Reply", exact=True).click()
    expect(page.get_by_label("To", exact=True)).to_have_value("Bob <bob@example.net>")
    page.get_by_label("Your message").fill("Yes, from nine to twelve.")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#outcome")).to_contain_text("Held: it leaves in")
    expect(page.locator("#countdown")).to_be_visible()
    expect(page.get_by_role("button", name="Cancel this send")).to_be_visible()

    # 4. the hold window ends, the page follows the send, and the reply is where quickstart said.
    expect(page.locator("#outcome")).to_contain_text("Handed over", timeout=HANDED_OVER_WITHIN_MS)
    written = list(Path(outbox.group(1)).glob("*.eml"))
    assert len(written) == 1
    reply = message_from_bytes(written[0].read_bytes())
    assert reply["To"] == "Bob <bob@example.net>" and reply["Subject"] == "Re: Opening hours"
    assert "Yes, from nine to twelve." in reply.get_payload(decode=True).decode()
