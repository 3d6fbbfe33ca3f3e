"""Logging for a mailnode process: one format, written for a person by default and as JSON lines on request.

mailnode's own records are events, ``family.what key=value ...`` with an optional ``: words`` after them
(``materialise.quarantined receipt=rcpt_… code=E_… attempts=3``). ``setup`` installs one handler on the root
logger, on standard error, that writes every record the same way:

- ``text`` (``MAILNODE_LOG_FORMAT=text``, the default): ``2026-12-01T23:35:01Z INFO  materialise.scan found=0``;
  a library's record names its logger in brackets (``WARNING [dbos] …``).
- ``json`` (``MAILNODE_LOG_FORMAT=json``): one JSON object per line, ``{"time", "level", "logger", "event",
  <each key=value>, "detail", "message"}`` (``parse_event`` is the split).

Libraries (DBOS, Alembic, uvicorn, aiosmtpd's ``mail.log``, flufl.bounce, httpx) log at
``MAILNODE_LOG_LIBRARIES`` (default ``warning``): their start-up chatter (DBOS's 70 system-schema migration
lines and its hosted-console invitation, aiosmtpd's per-command lines, uvicorn's access lines, flufl.bounce's
"Running detector" per message) stays out of the log unless asked for with ``info`` or ``debug``. SQLAlchemy
stays at WARNING (``ALWAYS_WARNING_LOGGERS``).

A handled condition carries no traceback: a WARNING record's exception is written as one line (``type:
message``); an ERROR keeps its traceback (something went wrong that a person must read). flufl.bounce
catches its own detectors' exceptions (its Yale detector raises ``IndexError`` on a message without
``From:``) and logs each as an ERROR with a traceback; ``_HandledByLibrary`` turns that into a DEBUG line.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from enum import StrEnum
from typing import Any, TextIO


class LogFormat(StrEnum):
    """How records are written: ``text`` for a person, ``json`` for a log collector (one object a line)."""

    TEXT = "text"
    JSON = "json"


class LibraryLevel(StrEnum):
    """The lowest level at which third-party libraries' records are written (``MAILNODE_LOG_LIBRARIES``)."""

    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


#: Loggers of the libraries a node runs; each is set to the ``LibraryLevel`` asked for. ``mail.log`` is
#: aiosmtpd's; ``uvicorn.error`` is uvicorn's general logger despite its name.
LIBRARY_LOGGERS = ("dbos", "alembic", "uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi", "mail.log",
                   "flufl.bounce", "httpx", "httpcore", "asyncio", "multipart")
#: Loggers kept at WARNING whatever ``LibraryLevel`` is asked for: SQLAlchemy's INFO and DEBUG are every
#: statement and row (its ``echo``), not a library's account of itself.
ALWAYS_WARNING_LOGGERS = ("sqlalchemy",)

_EVENT = re.compile(r"(?P<event>[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+|E_[A-Z0-9_]+)(?=\s|:|$)")
_FIELD = re.compile(r"\s+(?P<key>[a-z_][a-z0-9_]*)=(?P<value>\S*?)(?=:(?:\s|$)|\s|$)")
#: The one handler ``setup`` installed, so a second ``setup`` replaces it rather than adding another.
_HANDLER_NAME = "mailnode"


def parse_event(message: str) -> dict[str, str]:
    """Split an event message into ``{"event", <key>: <value>..., "detail"}`` (pure).

    ``"send.claim_lost manifest=snd_1 token=7: lost"`` becomes ``{"event": "send.claim_lost", "manifest":
    "snd_1", "token": "7", "detail": "lost"}``. A message that does not start with an event name (a library's)
    becomes ``{"detail": message}``. Keys that would shadow ``time``, ``level``, ``logger``, ``event``,
    ``detail`` or ``message`` are kept with a trailing underscore."""
    found = _EVENT.match(message)
    if found is None:
        return {"detail": message}
    out: dict[str, str] = {"event": found.group("event")}
    rest = message[found.end():]
    while (field := _FIELD.match(rest)) is not None:
        key = field.group("key")
        out[f"{key}_" if key in _RESERVED else key] = field.group("value")
        rest = rest[field.end():]
    rest = rest.strip()
    if rest.startswith(":"):
        rest = rest[1:].strip()
    if rest:
        out["detail"] = rest
    return out


