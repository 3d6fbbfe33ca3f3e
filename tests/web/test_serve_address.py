"""``mailnode serve`` prints the web inbox's address at start-up, and that address answers the sign-in page."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mailnode.server import web_address
from tests.support.served import Served, served_env


@pytest.mark.parametrize(("host", "port", "url"), [
    ("127.0.0.1", 8025, "http://127.0.0.1:8025/"),
    ("0.0.0.0", 8025, "http://127.0.0.1:8025/"),
    ("", 80, "http://127.0.0.1:80/"),
    ("::", 8025, "http://[::1]:8025/"),
    ("::1", 8025, "http://[::1]:8025/"),
    ("mail.example.test", 8443, "http://mail.example.test:8443/"),
])
def test_the_printed_address(host: str, port: int, url: str) -> None:
    assert web_address(host, port) == url


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[Served]:
    node = Served(tmp_path / "node", served_env(database_url))
    yield node
    node.stop()


@pytest.mark.slow
def test_serve_prints_the_web_address_and_it_opens_the_sign_in_page(served: Served) -> None:
    served.start()
    deadline = time.monotonic() + 30
    printed = None
    while printed is None and time.monotonic() < deadline:
        printed = re.search(r"web inbox: (http://\S+)", served.log_paths[-1].read_text(errors="replace"))
        time.sleep(0.1)
    assert printed, served.log_paths[-1].read_text(errors="replace")[-2000:]
    assert printed.group(1) == f"http://127.0.0.1:{served.http}/"
    r = httpx.get(printed.group(1), follow_redirects=True)
    assert r.status_code == 200 and "Sign in" in r.text and str(r.url).endswith("/signin?next=/")
