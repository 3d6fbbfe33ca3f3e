"""``create_app(node)``: the one HTTP application of a node process, the API (``mailnode.api``) and the
web inbox's pages (``mailnode.web``) over the same services, with the error renderer.

It sits above both packages (issue 18: the pages wrap the API's error handlers, so ``web`` reads ``api``,
and only this module mounts the two together)."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from mailnode import __version__, web
from mailnode.api import (
    app_webhooks,
    apps,
    audit,
    butler_pauses,
    butler_release,
    butler_runs,
    butlers,
    conversations,
    directory,
    docs_pages,
    drafts,
    errors,
    governance,
    health,
    holds,
    mail,
    mailboxes,
    me,
    messages,
    metrics,
    provider,
    queue,
    receipts,
    responses,
    retention_settings,
    search,
    sends,
    supervised,
    suppressions,
    webhooks,
)
from mailnode.api.body_limit import RequestBodyLimit
from mailnode.api.deps import refuse_unknown_query
from mailnode.api.json_limit import JSONNestingLimit
from mailnode.node import Node


def create_app(node: Node) -> FastAPI:
    """Build the API over ``node``. OpenAPI at ``/openapi.json``, read at ``/docs`` and ``/redoc`` with every
    asset served by the node (``api.docs_pages``). Every route refuses query parameters it does not declare
    (``deps.refuse_unknown_query``)."""
    app = FastAPI(title="mailnode", version=__version__, docs_url=None, redoc_url=None,
                  dependencies=[Depends(refuse_unknown_query)])
    app.state.node = node
    # Starlette runs the last added middleware first: the size bound, then the nesting bound.
    app.add_middleware(JSONNestingLimit)
    app.add_middleware(RequestBodyLimit)
    errors.install(app)
    docs_pages.install(app)
    responses.install(app)
    for module in (health, directory, mailboxes, messages, audit, butlers, drafts, sends, webhooks, governance,
                   butler_release, butler_runs, butler_pauses, holds, retention_settings):
        app.include_router(module.router)
    for module in (me, apps, mail, provider, metrics, receipts, conversations, search, supervised, queue,
                   suppressions, app_webhooks):
        app.include_router(module.router)
    # The web inbox (pages at /) comes last: it wraps the error handlers above for page paths.
    web.install(app)
    return app