_RESERVED = frozenset({"time", "level", "logger", "event", "detail", "message", "exception"})


def _timestamp(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created))


def _exception_line(record: logging.LogRecord) -> str:
    """``Type: message`` of the record's exception (empty without one)."""
    if not record.exc_info or record.exc_info[1] is None:
        return ""
    exc = record.exc_info[1]
    return f"{type(exc).__name__}: {exc}"


def _is_mailnode(record: logging.LogRecord) -> bool:
    return record.name == "mailnode" or record.name.startswith("mailnode.")


class TextFormatter(logging.Formatter):
    """``<UTC time> <LEVEL> [<library>] <message>``; a WARNING's exception as one line, an ERROR's traceback."""

    def format(self, record: logging.LogRecord) -> str:
        """One record as text (several lines only for an ERROR's traceback)."""
        message = record.getMessage()
        origin = "" if _is_mailnode(record) else f"[{record.name.split('.')[0]}] "
        line = f"{_timestamp(record)} {record.levelname:<7} {origin}{message}"
        if record.exc_info and record.levelno >= logging.ERROR:
            return f"{line}\n{self.formatException(record.exc_info)}"
        if record.exc_info:
            return f"{line} ({_exception_line(record)})"
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (a traceback is the ``exception`` field's string)."""

    def format(self, record: logging.LogRecord) -> str:
        """One record as a JSON object without newlines."""
        message = record.getMessage()
        out: dict[str, Any] = {"time": _timestamp(record), "level": record.levelname.lower(),
                               "logger": record.name}
        out.update(parse_event(message) if _is_mailnode(record) else {})
        out["message"] = message
        if record.exc_info:
            out["exception"] = (self.formatException(record.exc_info) if record.levelno >= logging.ERROR
                                else _exception_line(record))
        return json.dumps(out, ensure_ascii=False, default=str)


class _HandledByLibrary(logging.Filter):
    """flufl.bounce's "Exception in detector" ERROR (a detector it ran raised and it carried on) becomes a
    DEBUG record naming the exception in one line; dropped unless libraries are logged at ``debug``."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the detector-failure record; keep every other one as it is."""
        if not record.getMessage().startswith("Exception in detector"):
            return True
        detail = _exception_line(record)
        record.msg, record.args = f"{record.getMessage()}: {detail} (handled by flufl.bounce)", None
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def library_level(libraries: LibraryLevel | str) -> int:
    """The ``logging`` level number for ``libraries`` (pure)."""
    return int(logging.getLevelName(LibraryLevel(libraries).value.upper()))


def setup(log_format: LogFormat | str = LogFormat.TEXT, libraries: LibraryLevel | str = LibraryLevel.WARNING,
          stream: TextIO | None = None) -> None:
    """Route every record of this process through one handler on ``stream`` (default: standard error) in
    ``log_format``; mailnode
    at INFO, the ``LIBRARY_LOGGERS`` at ``libraries``. Idempotent: a second call replaces the handler.

    DBOS installs a console handler of its own (another format) on the ``dbos`` logger unless that logger
    already has one, and sets that logger's level from its configuration: a ``NullHandler`` here keeps its
    records flowing to the root handler, and ``runtime.launch`` passes ``libraries`` as DBOS's log level."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if LogFormat(log_format) is LogFormat.JSON else TextFormatter())
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    level = library_level(libraries)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(level)
    for name in ALWAYS_WARNING_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    dbos = logging.getLogger("dbos")
    if not dbos.handlers:
        dbos.addHandler(logging.NullHandler())
    dbos.propagate = True
    flufl = logging.getLogger("flufl.bounce")
    if not any(isinstance(f, _HandledByLibrary) for f in flufl.filters):
        flufl.addFilter(_HandledByLibrary())
