"""``/docs`` and ``/redoc`` load nothing from another host (issue 20): every script, style sheet, icon and
image their HTML references is a path of the node itself and answers 200, and Swagger UI's validator badge,
which would send the document to validator.swagger.io, is off. The node runs offline; a CDN page is blank."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

import pytest

#: The attributes through which a page loads something: ``<script src>``, ``<link href>``, ``<img src>`` and
#: ReDoc's ``<redoc spec-url>``.
_LOADS = {("script", "src"), ("link", "href"), ("img", "src"), ("redoc", "spec-url")}


class _References(HTMLParser):
    """Collects the URLs a page loads (``_LOADS``)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [v for k, v in attrs if (tag, k) in _LOADS and v is not None]


def _references(html: str) -> list[str]:
    parser = _References()
    parser.feed(html)
    return parser.urls


@pytest.mark.parametrize(("page", "at_least"), [("/docs", 3), ("/redoc", 3)])
def test_a_documentation_page_loads_only_the_node_s_own_assets(api: Any, page: str, at_least: int) -> None:
    r = api.get(page)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), r.text
    urls = _references(r.text)
    assert len(urls) >= at_least, urls
    for url in urls:
        parts = urlsplit(url)
        assert (parts.scheme, parts.netloc) == ("", "") and url.startswith("/"), f"{page} loads {url} from elsewhere"
        asset = api.get(url)
        assert asset.status_code == 200, (page, url, asset.status_code)
        assert asset.content, url
    # Nor does its inline script name another host (FastAPI's defaults: cdn.jsdelivr.net, Google Fonts).
    assert "http:" not in r.text and "https:" not in r.text, r.text


def test_swagger_ui_s_validator_badge_is_off(api: Any) -> None:
    assert '"validatorUrl": null' in api.get("/docs").text


def test_the_oauth2_redirect_page_is_served(api: Any) -> None:
    r = api.get("/docs/oauth2-redirect")
    assert r.status_code == 200 and "<script" in r.text and "src=" not in r.text
