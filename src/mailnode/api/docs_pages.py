"""The OpenAPI reference pages, ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), served with every asset from
the node itself: the node runs offline, so a page that loaded its scripts from a CDN would be blank.

The scripts, the style sheet and the icon are the files the ``fastapi-offline`` package ships
(``fastapi_offline/static``), mounted at ``ASSETS_PATH``; the pages are FastAPI's own (``get_swagger_ui_html``,
``get_redoc_html``) pointed at them, without ReDoc's Google Fonts link (FastAPI's documented recipe for
self-hosted documentation). ``create_app`` builds its app with ``docs_url=None, redoc_url=None`` and calls
``install``.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

#: Where the pages' assets are served from (a path of this node, never another host).
ASSETS_PATH = "/docs-assets"

#: The files served under ``ASSETS_PATH``: Swagger UI's bundle and style sheet, ReDoc's standalone bundle and
#: the icon, as installed with the ``fastapi-offline`` package.
ASSETS_DIR = Path(str(files("fastapi_offline") / "static"))

#: Swagger UI's own setting that would reach another host: its validator badge fetches
#: validator.swagger.io with the document; off.
_SWAGGER_UI = {"validatorUrl": None}


def install(app: FastAPI) -> None:
    """Add ``/docs``, its OAuth2 redirect page, ``/redoc`` and the ``ASSETS_PATH`` mount to ``app``.

    ``app`` must have been built with ``docs_url=None`` and ``redoc_url=None`` (else FastAPI's CDN pages
    would answer first). Paths are prefixed with the request's ``root_path`` (a node behind a proxy path).
    """
    app.mount(ASSETS_PATH, StaticFiles(directory=ASSETS_DIR), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        """Swagger UI over the node's OpenAPI document, its assets from ``ASSETS_PATH``."""
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}{openapi_url}", title=f"{app.title} - Swagger UI",
                                   oauth2_redirect_url=f"{root}{oauth2_redirect_url}",
                                   swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
                                   swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
                                   swagger_ui_parameters={**(app.swagger_ui_parameters or {}), **_SWAGGER_UI})

    @app.get(oauth2_redirect_url, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        """Swagger UI's OAuth2 redirect page (self-contained)."""
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        """ReDoc over the node's OpenAPI document, its script from ``ASSETS_PATH`` and no web fonts."""
        root = request.scope.get("root_path", "")
        return get_redoc_html(openapi_url=f"{root}{openapi_url}", title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{root}{ASSETS_PATH}/redoc.standalone.js",
                              redoc_favicon_url=f"{root}{ASSETS_PATH}/favicon.png", with_google_fonts=False)
