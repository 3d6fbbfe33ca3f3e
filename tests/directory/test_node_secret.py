"""The node's secret file appears whole or not at all, however many requests race to create it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mailnode.config import Settings
from mailnode.directory.secret import SECRET_FILE, node_secret
from mailnode.errors import MailnodeError


def _race(settings: Settings, threads: int) -> list[bytes]:
    start = threading.Barrier(threads)
    seen: list[bytes] = []

    def read() -> None:
        start.wait()
        seen.append(node_secret(settings))

    running = [threading.Thread(target=read) for _ in range(threads)]
    for t in running:
        t.start()
    for t in running:
        t.join()
    return seen


def test_requests_racing_to_create_the_secret_all_get_the_same_whole_secret(tmp_path: Path) -> None:
    for attempt in range(20):
        settings = Settings(data_dir=tmp_path / f"node{attempt}")
        seen = _race(settings, 8)
        assert len(seen) == 8 and len(set(seen)) == 1 and len(seen[0]) > 0, seen
        assert sorted(p.name for p in settings.data_dir.iterdir()) == [SECRET_FILE]


def test_an_empty_secret_file_is_refused_not_used(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "node")
    settings.data_dir.mkdir()
    (settings.data_dir / SECRET_FILE).write_text("")
    with pytest.raises(MailnodeError) as refused:
        node_secret(settings)
    assert refused.value.code == "E_NODE_SECRET_EMPTY"


def test_the_setting_wins_over_the_file(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "node", node_secret="configured")
    assert node_secret(settings) == b"configured"
