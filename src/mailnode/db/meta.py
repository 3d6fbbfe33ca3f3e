"""The one ``MetaData`` every table is declared on, and the column types mailnode stores.

``UTCDateTime`` stores aware UTC datetimes on both SQLite (which has no time zone type: values are
stored naive in UTC and handed back aware) and PostgreSQL (``timestamp with time zone``). A naive
value on the way in is a programming error and raises ``ValueError``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, MetaData, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime on every backend."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Reject naive values; store UTC (naive on SQLite, aware on PostgreSQL)."""
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("UTCDateTime needs an aware datetime")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Hand back an aware UTC datetime."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class JSONText(TypeDecorator[Any]):
    """JSON stored as text (compact, sorted keys) so both backends store the same bytes."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        """Serialise to compact JSON text."""
        if value is None:
            return None
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        """Parse JSON text."""
        if value is None:
            return None
        return json.loads(value)
