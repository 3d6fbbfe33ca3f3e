"""DBOS's system database on SQLite runs in WAL once the node has launched over it (issue 19): in the rollback
journal every workflow and step row held the file's one lock against every reader."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mailnode import runtime, wiring


def test_a_launch_over_sqlite_leaves_the_system_database_in_wal(node: Any) -> None:
    url = runtime.system_database_url(node)
    if not url.startswith("sqlite:///"):
        pytest.skip("the system database is PostgreSQL here; WAL is SQLite's")
    wiring.launch(node, role="test")
    try:
        conn = sqlite3.connect(Path(url.removeprefix("sqlite:///")))
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            conn.close()
    finally:
        runtime.shutdown()

