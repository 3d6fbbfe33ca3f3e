"""Alembic environment: runs migrations on the connection or URL mailnode hands it."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

from alembic import context
from alembic.runtime.migration import MigrationContext, MigrationInfo

from mailnode.db.engine import make_engine
from mailnode.schema import metadata
from mailnode.schema.search import include_name

config = context.config
log = logging.getLogger("mailnode.migrate")


def _applied(ctx: MigrationContext, step: MigrationInfo, heads: Collection[Any], run_args: Mapping[str, Any]) -> None:
    """Alembic's ``on_version_apply`` hook: one ``migrate.applied`` line per revision, as it is applied."""
    log.info("migrate.applied revision=%s %s", step.up_revision_id if step.is_upgrade else step.down_revision_ids,
             "up" if step.is_upgrade else "down")


def run() -> None:
    """Run migrations online, on ``config.attributes['connection']`` when given, else on the URL."""
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                          include_name=include_name, on_version_apply=_applied)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=metadata, render_as_batch=True,
                          include_name=include_name, on_version_apply=_applied)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run()
