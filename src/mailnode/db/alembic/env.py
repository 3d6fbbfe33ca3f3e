"""Alembic environment: runs migrations on the connection or URL mailnode hands it."""

from __future__ import annotations

from alembic import context

from mailnode.db.engine import make_engine
from mailnode.db.schema import metadata
from mailnode.search.tables import include_name

config = context.config


def run() -> None:
    """Run migrations online, on ``config.attributes['connection']`` when given, else on the URL."""
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                          include_name=include_name)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=metadata, render_as_batch=True,
                          include_name=include_name)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run()
