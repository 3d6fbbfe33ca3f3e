"""Signing in, in a real Chromium against a real node: with a token, with a code mailed through the
smarthost, and a page that another loopback origin frames renders nothing."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.support.served import Served, free_port
from tests.web.browser.conftest import Smarthost

HOME = "alex.home@remote.test"


def wait_for_mail(smarthost: Smarthost, address: str, count: int) -> str:
    """The body of the ``count``-th message to ``address`` once the smarthost has it (30 s at most)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        messages = smarthost.to(address)
        if len(messages) >= count:
            payload = messages[count - 1].get_payload(decode=True)
            return payload.decode() if isinstance(payload, bytes) else str(messages[count - 1].get_payload())
        time.sleep(0.1)
    raise AssertionError(f"no message {count} to {address} within 30 s: {len(smarthost.received)} received")


def verify_contact(served: Served, smarthost: Smarthost) -> None:
    """Alex verifies their contact address through the API, reading the code from the smarthost."""
    served.call("POST", "/api/me/contact-email", json={"address": HOME})
    code = re.search(r"verification code is (\d+)", wait_for_mail(smarthost, HOME, 1))
    assert code
    served.call("POST", "/api/me/contact-email/verify", json={"code": code.group(1)})


def test_sign_in_with_a_token(served: Served, signed_in_page: Callable[[str], Any]) -> None:
    page = signed_in_page(served.installed["token"])
    assert page.locator("#mailbox-name").is_visible()
    assert page.locator("#person-name").inner_text().strip() != ""
    assert page.get_by_role("button", name="Sign out everywhere").is_visible()


def test_sign_in_with_a_mailed_code(served: Served, smarthost: Smarthost, new_page: Callable[[], Any],
                                    base_url: str) -> None:
    verify_contact(served, smarthost)
    page = new_page()
    page.goto(f"{base_url}/")
    page.wait_for_url(re.compile(r"/signin\?next=/$"))
    page.get_by_label("Your verified contact address").fill(HOME)
    page.get_by_role("button", name="Mail me a code").click()
    page.locator("#code-sent").wait_for()
    code = re.search(r"sign-in code is (\d+)", wait_for_mail(smarthost, HOME, 2))
    assert code
    page.get_by_label("Sign-in code").fill(code.group(1))
    page.get_by_role("button", name="Sign in with the code").click()
    page.wait_for_url(f"{base_url}/")
    assert page.locator("#mailbox-name").is_visible()


@pytest.fixture
def other_origin(base_url: str) -> Iterator[str]:
    """A page on another loopback origin (another port) that frames the node's ``/`` in an iframe."""
    html = (f'<!doctype html><title>framer</title><iframe id="victim" src="{base_url}/" width="800" '
            f'height="600"></iframe>').encode()

    class Framer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Framer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_page_framed_by_another_origin_renders_nothing(served: Served, signed_in_page: Callable[[str], Any],
                                                          other_origin: str, base_url: str) -> None:
    # The person is signed in, so without the framing guard the frame would show their inbox.
    page = signed_in_page(served.installed["token"])
    assert page.locator("#mailbox-name").is_visible()
    with page.expect_response(f"{base_url}/") as framed:
        page.goto(other_origin)
    answer = framed.value
    assert answer.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    page.wait_for_load_state("load")
    frame = page.frame_locator("#victim")
    assert frame.locator("#mailbox-name").count() == 0
    # Chromium replaced the refused document with its own error page: nothing of the node's was rendered.
    (framed_document,) = [f for f in page.frames if f is not page.main_frame]
    assert not framed_document.url.startswith(base_url), framed_document.url
    # The same page opened directly (not framed) still renders: the frame was refused, not the page.
    assert httpx.get(f"{base_url}/signin").status_code == 200
