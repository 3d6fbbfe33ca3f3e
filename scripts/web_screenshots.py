"""Take the web inbox's screenshots for the docs (docs/img/): the sign-in page, the queue, a conversation, the
composer and a held send (docs/quickstart.md walks through them in this order).

Run from the repository root: ``PYTHONPATH=src:. .venv/bin/python scripts/web_screenshots.py``. It starts a real
``mailnode serve`` over a fresh data directory (SQLite, the ``file`` transport), feeds it mail over SMTP (a
corpus message and a small HTML newsletter), signs in with the printed token in Debian's headless Chromium
(``/usr/bin/chromium``, never a downloaded browser), claims a case, sends a reply under a hold window, adds a
note, and saves full-page screenshots. The queue is shot only when the node serves one (``/`` lists mail).
"""

from __future__ import annotations

import json
import re
import smtplib
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.corpus import corpus
from tests.support.served import Served, served_env

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
OUT = Path("docs/img")
#: The screenshots' viewport, CSS pixels (a laptop screen).
VIEWPORT = {"width": 1280, "height": 1500}


def feed(served: Served, raw: bytes, mail_from: str) -> dict[str, object]:
    """Deliver ``raw`` over SMTP and wait for the message to be listed."""
    raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    mbx = served.installed["mailbox_id"]
    before = len(served.call("GET", f"/api/mailboxes/{mbx}/messages")["messages"])
    with smtplib.SMTP("127.0.0.1", served.smtp) as s:
        s.sendmail(mail_from, ["support@example.test"], raw)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = served.call("GET", f"/api/mailboxes/{mbx}/messages")["messages"]
        if len(got) > before:
            return dict(got[0])
        time.sleep(0.1)
    raise SystemExit("the message was not listed in time")


def main() -> int:
    """Take the screenshots; 0 when they were written."""
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = served_env(f"sqlite:///{tmp}/node.db", MAILNODE_DISPATCH_INTERVAL_SECONDS="1")
        served = Served(Path(tmp) / "node", env)
        served.start()
        try:
            served.call("PATCH", f"/api/mailboxes/{served.installed['mailbox_id']}",
                        json={"hold_window_seconds": 300})
            raw = (corpus() / "malformed/content_transfer_encoding_text-html.eml").read_bytes()
            raw = re.sub(rb"(?m)^To: .*$", b"To: support@example.test", raw, count=1)
            first = feed(served, raw, "abhijit.862153drinnan@datavalet.com")
            news = (b"From: Store News <news@shop.example>\nTo: support@example.test\nSubject: Your order has "
                    b"shipped\nMessage-ID: <ship1@shop.example>\nMIME-Version: 1.0\nContent-Type: text/plain\n\n"
                    b"Hello,\n\nyour order 42 left our warehouse today.\n")
            feed(served, news, "news@shop.example")
            base = f"http://127.0.0.1:{served.http}"
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
                page = browser.new_context(viewport=VIEWPORT).new_page()
                page.goto(f"{base}/")
                page.wait_for_url(re.compile(r"/signin"))
                page.get_by_label("Your API token").fill(served.installed["token"])
                page.screenshot(path=str(OUT / "signin.png"),
                                clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": 520})
                page.locator("#signin-token").click()
                page.wait_for_url(f"{base}/")
                if page.locator("text=Your order has shipped").count():
                    page.screenshot(path=str(OUT / "queue.png"), full_page=True)
                conv = first["conversation_id"]
                page.goto(f"{base}/conversations/{conv}")
                page.locator("#claim").click()
                page.wait_for_selector("text=Open, held by you.")
                page.get_by_role("link", name="Reply", exact=True).last.click()
                page.get_by_label("Your message").fill("Thank you for writing. We do not offer refinancing; "
                                                       "this mailbox answers questions about orders.")
                page.locator("#files").set_input_files(files=[{"name": "terms.txt", "mimeType": "text/plain",
                                                               "buffer": b"Our terms."}])
                page.screenshot(path=str(OUT / "composer.png"), full_page=True)
                page.locator("#send").click()
                page.wait_for_url(re.compile(r"/sends/snd_"))
                page.wait_for_selector("#countdown")
                page.screenshot(path=str(OUT / "send-held.png"), full_page=True)
                page.goto(f"{base}/conversations/{conv}")
                page.get_by_label("Internal note (never sent)").fill("Looks like spam; answered once, closing.")
                page.get_by_role("button", name="Add note").click()
                page.wait_for_selector(".item.note")
                page.goto(f"{base}/conversations/{conv}")
                page.frame_locator("iframe.mail-html").locator("body").wait_for()
                page.wait_for_load_state("load")
                # The viewport only: Chromium leaves a sandboxed (separate-origin) frame blank in full-page shots.
                page.screenshot(path=str(OUT / "conversation.png"))
                browser.close()
        finally:
            served.stop()
    print(json.dumps(sorted(p.name for p in OUT.glob("*.png"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
