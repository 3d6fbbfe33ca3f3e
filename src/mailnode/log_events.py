"""Log events a pure decision asks its caller to emit: a stable token, a level and the offending values.

Decisions (the provider breaker, verification codes) do not log themselves (they are pure); they return ``LogEvent``
values and the I/O layer writes them with the standard ``logging`` module at the level given, token first, so an
alert rule can match the token (spec/transactional.md §2: "logging at error with a stable token").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class LogLevel(StrEnum):
    """The level a ``LogEvent`` is written at; the names of ``logging``'s levels, lower-cased."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class LogEvent:
    """One line the caller must log.

    Attributes:
        token: stable dotted token (``provider.quota_reading_out_of_range``); alert rules match on it.
        level: ``LogLevel``.
        detail: the offending values (JSON-serialisable scalars), never a secret.
    """

    token: str
    level: LogLevel
    detail: Mapping[str, object] = field(default_factory=dict)
