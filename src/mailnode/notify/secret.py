"""The node's secret for keyed hashes (verification codes): the setting, or a file in the data directory.

``settings.node_secret`` wins when set. Otherwise ``<data_dir>/node_secret`` is read; when absent it is
created once with ``budgets.NODE_SECRET_BYTES`` random bytes (hex, mode 0600), so a node initialised
without the setting still never hashes a code without a key. Losing the file only invalidates codes in
flight (a person asks for a new one); it protects nothing else.
"""

from __future__ import annotations

import os
import secrets

from mailnode import budgets
from mailnode.config import Settings

SECRET_FILE = "node_secret"


def node_secret(settings: Settings) -> bytes:
    """The secret bytes: ``settings.node_secret`` (UTF-8), else the data directory's file, created if absent."""
    if settings.node_secret:
        return settings.node_secret.encode("utf-8")
    path = settings.data_dir / SECRET_FILE
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="ascii").strip().encode("ascii")
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(budgets.NODE_SECRET_BYTES))
    return path.read_text(encoding="ascii").strip().encode("ascii")
