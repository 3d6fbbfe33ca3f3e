"""The durable executor (DBOS): configuring, launching and destroying it for one process.

DBOS keeps its system database in SQLite under the data directory by default, and in the node's own
PostgreSQL when the node uses PostgreSQL (spec/dbos.md). Traps designed around: ``application_version``
is set to mailnode's version (a hash would strand waiting runs on any edit); every process gets its own
``executor_id`` (two processes with one id re-run each other's live workflows); SQLite's notification
polling interval is lowered so a release wakes a waiting run quickly.

Workflows reach the process's ``Node`` through ``current_node()``, set by ``launch``; this is the one
process-wide handle, because DBOS calls workflow functions without arguments of ours.
"""

from __future__ import annotations

import socket
import threading
from mailnode import __version__, budgets
from mailnode.errors import MailnodeError
from mailnode.node import Node

#: Modules that declare DBOS workflows; imported before launch so recovery finds every workflow.
WORKFLOW_MODULES = ("mailnode.ingress.workflows", "mailnode.outbound.workflows", "mailnode.butler.engine",
                    "mailnode.butler.trigger")

_lock = threading.Lock()
_node: Node | None = None
_launched = False


def system_database_url(node: Node) -> str:
    """The DBOS system database URL for ``node``: the setting, the node's PostgreSQL, or SQLite in the data dir."""
    s = node.settings
    if s.dbos_system_database_url:
        return s.dbos_system_database_url
    if s.is_postgres:
        return s.resolved_database_url
    return f"sqlite:///{(s.data_dir / 'dbos.sqlite').resolve()}"


def executor_id(node: Node, role: str = "serve") -> str:
    """This process's executor id: the setting, else ``<role>-<host>``.

    Stable across restarts, so a restarted ``serve`` recovers its own pending workflows; several
    processes sharing one database must each set ``MAILNODE_EXECUTOR_ID`` (spec/dbos.md trap 3).
    """
    return node.settings.executor_id or f"{role}-{socket.gethostname()}"


def launch(node: Node, role: str = "serve") -> None:
    """Configure and launch DBOS for this process; recovery of pending workflows starts here.

    Raises ``E_EXECUTOR_ALREADY_RUNNING`` (500) if this process already launched one.
    """
    global _node, _launched
    import importlib

    from dbos import DBOS, DBOSConfig

    for module in WORKFLOW_MODULES:
        importlib.import_module(module)
    with _lock:
        if _launched:
            raise MailnodeError(code="E_EXECUTOR_ALREADY_RUNNING", what="DBOS is already launched in this process.",
                                why="There is one durable executor per process.",
                                fix="Call runtime.shutdown() first.", status=500)
        config: DBOSConfig = {
            "name": "mailnode",
            "system_database_url": system_database_url(node),
            "application_version": __version__,
            "executor_id": executor_id(node, role),
            "notification_listener_polling_interval_sec": budgets.DBOS_NOTIFICATION_POLL_SECONDS,
        }
        _node = node
        DBOS(config=config)
        DBOS.launch()
        _launched = True


def current_node() -> Node:
    """The node this process launched DBOS with; ``E_EXECUTOR_NOT_RUNNING`` (500) before launch."""
    if _node is None:
        raise MailnodeError(code="E_EXECUTOR_NOT_RUNNING", what="No node is bound to the durable executor.",
                            why="runtime.launch() has not run in this process.",
                            fix="Start the node with mailnode serve.", status=500)
    return _node


def is_launched() -> bool:
    """True between ``launch`` and ``shutdown``."""
    return _launched


def shutdown() -> None:
    """Destroy DBOS (waits for in-flight steps to stop) and forget the node."""
    global _node, _launched
    from dbos import DBOS

    with _lock:
        if _launched:
            DBOS.destroy(destroy_registry=False)
        _launched = False
        _node = None
