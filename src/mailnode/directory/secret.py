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
from mailnode.errors import MailnodeError

SECRET_FILE = "node_secret"


def node_secret(settings: Settings) -> bytes:
    """The secret bytes: ``settings.node_secret`` (UTF-8), else the data directory's file, created if absent.
    Raises ``E_NODE_SECRET_EMPTY`` (500) when the file exists but holds nothing.

    The file appears whole or not at all: the secret is written to a private temporary file that is then
    hard-linked into place (``os.link`` fails when the name exists), so a request racing the first one reads
    the winner's complete secret, never a half-written or empty one (which would hash a code under a key
    nobody will verify it with).
    """
    if settings.node_secret:
        return settings.node_secret.encode("utf-8")
    path = settings.data_dir / SECRET_FILE
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = settings.data_dir / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(8)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(secrets.token_hex(budgets.NODE_SECRET_BYTES))
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another request placed its secret first; that one is the node's
        finally:
            tmp.unlink()
    value = path.read_text(encoding="ascii").strip()
    if not value:
        raise MailnodeError(code="E_NODE_SECRET_EMPTY", what=f"The node's secret file {path} is empty.",
                            why="Verification codes are hashed under this secret; an empty key protects nothing.",
                            fix=f"Delete {path} (a new secret is made; codes in flight stop working) or set "
                                "MAILNODE_NODE_SECRET.", status=500, detail={"path": str(path)})
    return value.encode("ascii")
