"""Run and inspect Alembic migrations programmatically (``mailnode init``/``serve`` upgrade to head).

The migration scripts live in ``mailnode/db/alembic/versions``; one revision per capability, generated
from the metadata and reviewed. ``tests/db/test_storage.py`` fails when the tables and the
migrations disagree.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

ALEMBIC_DIR = Path(__file__).parent / "alembic"
log = logging.getLogger("mailnode.migrate")


def alembic_config(url: str = "") -> Config:
    """An Alembic ``Config`` pointing at mailnode's scripts (and ``url`` when given)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(ALEMBIC_DIR))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(engine: Engine, revision: str = "heads") -> None:
    """Upgrade the database behind ``engine`` to ``revision`` (default: every head; idempotent).

    Capabilities built in parallel may add sibling revisions on one parent; ``heads`` applies them all.
    A database already at every head is left alone after one read of ``alembic_version`` (Alembic's own
    no-op upgrade would load every script first: most of a second on PostgreSQL, paid at each start).
    Otherwise it logs ``migrate.upgrading from=<revisions> to=<revisions>`` and, as each is applied,
    ``migrate.applied revision=<id> up`` (``alembic/env.py``).
    """
    with engine.begin() as conn:
        current = tuple(sorted(MigrationContext.configure(conn).get_current_heads()))
        if revision == "heads" and current == head_revisions():
            return
        target = ",".join(head_revisions()) if revision == "heads" else revision
        log.info("migrate.upgrading from=%s to=%s", ",".join(current) or "nothing", target)
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


@lru_cache(maxsize=1)
def head_revisions() -> tuple[str, ...]:
    """The newest revisions the scripts define (one per branch), sorted; read once per process (the
    scripts are part of the installed package and do not change under a running process)."""
    return tuple(sorted(ScriptDirectory.from_config(alembic_config()).get_heads()))


def current_revisions(engine: Engine) -> tuple[str, ...]:
    """The revisions the database is at (empty when it has never been migrated), sorted."""
    with engine.connect() as conn:
        return tuple(sorted(MigrationContext.configure(conn).get_current_heads()))
